#include "workloads/call_tracker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "sim/engine/simulator_impl.h"
#include "test/support/scripted_transport.h"

namespace cpscale::workloads {
namespace {

using namespace std::chrono_literals;

TEST(CallTracker, SlotsAreReusedAndCancelAllEndsExactlyTheCallsStillInFlight) {
  engine::VirtualSimulator sim;
  // Each call's latency, in ms, is its object's name.
  engine::testing::ScriptedTransport t(sim, [](const kube::HttpRequest& r) {
    return engine::testing::ScriptedTransport::Reply{
        std::chrono::milliseconds(std::stoi(r.path.substr(r.path.rfind('/') + 1)))};
  });
  kube::ApiClient api(t, sim.clock(), sim);
  CallTracker calls(api);
  std::vector<int> done;
  const auto start = [&](int ms) {
    calls.call(kube::ApiRequest::get(kube::ResourceRef(kube::gvr::kNodes).named(std::to_string(ms))),
               [&done, ms](kube::ApiResult r) {
                 EXPECT_TRUE(r.ok());
                 done.push_back(ms);
               });
  };
  for (int ms : {50, 10, 30, 40, 20}) start(ms);
  EXPECT_EQ(calls.inFlight(), 5u);
  sim.runUntil(engine::TimePoint{25ms});
  EXPECT_EQ(done, (std::vector<int>{10, 20}));
  EXPECT_EQ(calls.inFlight(), 3u);
  // Two new calls take the two freed slots, one more a new slot.
  for (int ms : {100, 110, 120}) start(ms);
  EXPECT_EQ(calls.inFlight(), 6u);
  sim.runUntil(engine::TimePoint{35ms});
  EXPECT_EQ(done, (std::vector<int>{10, 20, 30}));
  EXPECT_EQ(calls.inFlight(), 5u);

  calls.cancelAll();
  EXPECT_EQ(calls.inFlight(), 0u);
  EXPECT_EQ(t.inFlight(), 0u) << "every call still in flight was cancelled at the transport";
  sim.runUntil(engine::TimePoint{1s});
  EXPECT_EQ(done, (std::vector<int>{10, 20, 30})) << "no handler of a cancelled call runs";
}

}  // namespace
}  // namespace cpscale::workloads
