// The model's members under a scenario's faults, in virtual time: a killed apiserver
// refuses every connection until its startup after the restart has passed, its watches
// end and a watch resuming from before the restart is told to relist; a frozen etcd
// holds the writes until it is resumed, a killed one fails them.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using engine::TimePoint;
using kube::ResourceRef;
using nlohmann::json;
using testing::configMap;
using testing::Harness;
using testing::kConfigMaps;

// One attempt straight on a transport, answered when and how.
struct Answer {
  std::optional<TimePoint> at;
  kube::HttpResponse response;
};

void submitAt(Harness& h, kube::Transport& t, TimePoint when, kube::HttpRequest req, Answer& out) {
  h.sim.scheduleAt(when, [&h, &t, req = std::move(req), &out]() mutable {
    t.submit(std::move(req), [&h, &out](kube::HttpResponse r) {
      out.at = h.sim.now();
      out.response = std::move(r);
    });
  });
}

kube::HttpRequest request(std::string method, std::string path, std::string body = "",
                          engine::Duration timeout = engine::Duration::zero()) {
  kube::HttpRequest r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.body = std::move(body);
  r.timeout = timeout;
  if (r.method == "PATCH") r.headers.push_back({"Content-Type", "application/merge-patch+json"});
  return r;
}

kube::HttpRequest listConfigMaps() { return request("GET", "/api/v1/namespaces/default/configmaps"); }

TEST(ModelFaults, AKilledApiserverAnswersNothingUntilItsStartupAfterTheRestartHasPassed) {
  Harness h;
  ASSERT_EQ(h.plane->options().apiserverStartup, 2500ms);
  const TimePoint t0 = h.sim.now();
  h.plane->kill("kube-apiserver-0");
  EXPECT_FALSE(h.plane->serving("kube-apiserver-0"));
  std::optional<TimePoint> ready;
  h.sim.scheduleAt(t0 + 8s, [&] { h.plane->restart("kube-apiserver-0", [&] { ready = h.sim.now(); }); });

  // Down, then starting: refused, as a connect to a closed port is, 100 us later.
  Answer down, starting, served;
  submitAt(h, *h.transport, t0 + 1s, listConfigMaps(), down);
  submitAt(h, *h.transport, t0 + 10500ms - 1us, listConfigMaps(), starting);
  submitAt(h, *h.transport, t0 + 10500ms, listConfigMaps(), served);
  auto scrape = h.plane->memberTransport("kube-apiserver-0");
  Answer metrics;
  submitAt(h, *scrape, t0 + 2s, request("GET", "/metrics"), metrics);
  h.sim.runUntil(t0 + 11s);

  ASSERT_TRUE(down.at && starting.at && served.at && metrics.at);
  EXPECT_EQ(*down.at, t0 + 1s + 100us);
  EXPECT_EQ(down.response.outcome, kube::TransportOutcome::kConnectFailed);
  EXPECT_EQ(*starting.at, t0 + 10500ms - 1us + 100us);
  EXPECT_EQ(starting.response.outcome, kube::TransportOutcome::kConnectFailed);
  EXPECT_EQ(metrics.response.outcome, kube::TransportOutcome::kConnectFailed);
  // Ready at kill + restartAfter + startup: 0 + 8 s + 2.5 s. Its readiness event was
  // scheduled (at 8 s) after the probe at 10.5 s (at 0 s): the probe still finds it
  // starting, the next instant serves.
  ASSERT_TRUE(ready);
  EXPECT_EQ(*ready, t0 + 10500ms);
  EXPECT_TRUE(h.plane->serving("kube-apiserver-0"));
  EXPECT_EQ(served.response.outcome, kube::TransportOutcome::kConnectFailed);
  Answer after;
  submitAt(h, *h.transport, h.sim.now(), listConfigMaps(), after);
  h.sim.runFor(1s);
  ASSERT_TRUE(after.at);
  EXPECT_TRUE(after.response.ok());
  EXPECT_EQ(after.response.status, 200);
  // Refused connections never reached it: its in-flight gauge is back at 0.
  EXPECT_EQ(h.transport->inFlight(), 0u);
}

TEST(ModelFaults, TheClientRetriesARefusedConnectionAsLive) {
  Harness h;
  const TimePoint t0 = h.sim.now();
  h.plane->kill("kube-apiserver-0");
  // Retried (connect failed: any verb) with backoff, until the budget's attempts are spent.
  kube::ApiResult r = h.api->create(kConfigMaps, configMap("a"));
  EXPECT_EQ(r.outcome, kube::TransportOutcome::kConnectFailed) << r.describe();
  EXPECT_EQ(r.attempts, 5);
  EXPECT_LT(h.sim.now() - t0, 3s);
  h.plane->restart("kube-apiserver-0");
  h.sim.runFor(2500ms);
  EXPECT_TRUE(h.api->create(kConfigMaps, configMap("a")).ok());
}

struct Recorder {
  std::vector<kube::WatchEvent> events;
  std::optional<kube::ApiResult> closed;
};

kube::CallId watch(Harness& h, const std::string& rv, Recorder& rec) {
  kube::ListOptions o;
  o.resourceVersion = rv;
  o.timeoutSeconds = 600;
  return h.api->watch(
      kConfigMaps, o, [&rec](const kube::WatchEvent& e) { rec.events.push_back(e); },
      [&rec](const kube::ApiResult& r) { rec.closed = r; });
}

TEST(ModelFaults, AKilledApiserversWatchesEndAndResumeOnlyByRelisting) {
  Harness h;
  kube::ApiResult first = h.api->create(kConfigMaps, configMap("a"));
  ASSERT_TRUE(first.ok());
  const std::string rv = first.body["metadata"]["resourceVersion"];
  Recorder open;
  watch(h, rv, open);
  h.sim.runFor(1s);
  EXPECT_EQ(h.plane->stats().watchers, 1u);
  // A write the watch does not see moves the store's revision past the watch's.
  const ResourceRef leases = ResourceRef(kube::gvr::kLeases).in("default");
  ASSERT_TRUE(h.api
                  ->create(leases, {{"apiVersion", "coordination.k8s.io/v1"},
                                    {"kind", "Lease"},
                                    {"metadata", {{"name", "l"}, {"namespace", "default"}}}})
                  .ok());
  h.sim.runFor(1s);
  EXPECT_TRUE(open.events.empty());

  h.plane->kill("kube-apiserver-0");
  // Reset with the connection, as a live stream is when its server dies.
  ASSERT_TRUE(open.closed);
  EXPECT_EQ(open.closed->outcome, kube::TransportOutcome::kProtocolError);
  EXPECT_EQ(h.plane->stats().watchers, 0u);

  h.plane->restart("kube-apiserver-0");
  h.sim.runFor(2500ms);
  // Its watch cache starts empty at the store's revision: resuming from the watch's last
  // event, older than that, is 410 Expired, and the reflector relists.
  Recorder resumed;
  watch(h, rv, resumed);
  h.sim.runFor(1s);
  ASSERT_EQ(resumed.events.size(), 1u);
  EXPECT_EQ(resumed.events[0].type, kube::WatchEventType::kError);
  EXPECT_EQ(resumed.events[0].object["code"], 410);
  // A relist's resourceVersion is served.
  kube::ApiResult list = h.api->list(kConfigMaps);
  ASSERT_TRUE(list.ok());
  Recorder relisted;
  const kube::CallId id = watch(h, list.body["metadata"]["resourceVersion"], relisted);
  h.sim.runFor(1s);
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("b")).ok());
  h.sim.runFor(1s);
  ASSERT_EQ(relisted.events.size(), 1u);
  EXPECT_EQ(relisted.events[0].type, kube::WatchEventType::kAdded);
  EXPECT_FALSE(relisted.closed);
  // Ended here, while its recorder lives: the client's destructor would close it later.
  h.api->cancel(id);
  ASSERT_TRUE(relisted.closed);
  EXPECT_EQ(relisted.closed->outcome, kube::TransportOutcome::kAborted);
}

TEST(ModelFaults, AFrozenEtcdHoldsWritesUntilResumeAndAKilledOneFailsThem) {
  Harness h;
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("a")).ok());
  const TimePoint t0 = h.sim.now();
  h.plane->pause("etcd-main");
  EXPECT_FALSE(h.plane->serving("etcd-main"));
  EXPECT_TRUE(h.plane->serving("kube-apiserver-0"));
  h.sim.scheduleAt(t0 + 4s, [&] { h.plane->resume("etcd-main"); });

  Answer write, read, scrape;
  submitAt(h, *h.transport, t0 + 1s,
           request("PATCH", "/api/v1/namespaces/default/configmaps/a", R"({"data":{"k":"v"}})"), write);
  submitAt(h, *h.transport, t0 + 1s, request("GET", "/api/v1/namespaces/default/configmaps/a"), read);
  auto etcd = h.plane->memberTransport("etcd-main");
  submitAt(h, *etcd, t0 + 2s, request("GET", "/metrics"), scrape);
  h.sim.runUntil(t0 + 4s - 1us);
  // Reads come from the apiserver (its watch cache): answered. The write and the
  // frozen process's own /metrics wait.
  ASSERT_TRUE(read.at);
  EXPECT_EQ(read.response.status, 200);
  EXPECT_FALSE(write.at);
  EXPECT_FALSE(scrape.at);
  h.sim.runUntil(t0 + 5s);
  // Both go on at the resume itself: their work was done before the freeze.
  ASSERT_TRUE(write.at && scrape.at);
  EXPECT_EQ(*write.at, t0 + 4s);
  EXPECT_EQ(write.response.status, 200);
  EXPECT_EQ(*scrape.at, t0 + 4s);
  EXPECT_EQ(scrape.response.status, 200);
  EXPECT_TRUE(h.plane->serving("etcd-main"));

  // Killed: the apiserver answers its writes 500; restarted, they succeed once etcd's
  // startup has passed.
  h.plane->kill("etcd-main");
  kube::ApiResult failed = h.api->patchMerge(kConfigMaps.named("a"), {{"data", {{"k", "w"}}}});
  EXPECT_EQ(failed.status, 500) << failed.describe();
  EXPECT_TRUE(h.api->get(kConfigMaps.named("a")).ok());
  std::optional<TimePoint> ready;
  const TimePoint restarted = h.sim.now();
  h.plane->restart("etcd-main", [&] { ready = h.sim.now(); });
  h.sim.runFor(1s);
  ASSERT_TRUE(ready);
  EXPECT_EQ(*ready, restarted + h.plane->options().etcdStartup);
  EXPECT_TRUE(h.api->patchMerge(kConfigMaps.named("a"), {{"data", {{"k", "w"}}}}).ok());
}

TEST(ModelFaults, AWriteHeldByAFrozenEtcdTimesOutOnItsClientsTimeout) {
  Harness h;
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("a")).ok());
  const TimePoint t0 = h.sim.now();
  h.plane->pause("etcd-main");
  Answer write;
  submitAt(h, *h.transport, t0, request("PUT", "/api/v1/namespaces/default/configmaps/a", configMap("a").dump(), 2s),
           write);
  h.sim.runFor(10s);
  ASSERT_TRUE(write.at);
  EXPECT_EQ(*write.at, t0 + 2s);
  EXPECT_EQ(write.response.outcome, kube::TransportOutcome::kTimeout);
  h.plane->resume("etcd-main");
  h.sim.runFor(1s);
  EXPECT_EQ(h.transport->inFlight(), 0u);
}

TEST(ModelFaults, FaultsNameTheModelsMembersAndARestartNeedsAKill) {
  Harness h;
  EXPECT_THROW(h.plane->kill("kube-controller-manager"), std::invalid_argument);
  EXPECT_THROW(h.plane->restart("kube-apiserver-0"), std::logic_error);
  // A frozen member that is killed is down: resume does nothing then.
  h.plane->pause("kube-apiserver-0");
  h.plane->kill("kube-apiserver-0");
  h.plane->resume("kube-apiserver-0");
  EXPECT_FALSE(h.plane->serving("kube-apiserver-0"));
}

}  // namespace
}  // namespace cpscale::model
