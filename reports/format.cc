#include "reports/format.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

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

std::string shortKey(const Figure& f, bool keepGroup) {
  std::string out = f.name;
  std::string labels;
  for (const auto& l : f.labels) {
    if (l.name == "group" && !keepGroup) continue;
    std::string key = l.name == "measured_from" ? "from" : l.name;
    std::string value = l.value;
    if (l.name == "group" && value.ends_with(".k8s.io")) value.resize(value.size() - 7);
    if (l.name == "group" && value.empty()) value = "core";
    // kind=<group>/<resource>: the group goes where the group label would.
    if (l.name == "kind" && !keepGroup && value.find('/') != std::string::npos)
      value = value.substr(value.rfind('/') + 1);
    labels += (labels.empty() ? "" : ",") + key + "=" + value;
  }
  if (!labels.empty()) out += "{" + labels + "}";
  return out;
}

std::vector<std::string> ambiguousResourceNames(std::span<const Figure> figures) {
  std::map<std::string, std::set<std::string>> groups;
  for (const Figure& f : figures) {
    std::string r(labelValue(f.labels, "resource"));
    bool hasGroup = std::any_of(f.labels.begin(), f.labels.end(), [](const auto& l) { return l.name == "group"; });
    if (!r.empty() && hasGroup) groups[r].insert(std::string(labelValue(f.labels, "group")));
  }
  std::vector<std::string> out;
  for (const auto& [r, gs] : groups)
    if (gs.size() > 1) out.push_back(r);
  return out;
}

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
  if (!unit.empty()) return formatKnobValue(v, unit);
  return plain(v);
}

std::string formatGrouped(double v) {
  if (!std::isfinite(v)) return formatValue(v, "");
  return std::fabs(v) >= 99.5 ? grouped(v) : plain(v);
}

std::string formatKnobValue(double v, std::string_view unit) {
  std::string n;
  if (std::isnan(v))
    n = "NaN";
  else if (std::isinf(v))
    n = v > 0 ? "+Inf" : "-Inf";
  else if (std::fabs(v) < 1e6 && v == std::round(v))
    n = grouped(v);
  else
    n = std::fabs(v) >= 1e6 ? metric(v) : plain(v);
  return unit.empty() ? n : n + " " + std::string(unit);
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
  if (h > 0)
    std::snprintf(buf, sizeof buf, m ? "%s%ldh%02ldm" : "%s%ldh", sign.c_str(), h, m);
  else if (m > 0)
    std::snprintf(buf, sizeof buf, s ? "%s%ldm%02lds" : "%s%ldm", sign.c_str(), m, s);
  else
    std::snprintf(buf, sizeof buf, "%s%lds", sign.c_str(), s);
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

std::optional<Axis> axisNamed(std::string_view name) {
  for (Axis a : kAllAxes)
    if (toString(a).substr(0, toString(a).find('-')) == name) return a;
  return std::nullopt;
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

std::vector<const Figure*> generatorHealthFigures(std::span<const Figure> figures) {
  std::vector<const Figure*> out;
  for (const char* n : {"schedule_lag_p50", "schedule_lag_p99", "schedule_lag_max", "generator_limited",
                        "generator_limited_by_schedule", "generator_limited_by_concurrency", "generator_cpu_cores",
                        "generator_rss_bytes", "generator_rss_bytes_peak"})
    for (const Figure& f : figures)
      if (f.name == n) out.push_back(&f);
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
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

}  // namespace cpscale::reports
