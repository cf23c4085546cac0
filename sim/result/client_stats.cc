#include "sim/result/client_stats.h"

#include <array>
#include <string>

#include "sim/result/json_io.h"

namespace cpscale::result {

using jsonio::Reader;

using nlohmann::json;

namespace {

constexpr std::array kOutcomes = {load::OutcomeClass::kInformational, load::OutcomeClass::kSuccess,
                                  load::OutcomeClass::kRedirect,      load::OutcomeClass::kClientError,
                                  load::OutcomeClass::kServerError,   load::OutcomeClass::kTransportError};

load::OutcomeClass outcomeFrom(const Reader& r) {
  const std::string s = r.str();
  for (auto o : kOutcomes)
    if (load::toString(o) == s) return o;
  r.fail("is '" + s + "', not an outcome class (2xx, 4xx, transport_error, ...)");
  return load::OutcomeClass::kSuccess;
}

}  // namespace

json histogramJson(const engine::HdrHistogram& h) {
  const auto c = h.cells();
  json counts = json::array();
  for (const auto& [value, n] : c.counts) counts.push_back({value, n});
  return {{"highest", c.highest},       {"min", c.min}, {"max", c.max}, {"sum", c.sum}, {"saturated", c.saturated},
          {"counts", std::move(counts)}};
}

engine::HdrHistogram histogramFromJson(const Reader& r) {
  engine::HdrHistogram::Cells c;
  c.highest = r.at("highest").unsignedInteger();
  c.min = r.at("min").unsignedInteger();
  c.max = r.at("max").unsignedInteger();
  c.sum = r.at("sum").num();
  c.saturated = r.at("saturated").unsignedInteger();
  const Reader counts = r.at("counts");
  for (std::size_t i = 0; i < counts.array().size(); ++i) {
    const Reader cell = counts.at(i);
    if (cell.array().size() != 2) cell.fail("expected [value, count]");
    c.counts.emplace_back(cell.at(std::size_t{0}).unsignedInteger(), cell.at(std::size_t{1}).unsignedInteger());
  }
  try {
    return engine::HdrHistogram::fromCells(c);
  } catch (const ConfigError& e) {
    r.fail(e.what());
  }
  return engine::HdrHistogram{};
}

json requestStatsJson(const load::RequestStats& stats) {
  const auto p = stats.parts();
  json latency = json::array();
  for (const auto& [k, l] : p.latency)
    latency.push_back({{"resource", k.resource},
                       {"verb", k.verb},
                       {"outcome", std::string(load::toString(k.outcome))},
                       {"fromScheduled", histogramJson(l.fromScheduled)},
                       {"fromSent", histogramJson(l.fromSent)}});
  json status = json::object();
  for (const auto& [code, n] : p.statusCounts) status[std::to_string(code)] = n;
  json retries = json::object();
  for (const auto& [reason, n] : p.retries) retries[reason] = n;
  return {{"latency", std::move(latency)},           {"scheduleLag", histogramJson(p.scheduleLag)},
          {"submitLag", histogramJson(p.submitLag)}, {"queueWait", histogramJson(p.queueWait)},
          {"retryWait", histogramJson(p.retryWait)}, {"completed", p.completed},
          {"statusCounts", std::move(status)},       {"retries", std::move(retries)}};
}

load::RequestStats requestStatsFromJson(const Reader& r) {
  load::RequestStats::Parts p;
  const Reader latency = r.at("latency");
  for (std::size_t i = 0; i < latency.array().size(); ++i) {
    const Reader e = latency.at(i);
    load::RequestKey key{e.at("resource").str(), e.at("verb").str(), outcomeFrom(e.at("outcome"))};
    if (p.latency.count(key)) e.fail("a second entry for the same resource, verb and outcome");
    p.latency[key] = {histogramFromJson(e.at("fromScheduled")), histogramFromJson(e.at("fromSent"))};
  }
  p.scheduleLag = histogramFromJson(r.at("scheduleLag"));
  p.submitLag = histogramFromJson(r.at("submitLag"));
  p.queueWait = histogramFromJson(r.at("queueWait"));
  p.retryWait = histogramFromJson(r.at("retryWait"));
  p.completed = r.at("completed").unsignedInteger();
  const Reader status = r.at("statusCounts");
  for (const auto& [code, n] : status.object().items()) {
    try {
      p.statusCounts[std::stoi(code)] = status.at(code).unsignedInteger();
    } catch (const std::logic_error&) {
      status.at(code).fail("is not under an HTTP status code");
    }
  }
  const Reader retries = r.at("retries");
  for (const auto& [reason, n] : retries.object().items()) p.retries[reason] = retries.at(reason).unsignedInteger();
  return load::RequestStats::fromParts(std::move(p));
}

}  // namespace cpscale::result
