#include "sim/load/request_stats.h"

namespace cpscale::load {
namespace {

std::uint64_t ns(Duration d) { return d.count() > 0 ? static_cast<std::uint64_t>(d.count()) : 0; }

}  // namespace

std::string_view toString(OutcomeClass c) {
  switch (c) {
    case OutcomeClass::kInformational: return "1xx";
    case OutcomeClass::kSuccess: return "2xx";
    case OutcomeClass::kRedirect: return "3xx";
    case OutcomeClass::kClientError: return "4xx";
    case OutcomeClass::kServerError: return "5xx";
    case OutcomeClass::kTransportError: return "transport_error";
  }
  return "unknown";
}

OutcomeClass classifyStatus(bool gotResponse, int status) {
  if (!gotResponse || status < 100 || status > 599) return OutcomeClass::kTransportError;
  return static_cast<OutcomeClass>(status / 100 - 1);
}

std::string_view toString(GeneratorLimit l) {
  switch (l) {
    case GeneratorLimit::kNone: return "none";
    case GeneratorLimit::kSchedule: return "schedule";
    case GeneratorLimit::kConcurrency: return "concurrency";
  }
  return "unknown";
}

void RequestStats::recordLatency(const RequestKey& key, Duration fromScheduled, Duration fromSent) {
  RequestLatency& l = latency_[key];
  l.fromScheduled.addValue(ns(fromScheduled));
  l.fromSent.addValue(ns(fromSent));
  ++completed_;
}

void RequestStats::recordSend(Duration submitLag, Duration queueWait) {
  submitLag_.addValue(ns(submitLag));
  queueWait_.addValue(ns(queueWait));
  scheduleLag_.addValue(ns(submitLag + queueWait));
}

RequestStats RequestStats::fromParts(Parts p) {
  RequestStats s;
  s.latency_ = std::move(p.latency);
  s.scheduleLag_ = std::move(p.scheduleLag);
  s.submitLag_ = std::move(p.submitLag);
  s.queueWait_ = std::move(p.queueWait);
  s.retryWait_ = std::move(p.retryWait);
  s.completed_ = p.completed;
  s.statusCounts_ = std::move(p.statusCounts);
  s.retries_ = std::move(p.retries);
  return s;
}

void RequestStats::merge(const RequestStats& other) {
  for (const auto& [key, l] : other.latency_) {
    auto& mine = latency_[key];
    mine.fromScheduled.merge(l.fromScheduled);
    mine.fromSent.merge(l.fromSent);
  }
  scheduleLag_.merge(other.scheduleLag_);
  submitLag_.merge(other.submitLag_);
  queueWait_.merge(other.queueWait_);
  completed_ += other.completed_;
  for (const auto& [status, n] : other.statusCounts_) statusCounts_[status] += n;
  for (const auto& [reason, n] : other.retries_) retries_[reason] += n;
  retryWait_.merge(other.retryWait_);
}

void RequestStats::recordRetry(std::string_view reason, Duration wait) {
  auto it = retries_.find(reason);
  if (it == retries_.end()) it = retries_.emplace(std::string(reason.empty() ? "unknown" : reason), 0).first;
  ++it->second;
  retryWait_.addValue(ns(wait));
}

GeneratorLimit generatorLimit(const RequestStats& stats, double quantile, Duration threshold) {
  if (stats.sent() == 0) return GeneratorLimit::kNone;
  const auto limit = static_cast<std::uint64_t>(threshold.count());
  if (stats.scheduleLag().quantile(quantile) <= limit) return GeneratorLimit::kNone;
  return stats.submitLag().quantile(quantile) >= stats.queueWait().quantile(quantile) ? GeneratorLimit::kSchedule
                                                                                      : GeneratorLimit::kConcurrency;
}

}  // namespace cpscale::load
