// bytes_per_object: exact fits and their confidence intervals on synthetic heaps, the
// rules that make a fit unavailable (small ramp, poor fit), heap after GC preferred,
// per-kind fits over ramp phases, and the Scraper's heap profile fetch.
#include "sim/metrics/bytes_per_object.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include <cmath>

#include "sim/engine/simulator_impl.h"
#include "sim/metrics/scraper.h"
#include "test/support/fake_transport.h"

namespace cpscale::metrics {
namespace {

using std::chrono::seconds;
using testing::at;

TargetScrapes apiserver(std::string name, const std::vector<std::pair<int, std::string>>& scrapes) {
  return testing::target(std::move(name), TargetRole::kApiserver, scrapes);
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return buf;
}
std::string heap(double v) {
  return "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes " + num(v) + "\n";
}
std::string heapAfterGc(double v) { return "cpscale_heap_inuse_after_gc_bytes " + num(v) + "\n"; }
std::string count(const std::string& group, const std::string& resource, double v) {
  return "apiserver_resource_objects{group=\"" + group + "\",resource=\"" + resource + "\"} " + num(v) + "\n";
}

const Figure& get(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure* f = findFigure(figs, name, labels);
  if (!f) {
    static const Figure kMissing = Figure::unavailable("missing", {}, "", Source::kApiserver, "no such figure");
    ADD_FAILURE() << "no figure " << name;
    return kMissing;
  }
  return *f;
}
double valueOf(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure& f = get(figs, name, labels);
  EXPECT_TRUE(f.value) << name << ": " << f.unavailableReason;
  return f.value.value_or(NAN);
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Five scrapes 5 s apart, objects 0..4000 (split over two kinds) and heap
// 1e8 + 3000 * objects + residual[i]. The residual pattern (1, -2, 0, 2, -1) * k sums
// to 0 and is orthogonal to the object count, so the slope stays exactly 3000 and
// SSres = 10 k^2.
std::vector<TargetScrapes> ramp(double k, double base = 0, double step = 1000) {
  const double residual[] = {1, -2, 0, 2, -1};
  std::vector<std::pair<int, std::string>> scrapes;
  for (int i = 0; i < 5; ++i) {
    const double n = base + step * i;
    scrapes.push_back({5 * i, "# TYPE apiserver_resource_objects gauge\n" + count("", "configmaps", n * 0.75) +
                                  count("coordination.k8s.io", "leases", n * 0.25) +
                                  heap(1e8 + 3000 * n + residual[i] * k)});
  }
  return {apiserver("api-0", scrapes)};
}

const Labels kApi0 = {{"apiserver", "api-0"}};

TEST(BytesPerObject, ExactLineGivesTheSlopeWithAZeroWidthInterval) {
  auto figs = bytesPerObjectFigures(ramp(0));
  const Labels labels = {{"apiserver", "api-0"}, {"heap", "go_memstats_heap_inuse_bytes"}};
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object", labels), 3000);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_ci_low", labels), 3000);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_ci_high", labels), 3000);
  EXPECT_NEAR(valueOf(figs, "heap_base_bytes", labels), 1e8, 1e-6);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_r2", labels), 1);
  EXPECT_EQ(valueOf(figs, "bytes_per_object_points", labels), 5);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_all_replicas"), 3000);
  EXPECT_EQ(get(figs, "bytes_per_object").window, Window::kRun);  // no ramp window given
}

TEST(BytesPerObject, ConfidenceIntervalFromStudentsT) {
  const double k = 1e5;
  auto figs = bytesPerObjectFigures(ramp(k));
  // se = sqrt(SSres / (n - 2) / Sxx) = sqrt(10 k^2 / 3 / 1e7); t(0.975, 3 dof) = 3.182446305284263.
  const double half = 3.182446305284263 * std::sqrt(10 * k * k / 3 / 1e7);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object", kApi0), 3000, 1e-6);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object_ci_low", kApi0), 3000 - half, 1e-6);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object_ci_high", kApi0), 3000 + half, 1e-6);
  EXPECT_NEAR(valueOf(figs, "bytes_per_object_r2", kApi0), 9e13 / (9e13 + 10 * k * k), 1e-12);

  BytesPerObjectOptions o;
  o.confidence = 0.99;  // t(0.995, 3 dof) = 5.840909309733351
  auto wide = bytesPerObjectFigures(ramp(k), o);
  EXPECT_NEAR(valueOf(wide, "bytes_per_object_ci_high", kApi0), 3000 + 5.840909309733351 / 3.182446305284263 * half,
              1e-6);
}

TEST(BytesPerObject, SmallRampIsUnavailableWithItsNumbers) {
  // 300 -> 412 objects: 112 added (27% of the final count, but fewer than 500).
  auto figs = bytesPerObjectFigures(ramp(0, 300, 28));
  const Figure& f = get(figs, "bytes_per_object", kApi0);
  ASSERT_FALSE(f.value);
  EXPECT_TRUE(contains(f.unavailableReason, "the ramp added 112 objects (300 to 412)")) << f.unavailableReason;
  EXPECT_TRUE(contains(f.unavailableReason, "at least 500 added")) << f.unavailableReason;
  EXPECT_FALSE(get(figs, "bytes_per_object_ci_low", kApi0).value);
  EXPECT_FALSE(get(figs, "heap_base_bytes", kApi0).value);
  // The fit itself is still shown: it is why the slope is not.
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_r2", kApi0), 1);
  EXPECT_EQ(valueOf(figs, "bytes_per_object_points", kApi0), 5);
  EXPECT_FALSE(get(figs, "bytes_per_object_all_replicas").value);

  // 10000 -> 10600: 600 added, but under 20% of the final count.
  auto onBig = bytesPerObjectFigures(ramp(0, 10000, 150));
  const Figure& g = get(onBig, "bytes_per_object", kApi0);
  ASSERT_FALSE(g.value);
  EXPECT_TRUE(contains(g.unavailableReason, "added 600 objects")) << g.unavailableReason;
  EXPECT_TRUE(contains(g.unavailableReason, "20% of the final count (10600)")) << g.unavailableReason;

  BytesPerObjectOptions lenient;
  lenient.minRampObjects = 100;
  lenient.minRampFraction = 0;
  EXPECT_DOUBLE_EQ(valueOf(bytesPerObjectFigures(ramp(0, 300, 28), lenient), "bytes_per_object", kApi0), 3000);
}

TEST(BytesPerObject, PoorFitIsUnavailableWithR2) {
  // SSres chosen so that r2 = SSreg / (SSreg + SSres) = 0.3, SSreg = 3000^2 * 1e7.
  const double k = std::sqrt(9e13 * (0.7 / 0.3) / 10);
  auto figs = bytesPerObjectFigures(ramp(k));
  const Figure& f = get(figs, "bytes_per_object", kApi0);
  ASSERT_FALSE(f.value);
  EXPECT_TRUE(contains(f.unavailableReason, "r2 0.30 < 0.90 over 5 points")) << f.unavailableReason;
  EXPECT_TRUE(contains(f.unavailableReason, "heapProfilePath")) << f.unavailableReason;
  EXPECT_NEAR(valueOf(figs, "bytes_per_object_r2", kApi0), 0.3, 1e-9);
}

TEST(BytesPerObject, TooFewPointsAndNoRampKeepTheirReasons) {
  BytesPerObjectOptions window;
  window.from = at(5);
  window.to = at(15);
  const auto few = bytesPerObjectFigures(ramp(0), window);  // outlives the reference into it
  const Figure& f = get(few, "bytes_per_object", kApi0);
  ASSERT_FALSE(f.value);
  EXPECT_TRUE(contains(f.unavailableReason, "3 scrape(s) with both heap and object counts")) << f.unavailableReason;
  window.minPoints = 3;
  auto three = bytesPerObjectFigures(ramp(0), window);
  EXPECT_DOUBLE_EQ(valueOf(three, "bytes_per_object", kApi0), 3000);
  EXPECT_EQ(get(three, "bytes_per_object", kApi0).window, Window::kSetup);

  const auto flatFigures = bytesPerObjectFigures(ramp(0, 2000, 0));
  const Figure& flat = get(flatFigures, "bytes_per_object", kApi0);
  ASSERT_FALSE(flat.value);
  EXPECT_TRUE(contains(flat.unavailableReason, "did not change")) << flat.unavailableReason;
}

TEST(BytesPerObject, HeapAfterGcIsPreferredWhenEveryPointHasIt) {
  // /metrics heap carries garbage (alternating +-40 MB); the post-GC heap is exact.
  std::vector<std::pair<int, std::string>> scrapes;
  for (int i = 0; i < 6; ++i) {
    const double n = 1000.0 * i;
    scrapes.push_back({5 * i, count("", "configmaps", n) + heap(1e8 + 3000 * n + (i % 2 ? 4e7 : -4e7)) +
                                  heapAfterGc(9e7 + 2500 * n)});
  }
  auto figs = bytesPerObjectFigures(std::vector{apiserver("api-0", scrapes)});
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object", {{"heap", "cpscale_heap_inuse_after_gc_bytes"}}), 2500);

  // Post-GC samples in only 2 of 6 scrapes (the fetch failed otherwise): not enough
  // for a fit of their own, so the fit reads /metrics and says so.
  std::vector<std::pair<int, std::string>> some;
  for (int i = 0; i < 6; ++i) {
    const double n = 1000.0 * i;
    some.push_back({5 * i, count("", "configmaps", n) + heap(1e8 + 3000 * n) + (i < 2 ? heapAfterGc(1) : "")});
  }
  auto fallback = bytesPerObjectFigures(std::vector{apiserver("api-0", some)});
  EXPECT_DOUBLE_EQ(valueOf(fallback, "bytes_per_object", {{"heap", "go_memstats_heap_inuse_bytes"}}), 3000);
}

TEST(BytesPerObject, RampPhaseNamesRoundTrip) {
  EXPECT_EQ(kindRampPhase("platform", "", "configmaps"), "ramp/platform/configmaps");
  EXPECT_EQ(kindRampPhase("platform", "op0.dormant.cpscale.io", "widgets"),
            "ramp/platform/op0.dormant.cpscale.io/widgets");
  auto cm = kindRampFromPhase("ramp/platform/configmaps", at(1), at(2));
  ASSERT_TRUE(cm);
  EXPECT_EQ(cm->workload, "platform");
  EXPECT_EQ(cm->group, "");
  EXPECT_EQ(cm->resource, "configmaps");
  EXPECT_EQ(cm->kind(), "configmaps");
  EXPECT_EQ(cm->start, at(1));
  EXPECT_EQ(cm->end, at(2));
  auto w = kindRampFromPhase("ramp/platform/op0.dormant.cpscale.io/widgets", at(1), at(2));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->group, "op0.dormant.cpscale.io");
  EXPECT_EQ(w->resource, "widgets");
  EXPECT_EQ(w->kind(), "op0.dormant.cpscale.io/widgets");
  auto rbac = kindRampFromPhase(kindRampPhase("d", "rbac.authorization.k8s.io", "roles"), at(0), at(0));
  ASSERT_TRUE(rbac);
  EXPECT_EQ(rbac->kind(), "rbac.authorization.k8s.io/roles");
  EXPECT_FALSE(kindRampFromPhase("ramp/platform", at(0), at(1)));  // the whole population
  EXPECT_FALSE(kindRampFromPhase("setup", at(0), at(1)));
  EXPECT_FALSE(kindRampFromPhase("ramp/platform/", at(0), at(1)));
}

// ConfigMaps ramp 0..1000 over [0, 20] s, then widgets 0..1000 over [25, 45] s; a
// ConfigMap costs 3000 bytes and a widget 15000.
std::vector<TargetScrapes> twoKindRamps() {
  std::vector<std::pair<int, std::string>> scrapes;
  for (int s = 0; s <= 50; s += 5) {
    const double cm = std::min(1000.0, 50.0 * s);
    const double w = s <= 25 ? 0 : std::min(1000.0, 50.0 * (s - 25));
    scrapes.push_back({s, "# TYPE apiserver_resource_objects gauge\n" + count("", "configmaps", cm) +
                              count("op0.dormant.cpscale.io", "widgets", w) + count("", "secrets", 7) +
                              heap(1e8 + 3000 * cm + 15000 * w)});
  }
  return {apiserver("api-0", scrapes)};
}

TEST(BytesPerKind, EachKindIsFittedWithinItsOwnRamp) {
  std::vector<KindRamp> ramps = {*kindRampFromPhase("ramp/platform/configmaps", at(0), at(20)),
                                 *kindRampFromPhase("ramp/platform/op0.dormant.cpscale.io/widgets", at(25), at(45))};
  auto figs = bytesPerKindFigures(twoKindRamps(), ramps);
  const Labels cm = {{"apiserver", "api-0"}, {"kind", "configmaps"}, {"workload", "platform"}};
  const Labels w = {{"apiserver", "api-0"}, {"kind", "op0.dormant.cpscale.io/widgets"}, {"workload", "platform"}};
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object", cm), 3000);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_ci_low", cm), 3000);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object_ci_high", cm), 3000);
  EXPECT_EQ(valueOf(figs, "bytes_per_object_points", cm), 5);
  EXPECT_DOUBLE_EQ(valueOf(figs, "bytes_per_object", w), 15000);
  EXPECT_EQ(get(figs, "bytes_per_object", w).window, Window::kSetup);
  EXPECT_EQ(get(figs, "bytes_per_object", w).source, Source::kApiserver);
  EXPECT_FALSE(findFigure(figs, "heap_base_bytes"));  // an intercept per kind means nothing
}

TEST(BytesPerKind, ShortRampAdvisesASlowerCreationOrFasterScrapes) {
  std::vector<KindRamp> ramps = {*kindRampFromPhase("ramp/platform/configmaps", at(3), at(12)),
                                 *kindRampFromPhase("ramp/platform/secrets", at(0), at(50)),
                                 *kindRampFromPhase("ramp/platform/rbac.authorization.k8s.io/roles", at(0), at(50))};
  auto figs = bytesPerKindFigures(twoKindRamps(), ramps);
  const Figure& f = get(figs, "bytes_per_object", {{"kind", "configmaps"}});
  ASSERT_FALSE(f.value);
  EXPECT_TRUE(contains(f.unavailableReason, "the ramp lasted 9.0 s and holds 2 scrape(s); the fit needs 5"))
      << f.unavailableReason;
  EXPECT_TRUE(contains(f.unavailableReason, "createQps")) << f.unavailableReason;
  EXPECT_EQ(valueOf(figs, "bytes_per_object_points", {{"kind", "configmaps"}}), 2);
  // A constant count is no ramp; a kind the apiserver does not count is named.
  EXPECT_TRUE(contains(get(figs, "bytes_per_object", {{"kind", "secrets"}}).unavailableReason, "did not change"));
  EXPECT_TRUE(contains(get(figs, "bytes_per_object", {{"kind", "rbac.authorization.k8s.io/roles"}}).unavailableReason,
                       "no series for rbac.authorization.k8s.io/roles"));
}

// ---- the Scraper's heap profile ----

// The tail of a real `debug=1` heap profile as Go's runtime/pprof writes it
// (writeHeapInternal): sampled records, then the runtime.MemStats block.
const std::string kProfile =
    "heap profile: 1450: 61277696 [221935: 1811257240] @ heap/1048576\n"
    "1: 58720256 [1: 58720256] @ 0x4f6bd2 0x4f6b6d 0x4f1f3c 0x4f8a4b 0x47b141\n"
    "#\t0x4f6bd1\tk8s.io/apiserver/pkg/storage/cacher.newWatchCache+0x51\t"
    "k8s.io/apiserver/pkg/storage/cacher/watch_cache.go:215\n"
    "\n"
    "# runtime.MemStats\n"
    "# Alloc = 68493128\n"
    "# TotalAlloc = 1902287352\n"
    "# Sys = 144721160\n"
    "# Lookups = 0\n"
    "# Mallocs = 16034521\n"
    "# Frees = 15725360\n"
    "# HeapAlloc = 68493128\n"
    "# HeapSys = 121012224\n"
    "# HeapIdle = 45940736\n"
    "# HeapInuse = 75071488\n"
    "# HeapReleased = 39600128\n"
    "# HeapObjects = 309161\n"
    "# Stack = 3604480 / 3604480\n"
    "# MSpan = 1061760 / 1533120\n"
    "# MCache = 4800 / 15600\n"
    "# BuckHashSys = 1774591\n"
    "# GCSys = 9877936\n"
    "# OtherSys = 902789\n"
    "# NextGC = 131349888\n"
    "# LastGC = 1764762345123456789\n"
    "# PauseNs = [52310 61020 0 0]\n"
    "# PauseEnd = [1764762340000000000 1764762345123456789 0 0]\n"
    "# NumGC = 87\n"
    "# NumForcedGC = 12\n"
    "# GCCPUFraction = 0.0012839\n"
    "# DebugGC = false\n"
    "# MaxRSS = 160432128\n";

TEST(HeapProfile, HeapInuseFromTheMemStatsBlock) {
  EXPECT_EQ(heapInuseFromProfile(kProfile), 75071488.0);
  EXPECT_FALSE(heapInuseFromProfile("heap profile: 1: 2 [3: 4] @ heap/1048576\n"));  // no MemStats block
  EXPECT_FALSE(heapInuseFromProfile("\x1f\x8b binary pprof"));                       // debug=0
  EXPECT_FALSE(heapInuseFromProfile("# runtime.MemStats\n# HeapInuse = 12x\n"));
  EXPECT_EQ(heapInuseFromProfile("# runtime.MemStats\r\n# Alloc = 1\r\n# HeapInuse = 42\r\n"), 42.0);
}

class ScraperHeapTest : public ::testing::Test {
 protected:
  std::shared_ptr<kube::FakeTransport> transport() {
    auto t = std::make_shared<kube::FakeTransport>(static_cast<engine::Scheduler&>(sim_));
    t->setLatency(seconds(1));
    return t;
  }
  engine::VirtualSimulator sim_;
};

TEST_F(ScraperHeapTest, HeapAfterGcJoinsTheScrapeRowAndFailuresOnlyCount) {
  auto t = transport();
  int metrics = 0, profiles = 0;
  t->setHandler([&](const kube::HttpRequest& r) {
    kube::HttpResponse resp;
    resp.status = 200;
    if (r.path == "/metrics") {
      resp.body = heap(2e8) + count("", "configmaps", 100.0 * metrics++);
    } else if (profiles++ == 1) {
      resp.status = 403;
      resp.body = "forbidden: User cannot get path /debug/pprof/heap";
    } else {
      std::string body = kProfile;
      body.replace(body.find("75071488"), 8, std::to_string(75071488 + profiles));
      resp.body = body;
    }
    return resp;
  });
  ScrapeTarget target{{"api-0", TargetRole::kApiserver, "", {}}, t};
  target.heapProfilePath = "/debug/pprof/heap?gc=1&debug=1";
  Scraper scraper(sim_, {target});
  scraper.start();
  sim_.runUntil(at(17));

  // Each round: /metrics, then the profile once /metrics has answered.
  ASSERT_EQ(t->requests().size(), 8u);
  for (std::size_t i = 0; i < 8; i += 2) {
    EXPECT_EQ(t->requests()[i].request.path, "/metrics");
    EXPECT_EQ(t->requests()[i + 1].request.path, "/debug/pprof/heap?gc=1&debug=1");
    EXPECT_EQ(t->requests()[i + 1].submittedAt, t->requests()[i].submittedAt + seconds(1));
    EXPECT_EQ(t->requests()[i + 1].request.timeout, seconds(5));
  }
  const TargetScrapes& ts = scraper.targets()[0];
  ASSERT_EQ(ts.history.scrapes(), 4u);  // the failed profile did not fail its scrape
  EXPECT_EQ(ts.status.successes, 4u);
  EXPECT_EQ(ts.status.failures, 0u);
  const auto& ids = ts.history.seriesNamed(kHeapInuseAfterGc);
  ASSERT_EQ(ids.size(), 1u);
  EXPECT_EQ(ts.history.familyType(kHeapInuseAfterGc), MetricType::kGauge);
  EXPECT_EQ(ts.history.value(0, ids[0]), 75071489.0);
  EXPECT_FALSE(ts.history.value(1, ids[0]));  // the 403
  EXPECT_EQ(ts.history.value(2, ids[0]), 75071491.0);
  EXPECT_EQ(ts.history.value(3, ids[0]), 75071492.0);
  EXPECT_EQ(ts.history.time(2), at(10));  // the row of the round that asked

  const HeapProfileStatus& hs = scraper.heapProfileStatus()[0];
  EXPECT_EQ(hs.attempts, 4u);
  EXPECT_EQ(hs.failures, 1u);
  EXPECT_EQ(hs.lastError, "HTTP 403: forbidden: User cannot get path /debug/pprof/heap");
}

TEST_F(ScraperHeapTest, SlowProfileMakesTheNextRoundAnOverrunAndOffMeansNoFetch) {
  auto t = transport();
  t->setLatency(seconds(3));  // /metrics at +3, the profile at +6: past the next round at 5
  t->setHandler([](const kube::HttpRequest& r) {
    kube::HttpResponse resp;
    resp.status = 200;
    resp.body = r.path == "/metrics" ? heap(1) : kProfile;
    return resp;
  });
  ScrapeTarget target{{"api-0", TargetRole::kApiserver, "", {}}, t};
  target.heapProfilePath = "/debug/pprof/heap?gc=1&debug=1";
  auto plain = transport();
  plain->setHandler([](const kube::HttpRequest&) {
    kube::HttpResponse resp;
    resp.status = 200;
    resp.body = heap(1);
    return resp;
  });
  Scraper scraper(sim_, {target, {{"api-1", TargetRole::kApiserver, "", {}}, plain}});
  scraper.start();
  sim_.runUntil(at(7));
  EXPECT_EQ(scraper.targets()[0].history.scrapes(), 1u);
  EXPECT_EQ(scraper.targets()[0].status.overruns, 1u);
  EXPECT_EQ(scraper.targets()[0].history.value(0, scraper.targets()[0].history.seriesNamed(kHeapInuseAfterGc)[0]),
            75071488.0);
  for (const auto& r : plain->requests()) EXPECT_EQ(r.request.path, "/metrics");
  EXPECT_EQ(scraper.heapProfileStatus()[1].attempts, 0u);
}

}  // namespace
}  // namespace cpscale::metrics
