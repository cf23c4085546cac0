#include "sim/load/lease_tier.h"

#include "sim/engine/stable_hash.h"

#include <charconv>
#include <string_view>
#include <utility>
#include <vector>

namespace cpscale::load {
namespace {

// leaseDurationSeconds in a Lease's text, or 40 (the kubelet's default) when absent.
Duration renewPeriod(std::string_view body) {
  constexpr std::string_view key = "\"leaseDurationSeconds\":";
  long long seconds = 40;
  if (auto at = body.find(key); at != std::string_view::npos) {
    std::size_t p = at + key.size();
    while (p < body.size() && body[p] == ' ') ++p;
    long long v = 0;
    auto [end, ec] = std::from_chars(body.data() + p, body.data() + body.size(), v);
    if (ec == std::errc() && v > 0) seconds = v;
  }
  return std::chrono::duration_cast<Duration>(std::chrono::seconds(seconds)) / 4;
}

}  // namespace

LeaseTier::LeaseTier(kube::TransportPtr inner, engine::Scheduler& scheduler, LeaseTierCounters& counters,
                     LeaseTierOptions options)
    : inner_(std::move(inner)),
      scheduler_(scheduler),
      counters_(counters),
      options_(std::move(options)),
      prefix_("/apis/coordination.k8s.io/v1/namespaces/" + options_.leaseNamespace + "/leases/") {}

LeaseTier::~LeaseTier() {
  for (auto& [id, l] : local_) scheduler_.cancel(l.event);
}

std::string LeaseTier::renewedLease(const kube::HttpRequest& req) const {
  if (req.method != "PUT" || req.path.compare(0, prefix_.size(), prefix_) != 0) return "";
  std::string name = req.path.substr(prefix_.size());
  if (auto q = name.find('?'); q != std::string::npos) name.resize(q);
  if (name.empty() || name.find('/') != std::string::npos) return "";  // a subresource or the collection
  return name;
}

kube::RequestId LeaseTier::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  const std::string name = renewedLease(req);
  if (name.empty()) return inner_->submit(std::move(req), std::move(done));
  ++counters_.received;
  const TimePoint now = scheduler_.now();
  LeaseState& s = leases_[name];
  const Duration period = renewPeriod(req.body);
  const bool first = !s.seen;
  const bool transition = first || s.forceNext || now - s.lastReceived > period + period / 2;
  s.seen = true;
  s.lastReceived = now;
  if (transition || now - s.lastWritten >= options_.propagateEvery) {
    ++(transition ? counters_.transitions : counters_.periodic);
    s.forceNext = false;
    s.lastWritten = now;
    if (first && options_.spreadPhases && options_.propagateEvery > Duration{0})
      s.lastWritten -= Duration{static_cast<Duration::rep>(
          engine::fnv1a64(name) % static_cast<std::uint64_t>(options_.propagateEvery.count()))};
    return inner_->submit(std::move(req), [this, name, done = std::move(done)](kube::HttpResponse r) {
      // Refused (the Lease changed under it): the kubelet re-reads and retries, and
      // that retry goes through whatever the time.
      if (r.ok() && r.status == 409) leases_[name].forceNext = true;
      done(std::move(r));
    });
  }
  ++counters_.absorbed;
  const kube::RequestId id = nextLocal_++;
  kube::HttpResponse answer;
  answer.status = 200;
  answer.body = std::move(req.body);
  Local& l = local_[id];
  l.done = std::move(done);
  l.event = scheduler_.scheduleAt(now, [this, id, answer = std::move(answer)]() mutable {
    auto it = local_.find(id);
    if (it == local_.end()) return;
    kube::ResponseHandler d = std::move(it->second.done);
    local_.erase(it);
    d(std::move(answer));
  });
  return id;
}

void LeaseTier::cancel(kube::RequestId id) {
  auto it = local_.find(id);
  if (it == local_.end()) {
    inner_->cancel(id);
    return;
  }
  scheduler_.cancel(it->second.event);
  kube::ResponseHandler d = std::move(it->second.done);
  local_.erase(it);
  kube::HttpResponse r;
  r.outcome = kube::TransportOutcome::kAborted;
  r.detail = "cancelled";
  d(std::move(r));
}

}  // namespace cpscale::load
