#include "sim/metrics/client_figures.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace cpscale::metrics {

namespace {

Labels sorted(Labels l) {
  std::sort(l.begin(), l.end(), [](const Label& a, const Label& b) { return a.name < b.name; });
  return l;
}

double nsToSeconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

void quantileFigures(std::vector<Figure>& out, const std::string& prefix, const engine::HdrHistogram& h,
                     const Labels& labels) {
  const std::pair<const char*, double> qs[] = {{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99.9", 0.999}};
  for (const auto& [suffix, q] : qs) {
    std::string name = prefix + suffix;
    if (h.count() == 0)
      out.push_back(Figure::unavailable(name, labels, "s", Source::kClient, "no samples"));
    else
      out.push_back(Figure::measured(name, labels, nsToSeconds(h.quantile(q)), "s", Source::kClient));
  }
  if (h.count() == 0)
    out.push_back(Figure::unavailable(prefix + "max", labels, "s", Source::kClient, "no samples"));
  else
    out.push_back(Figure::measured(prefix + "max", labels, nsToSeconds(h.max()), "s", Source::kClient));
}

}  // namespace

std::vector<Figure> clientLatencyFigures(const load::RequestStats& stats) {
  // Merge outcome classes per (resource, verb).
  std::map<std::pair<std::string, std::string>, load::RequestLatency> merged;
  for (const auto& [key, lat] : stats.latency()) {
    // A watch's "latency" is how long the stream stayed open: not a response time.
    if (key.verb == "WATCH") continue;
    auto& m = merged[{key.resource, key.verb}];
    if (key.outcome == load::OutcomeClass::kTransportError) continue;  // no server latency to speak of
    m.fromScheduled.merge(lat.fromScheduled);
    m.fromSent.merge(lat.fromSent);
  }
  std::vector<Figure> out;
  for (const auto& [rv, lat] : merged) {
    for (const auto& [from, h] : {std::pair<const char*, const engine::HdrHistogram*>{"scheduled", &lat.fromScheduled},
                                  {"sent", &lat.fromSent}}) {
      Labels l = sorted({{"resource", rv.first}, {"verb", rv.second}, {"measured_from", from}});
      if (h->count() == 0) {
        for (const char* s : {"p50", "p90", "p99", "p99.9", "max"}) {
          out.push_back(Figure::unavailable(std::string("client_latency_") + s, l, "s", Source::kClient,
                                            "every request of this kind failed without an HTTP response"));
        }
        continue;
      }
      quantileFigures(out, "client_latency_", *h, l);
    }
  }
  return out;
}

std::vector<Figure> clientCountFigures(const load::RequestStats& stats, engine::Duration window) {
  std::vector<Figure> out;
  std::map<std::pair<std::string, std::string>, double> writes;
  std::map<std::string, double> errors;
  for (const auto& [key, lat] : stats.latency()) {
    double n = static_cast<double>(lat.fromSent.count());
    std::string outcome(load::toString(key.outcome));
    out.push_back(Figure::measured("client_requests",
                                   sorted({{"resource", key.resource}, {"verb", key.verb}, {"outcome", outcome}}), n,
                                   "count", Source::kClient));
    if (isWriteVerb(key.verb)) writes[{key.resource, key.verb}] += n;
    if (key.outcome != load::OutcomeClass::kSuccess) errors[outcome] += n;
  }
  double secs = seconds(window);
  for (const auto& [rv, n] : writes) {
    Labels l = sorted({{"resource", rv.first}, {"verb", rv.second}});
    out.push_back(Figure::measured("client_write_requests", l, n, "count", Source::kClient));
    if (secs > 0)
      out.push_back(Figure::measured("client_write_qps", l, n / secs, "1/s", Source::kClient));
    else
      out.push_back(Figure::unavailable("client_write_qps", l, "1/s", Source::kClient, "the measured window is empty"));
  }
  for (const auto& [outcome, n] : errors) {
    out.push_back(Figure::measured("client_errors", {{"outcome", outcome}}, n, "count", Source::kClient));
  }
  // The share of requests the server failed (5xx) or that got no answer at all: what an
  // availability SLO counts. 4xx (409 conflicts, 404s of objects already gone, 429s the
  // client retries) are the client's business and not in it. Watches are streams.
  double all = 0, failed = 0;
  for (const auto& [key, lat] : stats.latency()) {
    if (key.verb == "WATCH") continue;
    const double n = static_cast<double>(lat.fromSent.count());
    all += n;
    if (key.outcome == load::OutcomeClass::kServerError || key.outcome == load::OutcomeClass::kTransportError)
      failed += n;
  }
  if (all > 0)
    out.push_back(Figure::measured("client_error_ratio", {}, failed / all, "ratio", Source::kClient));
  else
    out.push_back(Figure::unavailable("client_error_ratio", {}, "ratio", Source::kClient, "no request was answered"));
  // Retries the client sent by itself, by why, and the time they waited first.
  std::uint64_t retries = 0;
  for (const auto& [reason, n] : stats.retries()) {
    out.push_back(
        Figure::measured("client_retries", {{"reason", reason}}, static_cast<double>(n), "count", Source::kClient));
    retries += n;
  }
  out.push_back(Figure::measured("client_retries_total", {}, static_cast<double>(retries), "count", Source::kClient));
  const engine::HdrHistogram& wait = stats.retryWait();
  if (wait.count() == 0 && all == 0) {
    out.push_back(Figure::unavailable("client_retry_wait_max", {}, "s", Source::kClient, "no request was answered"));
  } else if (wait.count() == 0) {
    // Calls were answered and none waited to be sent again: the longest wait was none.
    out.push_back(Figure::measured("client_retry_wait_seconds_total", {}, 0, "s", Source::kClient));
    out.push_back(Figure::measured("client_retry_wait_max", {}, 0, "s", Source::kClient));
  } else {
    out.push_back(Figure::measured("client_retry_wait_seconds_total", {},
                                   wait.mean() * static_cast<double>(wait.count()) / 1e9, "s", Source::kClient));
    out.push_back(Figure::measured("client_retry_wait_max", {}, nsToSeconds(wait.max()), "s", Source::kClient));
  }
  // Errors by exact code (409, 429, 503, ...; "none" when no response came back).
  for (const auto& [status, n] : stats.statusCounts()) {
    if (status >= 200 && status < 300) continue;
    out.push_back(Figure::measured("client_errors_by_code", {{"code", status == 0 ? "none" : std::to_string(status)}},
                                   static_cast<double>(n), "count", Source::kClient));
  }
  return out;
}

std::vector<Figure> generatorHealthFigures(const load::RequestStats& stats, const GeneratorHealthOptions& options) {
  std::vector<Figure> out;
  const engine::HdrHistogram& lag = stats.scheduleLag();
  if (lag.count() == 0) {
    for (const char* n : {"schedule_lag_p50", "schedule_lag_p99", "schedule_lag_max"}) {
      out.push_back(Figure::unavailable(n, {}, "s", Source::kClient, "no request was sent"));
    }
    out.push_back(Figure::unavailable("generator_limited", {}, "", Source::kClient, "no request was sent"));
    return out;
  }
  out.push_back(Figure::measured("schedule_lag_p50", {}, nsToSeconds(lag.quantile(0.5)), "s", Source::kClient));
  out.push_back(Figure::measured("schedule_lag_p99", {}, nsToSeconds(lag.quantile(0.99)), "s", Source::kClient));
  out.push_back(Figure::measured("schedule_lag_max", {}, nsToSeconds(lag.max()), "s", Source::kClient));
  load::GeneratorLimit limit = load::generatorLimit(stats, options.quantile, options.lagThreshold);
  // Unlabelled so that two runs compare figure by figure whatever the cause; the
  // cause has figures of its own.
  out.push_back(
      Figure::measured("generator_limited", {}, limit == load::GeneratorLimit::kNone ? 0 : 1, "", Source::kClient));
  out.push_back(Figure::measured("generator_limited_by_schedule", {}, limit == load::GeneratorLimit::kSchedule ? 1 : 0,
                                 "", Source::kClient));
  out.push_back(Figure::measured("generator_limited_by_concurrency", {},
                                 limit == load::GeneratorLimit::kConcurrency ? 1 : 0, "", Source::kClient));
  return out;
}

}  // namespace cpscale::metrics
