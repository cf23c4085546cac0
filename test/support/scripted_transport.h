// A Transport for virtual-time tests: each request completes after a latency chosen
// by the test, delivered as a simulator event, and may "cost" generator time on submit
// (advancing the virtual clock) to play a generator slower than its schedule.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>

#include "sim/engine/simulator_impl.h"
#include "sim/kube/transport.h"

namespace cpscale::engine::testing {

class ScriptedTransport final : public kube::Transport {
 public:
  struct Reply {
    Duration latency{0};
    int status = 200;
    kube::TransportOutcome outcome = kube::TransportOutcome::kOk;
  };
  using Script = std::function<Reply(const kube::HttpRequest&)>;

  ScriptedTransport(VirtualSimulator& sim, Script script) : sim_(sim), script_(std::move(script)) {}

  // Virtual time each submit() takes.
  Duration submitCost{0};
  std::size_t submitted = 0;
  std::size_t maxInFlightSeen = 0;

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override {
    if (submitCost > Duration{0}) sim_.virtualClock().advance(submitCost);
    const kube::RequestId id = ++submitted;
    const Reply r = script_(req);
    const EventId ev = sim_.scheduleAt(sim_.clock().now() + r.latency, [this, id, r] {
      auto it = pending_.find(id);
      auto done = std::move(it->second.done);
      pending_.erase(it);
      kube::HttpResponse resp;
      resp.outcome = r.outcome;
      resp.status = r.outcome == kube::TransportOutcome::kOk ? r.status : 0;
      done(std::move(resp));
    });
    pending_.emplace(id, Pending{ev, std::move(done)});
    maxInFlightSeen = std::max(maxInFlightSeen, pending_.size());
    return id;
  }
  void cancel(kube::RequestId id) override {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    sim_.cancel(it->second.event);
    auto done = std::move(it->second.done);
    pending_.erase(it);
    kube::HttpResponse resp;
    resp.outcome = kube::TransportOutcome::kAborted;
    done(std::move(resp));
  }
  std::size_t poll(Duration) override { return 0; }  // replies arrive as simulator events
  std::size_t inFlight() const override { return pending_.size(); }
  void wakeup() override {}
  const std::string& server() const override { return server_; }

 private:
  struct Pending {
    EventId event;
    kube::ResponseHandler done;
  };
  VirtualSimulator& sim_;
  Script script_;
  std::unordered_map<kube::RequestId, Pending> pending_;
  std::string server_ = "scripted://test";
};

}  // namespace cpscale::engine::testing
