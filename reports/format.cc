#include "reports/format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>

namespace cpscale::reports {

using metrics::Figure;
using metrics::labelValue;

std::string figureKey(std::string_view name, const metrics::Labels& labels) {
  std::string out(name);
  if (labels.empty()) return out;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].name + "=" + labels[i].value;
  }
  out += '}';
  return out;
}

std::string figureKey(const Figure& f) { return figureKey(f.name, f.labels); }

namespace {

std::string printf1(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Three significant digits at most, no exponent, no trailing ".0" on integers: the
// precision a reader compares runs with, not the precision the data has.
std::string plain(double v) {
  double a = std::fabs(v);
  if (a == std::round(a) && a < 1000) return printf1("%.0f", v);
  if (a >= 100) return printf1("%.0f", v);
  if (a >= 10) return printf1("%.1f", v);
  if (a >= 1) return printf1("%.2f", v);
  if (a >= 0.01) return printf1("%.3f", v);
  return printf1("%.3g", v);
}

// 1.2k, 35.1k, 351k, 1.20M: decimal prefixes for counts and rates.
std::string metric(double v) {
  static constexpr std::array<std::pair<double, const char*>, 4> kPrefixes{
      {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}};
  double a = std::fabs(v);
  for (auto [scale, prefix] : kPrefixes) {
    if (a >= scale * 0.9995) {
      double s = v / scale;
      return printf1(std::fabs(s) >= 99.95 ? "%.0f" : "%.1f", s) + prefix;
    }
  }
  return plain(v);
}

std::string grouped(double v) {
  std::string digits = printf1("%.0f", std::fabs(v));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string bytes(double v) {
  static constexpr std::array<const char*, 5> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB"};
  double a = std::fabs(v);
  if (a < 1024) return printf1("%.0f", v) + " B";
  double s = v;
  std::size_t i = 0;
  for (s /= 1024; std::fabs(s) >= 1023.95 && i + 1 < kUnits.size(); s /= 1024) ++i;
  return printf1(std::fabs(s) >= 99.95 ? "%.0f" : "%.1f", s) + " " + kUnits[i];
}

std::string duration(double s) {
  double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-3) return printf1("%.1f", s * 1e6) + " µs";
  if (a < 1) return printf1(a < 0.09995 ? "%.1f" : "%.0f", s * 1e3) + " ms";
  if (a < 100) return printf1("%.2f", s) + " s";
  return printf1("%.0f", s) + " s";
}

}  // namespace

std::string formatValue(double v, std::string_view unit) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (unit == "1/s") return metric(v) + "/s";
  if (unit == "bytes") return bytes(v);
  if (unit == "s") return duration(v);
  if (unit == "ratio") return printf1("%.1f", v * 100) + " %";
  // Counts read exactly while they fit a glance: 1,000 nodes and 1,002 leases must not
  // both print as "1.0k".
  if ((unit == "objects" || unit == "count") && std::fabs(v) < 1e6 && v == std::round(v)) return grouped(v);
  if (unit == "objects" || unit == "count") return metric(v);
  return plain(v);
}

std::string formatFigureValue(const Figure& f) {
  if (!f.value) return "unavailable (" + f.unavailableReason + ")";
  return formatValue(*f.value, f.unit);
}

std::string formatElapsed(double seconds) {
  long total = std::lround(seconds);
  std::string sign = total < 0 ? "-" : "";
  total = std::labs(total);
  long h = total / 3600, m = (total % 3600) / 60, s = total % 60;
  char buf[48];
  if (h > 0) std::snprintf(buf, sizeof buf, m ? "%s%ldh%02ldm" : "%s%ldh", sign.c_str(), h, m);
  else if (m > 0) std::snprintf(buf, sizeof buf, s ? "%s%ldm%02lds" : "%s%ldm", sign.c_str(), m, s);
  else std::snprintf(buf, sizeof buf, "%s%lds", sign.c_str(), s);
  return buf;
}

std::string_view toString(Axis a) {
  switch (a) {
    case Axis::kNode: return "node-bound";
    case Axis::kChurn: return "churn-bound";
    case Axis::kState: return "state-bound";
  }
  return "?";
}

std::string_view describe(Axis a) {
  switch (a) {
    case Axis::kNode: return "every kubelet reporting in: lease renewals and node status writes";
    case Axis::kChurn: return "short-lived objects created, changed and deleted: write QPS and latency per resource";
    case Axis::kState: return "many mostly idle objects: resident bytes per kube-apiserver replica";
  }
  return "";
}

bool isNodeResource(std::string_view resource) {
  return resource == "leases" || resource == "leases.coordination.k8s.io" || resource == "nodes" ||
         resource.starts_with("nodes/");
}

std::string unitOf(std::span<const Figure> figures, std::string_view name) {
  for (const Figure& f : figures)
    if (f.name == name) return f.unit;
  return "";
}

namespace {

using Pred = std::function<bool(const Figure&)>;

void addAll(std::vector<const Figure*>& out, std::span<const Figure> figures, std::string_view name,
            const Pred& pred = nullptr) {
  for (const Figure& f : figures)
    if (f.name == name && (!pred || pred(f))) out.push_back(&f);
}

// The largest `cap` figures of a family (unavailable ones after the measured ones, in
// the order they came), counting the rest in `omitted`.
void addLargest(AxisFigures& out, std::span<const Figure> figures, std::string_view name, const Pred& pred,
                std::size_t cap) {
  std::vector<const Figure*> found;
  addAll(found, figures, name, pred);
  std::stable_sort(found.begin(), found.end(), [](const Figure* a, const Figure* b) {
    if (a->available() != b->available()) return a->available();
    return a->available() && *a->value > *b->value;
  });
  if (found.size() > cap) {
    out.omitted += found.size() - cap;
    found.resize(cap);
  }
  out.figures.insert(out.figures.end(), found.begin(), found.end());
}

bool hasLabels(const Figure& f) { return !f.labels.empty(); }

std::string_view firstApiserver(std::span<const Figure> figures) {
  for (const Figure& f : figures)
    if (f.name == "apiserver_objects_total" || f.name == "apiserver_objects") {
      std::string_view a = labelValue(f.labels, "apiserver");
      if (!a.empty()) return a;
    }
  return "";
}

}  // namespace

AxisFigures axisFigures(std::span<const Figure> figures, Axis axis, std::size_t cap) {
  AxisFigures out;
  auto resource = [](const Figure& f) { return labelValue(f.labels, "resource"); };
  // A family that could not be measured at all is one unlabelled unavailable figure:
  // keep it, so the headline says why instead of leaving the row out.
  auto familyUnavailable = [](const Figure& f) { return f.labels.empty() && !f.available(); };
  auto leasePut = [&](const Figure& f) {
    std::string_view r = resource(f);
    return (r == "leases" || r == "leases.coordination.k8s.io") && labelValue(f.labels, "verb") == "PUT" &&
           labelValue(f.labels, "measured_from") != "sent";
  };
  switch (axis) {
    case Axis::kNode: {
      addLargest(out, figures, "write_qps", [&](const Figure& f) { return hasLabels(f) && isNodeResource(resource(f)); },
                 cap);
      addAll(out.figures, figures, "lease_write_share");
      addAll(out.figures, figures, "etcd_lease_proposal_share");
      addAll(out.figures, figures, "client_latency_p99", leasePut);
      addAll(out.figures, figures, "server_latency_p99",
             [&](const Figure& f) { return leasePut(f) || familyUnavailable(f); });
      // Every replica reports the same count: one is enough for the headline.
      std::string_view first = firstApiserver(figures);
      addAll(out.figures, figures, "apiserver_objects", [&](const Figure& f) {
        return resource(f) == "nodes" && labelValue(f.labels, "apiserver") == first;
      });
      break;
    }
    case Axis::kChurn: {
      addAll(out.figures, figures, "write_qps", [](const Figure& f) { return f.labels.empty(); });
      AxisFigures writes;
      addLargest(writes, figures, "write_qps",
                 [&](const Figure& f) { return hasLabels(f) && !isNodeResource(resource(f)); }, cap);
      out.omitted += writes.omitted;
      out.figures.insert(out.figures.end(), writes.figures.begin(), writes.figures.end());
      // Latency of exactly the (resource, verb) pairs shown above.
      auto shown = [&](const Figure& f) {
        return std::any_of(writes.figures.begin(), writes.figures.end(), [&](const Figure* w) {
          return resource(*w) == resource(f) && labelValue(w->labels, "verb") == labelValue(f.labels, "verb");
        });
      };
      addAll(out.figures, figures, "client_latency_p99",
             [&](const Figure& f) { return labelValue(f.labels, "measured_from") != "sent" && shown(f); });
      addAll(out.figures, figures, "server_latency_p99", shown);
      break;
    }
    case Axis::kState: {
      for (const char* family : {"apiserver_heap_inuse_bytes", "apiserver_rss_bytes"}) {
        addAll(out.figures, figures, family);
        addAll(out.figures, figures, std::string(family) + "_all_replicas");
        addAll(out.figures, figures, std::string(family) + "_all_replicas_peak");
      }
      addAll(out.figures, figures, "bytes_per_object");
      addAll(out.figures, figures, "bytes_per_object_r2");
      addAll(out.figures, figures, "bytes_per_object_all_replicas");
      std::string_view first = firstApiserver(figures);
      auto ofFirst = [&](const Figure& f) { return f.labels.empty() || labelValue(f.labels, "apiserver") == first; };
      addAll(out.figures, figures, "apiserver_objects_total", ofFirst);
      addLargest(out, figures, "apiserver_objects", ofFirst, cap);
      break;
    }
  }
  return out;
}

std::vector<const Figure*> generatorHealthFigures(std::span<const Figure> figures) {
  std::vector<const Figure*> out;
  for (const char* n : {"schedule_lag_p50", "schedule_lag_p99", "schedule_lag_max", "generator_limited",
                        "generator_limited_by_schedule", "generator_limited_by_concurrency"})
    addAll(out, figures, n);
  return out;
}

std::string xmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

}  // namespace cpscale::reports
