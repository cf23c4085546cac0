// The lease tier's propagation rules in virtual time: a kubelet's renewals every 10 s
// reach the apiserver as its first renewal, one every propagateEvery, and at once after
// a silence or a refusal; the rest are answered by the tier, at the time they were sent.
#include "sim/load/lease_tier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine/simulator_impl.h"
#include "test/support/fake_transport.h"

namespace cpscale::load {
namespace {
using namespace std::chrono_literals;

const std::string kLeases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/";

std::string leaseBody(const std::string& name, const std::string& rv) {
  return R"({"kind":"Lease","metadata":{"name":")" + name + R"(","resourceVersion":")" + rv +
         R"("},"spec":{"holderIdentity":")" + name + R"(","leaseDurationSeconds":40}})";
}

struct Answer {
  TimePoint sentAt, answeredAt;
  kube::HttpResponse response;
  std::string body;
};

class LeaseTierTest : public ::testing::Test {
 protected:
  LeaseTierTest() {
    auto fake = std::make_unique<kube::FakeTransport>(sim);
    server = fake.get();
    server->setLatency(1ms);  // the apiserver answers 1 ms later, the tier at once
    server->setHandler([this](const kube::HttpRequest& req) {
      kube::HttpResponse r;
      r.status = refuseNext ? 409 : 200;
      refuseNext = false;
      r.body = req.body;
      return r;
    });
    LeaseTierOptions o;
    o.propagateEvery = 30s;
    o.spreadPhases = false;  // exact times; the spread is tested on its own
    tier = std::make_unique<LeaseTier>(std::move(fake), sim, counters, o);
  }
  // A renewal of `name` at `t`, its answer recorded.
  void renewAt(TimePoint t, const std::string& name = "n0", const std::string& path = "") {
    sim.scheduleAt(t, [this, name, path] {
      kube::HttpRequest req;
      req.method = "PUT";
      req.path = path.empty() ? kLeases + name : path;
      req.body = leaseBody(name, "7");
      const TimePoint sent = sim.now();
      auto& a = answers.emplace_back();
      a.sentAt = sent;
      a.body = req.body;
      const std::size_t i = answers.size() - 1;
      tier->submit(std::move(req), [this, i](kube::HttpResponse r) {
        answers[i].answeredAt = sim.now();
        answers[i].response = std::move(r);
      });
    });
  }
  // When the apiserver saw a PUT of `name`.
  std::vector<TimePoint> written(const std::string& name = "n0") const {
    std::vector<TimePoint> out;
    for (const auto& r : server->requests())
      if (r.request.method == "PUT" && r.request.path == kLeases + name) out.push_back(r.submittedAt);
    return out;
  }

  engine::VirtualSimulator sim;
  kube::FakeTransport* server = nullptr;
  LeaseTierCounters counters;
  std::unique_ptr<LeaseTier> tier;
  std::vector<Answer> answers;
  bool refuseNext = false;
};

TEST_F(LeaseTierTest, RenewalsAreCoalescedToOneWriteEveryPropagationPeriod) {
  for (int s = 0; s <= 300; s += 10) renewAt(TimePoint{std::chrono::seconds(s)});
  sim.runUntil(TimePoint{400s});
  // The first renewal (a transition), then every 30 s.
  std::vector<TimePoint> expected;
  for (int s = 0; s <= 300; s += 30) expected.push_back(TimePoint{std::chrono::seconds(s)});
  EXPECT_EQ(written(), expected);
  EXPECT_EQ(counters.received, 31u);
  EXPECT_EQ(counters.transitions, 1u);
  EXPECT_EQ(counters.periodic, 10u);
  EXPECT_EQ(counters.absorbed, 20u);
  // Every renewal is answered 200 with the Lease it sent: by the apiserver 1 ms later
  // when written through, by the tier at once when absorbed.
  for (const Answer& a : answers) {
    EXPECT_EQ(a.response.status, 200);
    EXPECT_EQ(a.response.body, a.body);
    const bool through = (a.sentAt - TimePoint{}) % 30s == 0s;
    EXPECT_EQ(a.answeredAt, a.sentAt + (through ? 1ms : 0ms));
  }
  EXPECT_EQ(tier->inFlight(), 0u);
}

TEST_F(LeaseTierTest, ARenewalAfterASilenceIsWrittenAtOnce) {
  // Renewals every 10 s, then none at 40 s and 50 s (the node was gone), then 60 s.
  for (int s : {0, 10, 20, 30, 60, 70}) renewAt(TimePoint{std::chrono::seconds(s)});
  sim.runUntil(TimePoint{100s});
  // 0: first; 30: periodic; 60: back after 30 s of silence (> 1.5 x 10 s): a transition.
  EXPECT_EQ(written(), (std::vector<TimePoint>{TimePoint{0s}, TimePoint{30s}, TimePoint{60s}}));
  EXPECT_EQ(counters.transitions, 2u);
  renewAt(TimePoint{115s});  // 45 s after the last: a silence again, written
  sim.runUntil(TimePoint{120s});
  EXPECT_EQ(written().size(), 4u);
  // A renewal late by half a period (15 s after the last) is no silence: coalesced.
  renewAt(TimePoint{125s});
  renewAt(TimePoint{140s});
  sim.runUntil(TimePoint{143s});
  EXPECT_EQ(written().size(), 4u);
  EXPECT_EQ(counters.transitions, 3u);
}

// 300 Leases first renewed within a second of each other write through at their own
// phases of the period afterwards: every 10 s of a minute sees about a third of them,
// not all at once every 30 s.
TEST(LeaseTierSpread, AFleetSeenAtOnceWritesThroughSpreadOverThePeriod) {
  engine::VirtualSimulator sim;
  auto fake = std::make_unique<kube::FakeTransport>(sim);
  kube::FakeTransport* server = fake.get();
  server->setLatency(1ms);
  server->setHandler([](const kube::HttpRequest& req) {
    kube::HttpResponse r;
    r.status = 200;
    r.body = req.body;
    return r;
  });
  LeaseTierCounters counters;
  LeaseTier tier(std::move(fake), sim, counters, LeaseTierOptions{});
  for (int n = 0; n < 300; ++n)
    for (int s = 0; s <= 120; s += 10)
      sim.scheduleAt(TimePoint{std::chrono::seconds(s) + std::chrono::milliseconds(3 * n)}, [&, n] {
        kube::HttpRequest req;
        req.method = "PUT";
        req.path = kLeases + "node-" + std::to_string(n);
        req.body = leaseBody("node-" + std::to_string(n), "1");
        tier.submit(std::move(req), [](kube::HttpResponse) {});
      });
  sim.runUntil(TimePoint{130s});
  std::map<long, int> perTenSeconds;
  for (const auto& r : server->requests())
    if (r.submittedAt >= TimePoint{60s} && r.submittedAt < TimePoint{120s})
      ++perTenSeconds[std::chrono::duration_cast<std::chrono::seconds>(r.submittedAt.time_since_epoch()).count() / 10];
  ASSERT_EQ(perTenSeconds.size(), 6u);
  int total = 0;
  for (const auto& [bucket, n] : perTenSeconds) {
    total += n;
    EXPECT_GT(n, 60) << "10 s from " << bucket * 10;
    EXPECT_LT(n, 140) << "10 s from " << bucket * 10;
  }
  EXPECT_EQ(total, 600);  // one write per Lease per 30 s
}

TEST_F(LeaseTierTest, ARefusedWriteSendsTheNextRenewalThrough) {
  refuseNext = true;
  renewAt(TimePoint{0s});   // written, refused: 409 to the kubelet
  renewAt(TimePoint{1s});   // its retry after re-reading: through, whatever the time
  renewAt(TimePoint{11s});  // coalesced again
  sim.runUntil(TimePoint{20s});
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].response.status, 409);
  EXPECT_EQ(written(), (std::vector<TimePoint>{TimePoint{0s}, TimePoint{1s}}));
  EXPECT_EQ(answers[2].response.status, 200);
}

TEST_F(LeaseTierTest, EverythingButANodeLeaseRenewalPassesThrough) {
  renewAt(TimePoint{0s});
  renewAt(TimePoint{1s});  // absorbed
  renewAt(TimePoint{2s}, "x", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler");
  renewAt(TimePoint{3s}, "x", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler");
  sim.scheduleAt(TimePoint{4s}, [this] {
    for (const char* m : {"GET", "POST", "DELETE"}) {
      kube::HttpRequest req;
      req.method = m;
      req.path = std::string(m) == "POST" ? kLeases.substr(0, kLeases.size() - 1) : kLeases + "n0";
      tier->submit(std::move(req), [](kube::HttpResponse) {});
    }
  });
  sim.runUntil(TimePoint{10s});
  EXPECT_EQ(server->requests().size(), 1u + 2u + 3u);
  EXPECT_EQ(counters.received, 2u);
  EXPECT_EQ(counters.absorbed, 1u);
}

TEST_F(LeaseTierTest, ACancelledAbsorbedRenewalIsAbortedOnce) {
  renewAt(TimePoint{0s});
  sim.runUntil(TimePoint{1s});
  int calls = 0;
  kube::TransportOutcome outcome = kube::TransportOutcome::kOk;
  sim.scheduleAt(TimePoint{5s}, [&] {
    kube::HttpRequest req;
    req.method = "PUT";
    req.path = kLeases + "n0";
    req.body = leaseBody("n0", "8");
    const kube::RequestId id = tier->submit(std::move(req), [&](kube::HttpResponse r) {
      ++calls;
      outcome = r.outcome;
    });
    tier->cancel(id);
  });
  sim.runUntil(TimePoint{10s});
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(outcome, kube::TransportOutcome::kAborted);
  EXPECT_EQ(tier->inFlight(), 0u);
}

}  // namespace
}  // namespace cpscale::load
