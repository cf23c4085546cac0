// Watch fan-out in the model plane (plane_watches.cc), on raw watch streams of the
// client transport: every change sent to each watcher that selects it, each line
// counted and charged on its replica, and a consumer that refuses a line ending only
// its own watch, in the middle of the fan-out.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sim/kube/resource.h"
#include "test/unit/model/model_harness.h"

namespace cpscale::model {
namespace {

using namespace std::chrono_literals;
using kube::ResourceRef;
using nlohmann::json;
using testing::configMap;
using testing::Harness;
using testing::kConfigMaps;

// One watch stream as the transport carries it: its lines, and its end.
struct Stream {
  std::vector<std::string> lines;
  std::optional<kube::HttpResponse> end;
  bool refuse = false;  // the consumer refuses the next line
};

void open(Harness& h, Stream& s, const std::string& query = "", bool perActor = false) {
  kube::HttpRequest req;
  req.perActor = perActor;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=600" + query;
  req.onBodyChunk = [&s](std::string_view chunk) {
    if (s.refuse) return false;
    s.lines.emplace_back(chunk);
    return true;
  };
  h.transport->submit(std::move(req), [&s](kube::HttpResponse r) { s.end = std::move(r); });
}

double watchEventsTotal(Harness& h) {
  return std::max(0.0, testing::scraped(h, "kube-apiserver-0", "apiserver_watch_events_total"));
}

TEST(ModelWatches, EachChangeGoesToEveryWatcherThatSelectsItAndIsCountedOnce) {
  Harness h;
  Stream a, b, none;
  open(h, a);
  open(h, b);
  open(h, none, "&fieldSelector=metadata.name%3Dother");
  h.sim.runFor(1s);
  ASSERT_EQ(h.plane->stats().watchers, 3u);
  const double before = watchEventsTotal(h);

  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c1")).ok());
  h.sim.runFor(1s);
  ASSERT_EQ(a.lines.size(), 1u);
  ASSERT_EQ(b.lines.size(), 1u);
  EXPECT_TRUE(none.lines.empty());
  EXPECT_EQ(a.lines[0], b.lines[0]);
  const json event = json::parse(a.lines[0]);
  EXPECT_EQ(event["type"], "ADDED");
  EXPECT_EQ(event["object"]["metadata"]["name"], "c1");
  EXPECT_EQ(h.plane->stats().watchEventsSent, 2u);
  EXPECT_EQ(watchEventsTotal(h) - before, 2);
}

TEST(ModelWatches, AnActorsOwnWatchStandsForAsManyWatchesAsItsActorInASampledRun) {
  // A client of weight 4 (one sampled actor for four): its ConfigMap (4 objects) reaches
  // a workload's own watch once per object (4 events), and an actor's own watch (a
  // node's, perActor) once per object for each of the 4 watches it stands for (16).
  Harness h({}, 4);
  Stream shared, own;
  open(h, shared);
  h.sim.runFor(1s);
  const double one = watchEventsTotal(h);
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c1")).ok());
  h.sim.runFor(1s);
  ASSERT_EQ(shared.lines.size(), 1u);
  EXPECT_EQ(watchEventsTotal(h) - one, 4);
  open(h, own, "", true);
  h.sim.runFor(1s);
  const double two = watchEventsTotal(h);
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c2")).ok());
  h.sim.runFor(1s);
  ASSERT_EQ(own.lines.size(), 2u);  // c1 as its initial state, then c2
  EXPECT_EQ(watchEventsTotal(h) - two, 4 + 16);
}

TEST(ModelWatches, AWatchThatAsksForBookmarksGetsOneAMinute) {
  // As the watch cache's bookmarkFrequency: a bookmark a minute, carrying the store's
  // revision, until the one 2 s before the deadline's end; none without the ask. Each is
  // an event sent (apiserver_watch_events_total counts them as the live plane does).
  Harness h;
  Stream marked, plain, short_;
  open(h, marked, "&allowWatchBookmarks=true");
  open(h, plain);
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=90&allowWatchBookmarks=true";
  req.onBodyChunk = [&](std::string_view chunk) {
    short_.lines.emplace_back(chunk);
    return true;
  };
  h.transport->submit(std::move(req), [&](kube::HttpResponse r) { short_.end = std::move(r); });
  h.sim.runFor(1s);
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c1")).ok());
  h.sim.runFor(std::chrono::seconds(210));
  auto bookmarks = [](const Stream& s) {
    return std::count_if(s.lines.begin(), s.lines.end(),
                         [](const std::string& l) { return json::parse(l)["type"] == "BOOKMARK"; });
  };
  EXPECT_EQ(bookmarks(marked), 3);  // at 1, 2 and 3 minutes
  EXPECT_EQ(bookmarks(plain), 0);
  // 90 s: one at a minute, then the deadline's own before it ends.
  EXPECT_EQ(bookmarks(short_), 2);
  ASSERT_TRUE(short_.end.has_value());
  const json last = json::parse(marked.lines.back());
  const auto created = h.api->get(kConfigMaps.named("c1")).body["metadata"]["resourceVersion"].get<std::string>();
  EXPECT_GE(std::stoull(last["object"]["metadata"]["resourceVersion"].get<std::string>()), std::stoull(created));
}

TEST(ModelWatches, AConsumerThatRefusesALineEndsOnlyItsOwnWatch) {
  Harness h;
  Stream first, refusing, last;
  open(h, first);
  open(h, refusing);
  open(h, last);
  h.sim.runFor(1s);
  refusing.refuse = true;

  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c1")).ok());
  h.sim.runFor(1s);
  ASSERT_TRUE(refusing.end);
  EXPECT_EQ(refusing.end->outcome, kube::TransportOutcome::kAborted);
  EXPECT_TRUE(refusing.lines.empty());
  EXPECT_EQ(first.lines.size(), 1u);
  EXPECT_EQ(last.lines.size(), 1u);
  EXPECT_EQ(h.plane->stats().watchers, 2u);

  // The fan-out goes on without it.
  ASSERT_TRUE(h.api->create(kConfigMaps, configMap("c2")).ok());
  h.sim.runFor(1s);
  EXPECT_EQ(first.lines.size(), 2u);
  EXPECT_EQ(last.lines.size(), 2u);
  EXPECT_FALSE(first.end);
  EXPECT_FALSE(last.end);
}

}  // namespace
}  // namespace cpscale::model
