#include "sim/metrics/controller_figures.h"

#include "sim/metrics/bytes_per_object.h"
#include "sim/metrics/figures.h"

#include <gtest/gtest.h>

#include "test/support/scrapes.h"

#include <stdexcept>
#include <tuple>

namespace cpscale::metrics {
namespace {

using testing::at;
using testing::target;

const Figure& figure(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  for (const Figure& f : figs)
    if (f.name == name && f.labels == labels) return f;
  throw std::runtime_error("no figure " + std::string(name) + " with exactly those labels");
}

double valueOf(const std::vector<Figure>& figs, std::string_view name, const Labels& labels = {}) {
  const Figure& f = figure(figs, name, labels);
  if (!f.value) throw std::runtime_error(std::string(name) + " unavailable: " + f.unavailableReason);
  return *f.value;
}

bool has(const std::vector<Figure>& figs, std::string_view name, const Labels& labels) {
  for (const Figure& f : figs)
    if (f.name == name && f.labels == labels) return true;
  return false;
}

std::string startTime(double s) {
  return "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds " + std::to_string(s) + "\n";
}

// workqueue_depth and workqueue_adds_total of queues given as (name, depth, adds).
std::string queues(std::vector<std::tuple<std::string, double, double>> qs) {
  std::string depth = "# TYPE workqueue_depth gauge\n", adds = "# TYPE workqueue_adds_total counter\n";
  for (const auto& [name, d, a] : qs) {
    depth += "workqueue_depth{name=\"" + name + "\"} " + std::to_string(d) + "\n";
    adds += "workqueue_adds_total{name=\"" + name + "\"} " + std::to_string(a) + "\n";
  }
  return depth + adds;
}

// The node lifecycle and taint eviction controllers' series for one zone.
std::string nodeLifecycle(double evictions, double unhealthy, double deletions, std::string zone = "") {
  return "# TYPE node_collector_evictions_total counter\nnode_collector_evictions_total{zone=\"" + zone + "\"} " +
         std::to_string(evictions) + "\n# TYPE node_collector_unhealthy_nodes_in_zone gauge\n" +
         "node_collector_unhealthy_nodes_in_zone{zone=\"" + zone + "\"} " + std::to_string(unhealthy) +
         "\n# TYPE taint_eviction_controller_pod_deletions_total counter\n"
         "taint_eviction_controller_pod_deletions_total " +
         std::to_string(deletions) + "\n";
}

const Labels kCm{{"component", "kube-controller-manager"}};
Labels cmQueue(std::string q) { return {{"component", "kube-controller-manager"}, {"queue", std::move(q)}}; }

TEST(ControllerFigures, WorkqueueDepthMaxAndAddsOfTheBusyQueues) {
  std::vector<TargetScrapes> ts{
      target("kube-controller-manager", TargetRole::kControllerManager,
             {{0, queues({{"replicaset", 0, 100}, {"node_lifecycle_controller", 1, 10}, {"idle", 0, 5}})},
              {10, queues({{"replicaset", 7, 150}, {"node_lifecycle_controller", 3, 20}, {"idle", 0, 5}})},
              {20, queues({{"replicaset", 2, 400}, {"node_lifecycle_controller", 0, 30}, {"idle", 0, 5}})}})};
  auto figs = controllerFigures(ts);
  // The peak over the window, not the last value, and the increase, not the counter.
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", cmQueue("replicaset")), 7);
  EXPECT_EQ(valueOf(figs, "workqueue_adds", cmQueue("replicaset")), 300);
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", cmQueue("node_lifecycle_controller")), 3);
  EXPECT_EQ(valueOf(figs, "workqueue_adds", cmQueue("node_lifecycle_controller")), 20);
  // A queue that neither held nor took an item is left out.
  EXPECT_FALSE(has(figs, "workqueue_depth_max", cmQueue("idle")));
  EXPECT_FALSE(has(figs, "workqueue_adds", cmQueue("idle")));
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", kCm), 7);
  EXPECT_EQ(valueOf(figs, "workqueue_adds", kCm), 320);
  EXPECT_EQ(figure(figs, "workqueue_adds", kCm).source, Source::kControllerManager);
  // The component-wide figure comes first, so a gate naming only the component finds it.
  EXPECT_EQ(findFigure(figs, "workqueue_depth_max", kCm)->labels, kCm);
}

TEST(ControllerFigures, CounterIncreaseAcrossAProcessRestart) {
  // The controller-manager restarts between 10 s and 20 s; its new counters are already
  // above the old ones at the first scrape after the restart. A reset-unaware increase
  // would take 150 -> 170 as 20 adds and 4 -> 6 as 2 evictions.
  auto body = [](double start, double depth, double adds, double evictions, double unhealthy, double deletions) {
    return startTime(start) + queues({{"replicaset", depth, adds}}) + nodeLifecycle(evictions, unhealthy, deletions);
  };
  std::vector<TargetScrapes> ts{target("kube-controller-manager", TargetRole::kControllerManager,
                                       {{0, body(1000, 0, 100, 1, 0, 0)},
                                        {10, body(1000, 0, 150, 4, 2, 3)},
                                        {20, body(2000, 4, 170, 6, 1, 2)},
                                        {30, body(2000, 0, 180, 6, 0, 2)}})};
  auto figs = controllerFigures(ts);
  EXPECT_EQ(valueOf(figs, "workqueue_adds", cmQueue("replicaset")), 50 + 170 + 10);
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", cmQueue("replicaset")), 4);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_evictions"), 3 + 6);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_evictions", {{"zone", ""}}), 3 + 6);
  EXPECT_EQ(valueOf(figs, "taint_eviction_pod_deletions"), 3 + 2);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_unhealthy_nodes_max"), 2);
}

TEST(ControllerFigures, NodeLifecyclePerZoneAndAcrossZones) {
  auto body = [](double evA, double unA, double evB, double unB) {
    return "# TYPE node_collector_evictions_total counter\n"
           "node_collector_evictions_total{zone=\"zone-a\"} " +
           std::to_string(evA) + "\nnode_collector_evictions_total{zone=\"zone-b\"} " + std::to_string(evB) +
           "\n# TYPE node_collector_unhealthy_nodes_in_zone gauge\n"
           "node_collector_unhealthy_nodes_in_zone{zone=\"zone-a\"} " +
           std::to_string(unA) + "\nnode_collector_unhealthy_nodes_in_zone{zone=\"zone-b\"} " + std::to_string(unB) +
           "\n# TYPE taint_eviction_controller_pod_deletions_total counter\n"
           "taint_eviction_controller_pod_deletions_total 0\n";
  };
  std::vector<TargetScrapes> ts{target("kube-controller-manager", TargetRole::kControllerManager,
                                       {{0, body(0, 0, 0, 0)}, {10, body(2, 3, 0, 4)}, {20, body(5, 1, 1, 6)}})};
  auto figs = controllerFigures(ts);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_evictions"), 6);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_evictions", {{"zone", "zone-a"}}), 5);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_evictions", {{"zone", "zone-b"}}), 1);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_unhealthy_nodes_max", {{"zone", "zone-a"}}), 3);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_unhealthy_nodes_max", {{"zone", "zone-b"}}), 6);
  // The most not-Ready nodes at one time (1 + 6 at 20 s), not the sum of each zone's peak.
  EXPECT_EQ(valueOf(figs, "node_lifecycle_unhealthy_nodes_max"), 7);
  EXPECT_EQ(valueOf(figs, "taint_eviction_pod_deletions"), 0);
}

TEST(ControllerFigures, NodeLifecycleThatSawNoNodeIsUnavailableNotZero) {
  std::vector<TargetScrapes> ts{target("kube-controller-manager", TargetRole::kControllerManager,
                                       {{0, queues({{"replicaset", 0, 0}})}, {10, queues({{"replicaset", 0, 0}})}})};
  auto figs = controllerFigures(ts);
  for (std::string_view name : {"node_lifecycle_evictions", "node_lifecycle_unhealthy_nodes_max"}) {
    const Figure& f = figure(figs, name);
    EXPECT_FALSE(f.available()) << name;
    EXPECT_NE(f.unavailableReason.find("is not exposed by kube-controller-manager kube-controller-manager (the node "
                                       "lifecycle controller is off, or has seen no node)"),
              std::string::npos)
        << f.unavailableReason;
  }
  EXPECT_FALSE(figure(figs, "taint_eviction_pod_deletions").available());
  // The queues were there, idle: measured 0, not unavailable.
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", kCm), 0);
  EXPECT_EQ(valueOf(figs, "workqueue_adds", kCm), 0);
}

TEST(ControllerFigures, OneScrapeGivesPeaksButNoIncreases) {
  std::vector<TargetScrapes> ts{target("kube-controller-manager", TargetRole::kControllerManager,
                                       {{0, queues({{"replicaset", 3, 10}}) + nodeLifecycle(1, 2, 0)}})};
  auto figs = controllerFigures(ts);
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", kCm), 3);
  EXPECT_EQ(valueOf(figs, "node_lifecycle_unhealthy_nodes_max"), 2);
  for (std::string_view name : {"workqueue_adds", "node_lifecycle_evictions", "taint_eviction_pod_deletions"}) {
    const Figure& f = figure(figs, name, name == "workqueue_adds" ? kCm : Labels{});
    EXPECT_FALSE(f.available()) << name;
    EXPECT_EQ(f.unavailableReason,
              "kube-controller-manager kube-controller-manager answered 1 scrape(s); this figure needs 2");
  }
}

std::string schedulerBody(double active, double backoff, double unschedulable, double scheduled, double errors,
                          double leader) {
  std::string s =
      "# TYPE scheduler_pending_pods gauge\n"
      "scheduler_pending_pods{queue=\"active\"} " +
      std::to_string(active) + "\nscheduler_pending_pods{queue=\"backoff\"} " + std::to_string(backoff) +
      "\nscheduler_pending_pods{queue=\"unschedulable\"} " + std::to_string(unschedulable) +
      "\n# TYPE scheduler_schedule_attempts_total counter\n"
      "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} " +
      std::to_string(scheduled) + "\nscheduler_schedule_attempts_total{profile=\"batch\",result=\"scheduled\"} " +
      std::to_string(scheduled) + "\n";
  if (errors > 0)
    s += "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"error\"} " + std::to_string(errors) +
         "\n";
  return s + "# TYPE leader_election_master_status gauge\nleader_election_master_status{name=\"kube-scheduler\"} " +
         std::to_string(leader) + "\n";
}

TEST(ControllerFigures, SchedulerPendingAndAttempts) {
  std::vector<TargetScrapes> ts{target("kube-scheduler", TargetRole::kScheduler,
                                       {{0, schedulerBody(0, 0, 0, 10, 0, 0)},
                                        {10, schedulerBody(40, 5, 2, 30, 0, 1)},
                                        {20, schedulerBody(10, 30, 20, 70, 4, 1)}})};
  auto figs = controllerFigures(ts);
  EXPECT_EQ(valueOf(figs, "scheduler_pending_pods_max", {{"queue", "active"}}), 40);
  EXPECT_EQ(valueOf(figs, "scheduler_pending_pods_max", {{"queue", "backoff"}}), 30);
  EXPECT_EQ(valueOf(figs, "scheduler_pending_pods_max", {{"queue", "unschedulable"}}), 20);
  EXPECT_EQ(valueOf(figs, "scheduler_pending_pods_max"), 60);  // 10 + 30 + 20 at 20 s
  // Summed over both profiles; the error series appeared with its first attempt, and no
  // series means no attempt of that result.
  EXPECT_EQ(valueOf(figs, "scheduler_schedule_attempts", {{"result", "scheduled"}}), 120);
  EXPECT_EQ(valueOf(figs, "scheduler_schedule_attempts", {{"result", "error"}}), 4);
  EXPECT_EQ(valueOf(figs, "scheduler_schedule_attempts", {{"result", "unschedulable"}}), 0);
  EXPECT_EQ(valueOf(figs, "scheduler_schedule_attempts"), 124);
  EXPECT_EQ(valueOf(figs, "leader_election_master", {{"component", "kube-scheduler"}, {"name", "kube-scheduler"}}), 1);
  EXPECT_EQ(figure(figs, "scheduler_pending_pods_max").source, Source::kScheduler);
  // This scheduler exposes no workqueue: no workqueue figures of its own, not even unavailable ones.
  for (const Figure& f : figs) {
    if (!f.name.starts_with("workqueue_")) continue;
    EXPECT_NE(labelValue(f.labels, "component"), "kube-scheduler") << f.name;
  }
}

TEST(ControllerFigures, WithoutTargetsTheHeadlineFiguresAreUnavailableWithTheReason) {
  // An apiserver runs workqueues too: they are not the controller-manager's.
  std::vector<TargetScrapes> ts{target("kube-apiserver-0", TargetRole::kApiserver,
                                       {{0, queues({{"crd_naming_condition_controller", 5, 10}})},
                                        {10, queues({{"crd_naming_condition_controller", 9, 20}})}})};
  auto figs = controllerFigures(ts);
  const std::string noCm =
      "no kube-controller-manager was scraped (a user's cluster: its controller-manager is not "
      "reachable, or the profile turned it off)";
  for (auto [name, labels] :
       std::initializer_list<std::pair<const char*, Labels>>{{"workqueue_depth_max", kCm},
                                                             {"workqueue_adds", kCm},
                                                             {"node_lifecycle_evictions", {}},
                                                             {"node_lifecycle_unhealthy_nodes_max", {}},
                                                             {"taint_eviction_pod_deletions", {}}}) {
    const Figure& f = figure(figs, name, labels);
    EXPECT_FALSE(f.available()) << name;
    EXPECT_EQ(f.unavailableReason, noCm) << name;
    EXPECT_EQ(f.source, Source::kControllerManager) << name;
  }
  for (const char* name : {"scheduler_pending_pods_max", "scheduler_schedule_attempts"}) {
    const Figure& f = figure(figs, name);
    EXPECT_FALSE(f.available()) << name;
    EXPECT_EQ(f.unavailableReason.rfind("no kube-scheduler was scraped", 0), 0u) << f.unavailableReason;
    EXPECT_EQ(f.source, Source::kScheduler) << name;
  }
  for (const Figure& f : figs) EXPECT_FALSE(f.available()) << f.name;
  EXPECT_EQ(figs.size(), 7u);
}

std::string apiserverBody(double heap, double leasePuts, double nodes) {
  return "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes " + std::to_string(heap) +
         "\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes " + std::to_string(2 * heap) +
         "\n# TYPE apiserver_request_total counter\n"
         "apiserver_request_total{code=\"200\",group=\"coordination.k8s.io\",resource=\"leases\",verb=\"PUT\"} " +
         std::to_string(leasePuts) + "\n# TYPE apiserver_resource_objects gauge\n" +
         "apiserver_resource_objects{group=\"\",resource=\"nodes\"} " + std::to_string(nodes) + "\n";
}

TEST(ControllerFigures, ApiserverAndEtcdFiguresIgnoreControllerTargets) {
  std::vector<TargetScrapes> apiOnly{target("kube-apiserver-0", TargetRole::kApiserver,
                                            {{0, apiserverBody(1e8, 0, 0)},
                                             {10, apiserverBody(1.5e8, 100, 1000)},
                                             {20, apiserverBody(2e8, 300, 2000)},
                                             {30, apiserverBody(2.5e8, 600, 3000)},
                                             {40, apiserverBody(3e8, 1000, 4000)}})};
  // The controller-manager's exposition has what apiserver figures read (heap, RSS, a
  // request counter and object counts of the same names), and it also answers in rounds
  // between the apiserver's: taken for an apiserver it would join every replica figure.
  std::string cmBody = apiserverBody(5e7, 7, 9) + queues({{"replicaset", 2, 3}});
  std::vector<TargetScrapes> both = apiOnly;
  both.push_back(target("kube-controller-manager", TargetRole::kControllerManager,
                        {{0, cmBody},
                         {5, cmBody},
                         {10, cmBody},
                         {15, cmBody},
                         {20, cmBody},
                         {25, cmBody},
                         {30, cmBody},
                         {35, cmBody},
                         {40, cmBody}}));
  auto apiserverAndEtcd = [](std::span<const TargetScrapes> ts) {
    std::vector<Figure> out;
    for (auto fs : {writeFigures(ts), apiserverRequestFigures(ts), leaseShareFigures(ts), apiserverMemoryFigures(ts),
                    bytesPerObjectFigures(ts), etcdFigures(ts), serverLatencyFigures(ts)})
      out.insert(out.end(), fs.begin(), fs.end());
    return out;
  };
  auto expected = apiserverAndEtcd(apiOnly);
  auto actual = apiserverAndEtcd(both);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(actual[i].name, expected[i].name);
    EXPECT_EQ(actual[i].labels, expected[i].labels) << expected[i].name;
    EXPECT_EQ(actual[i].value, expected[i].value) << expected[i].name;
    EXPECT_EQ(actual[i].unavailableReason, expected[i].unavailableReason) << expected[i].name;
  }
  EXPECT_EQ(valueOf(actual, "apiserver_heap_inuse_bytes_all_replicas"), 3e8);
  EXPECT_EQ(valueOf(actual, "write_qps"), 25);
  // It is a target of its own in scrape health, and its figures are its own.
  auto health = scrapeHealthFigures(both);
  Labels cmTarget{{"role", "kube-controller-manager"}, {"target", "kube-controller-manager"}};
  EXPECT_EQ(valueOf(health, "scrape_successes", cmTarget), 9);
  EXPECT_EQ(valueOf(controllerFigures(both), "workqueue_depth_max", kCm), 2);
}

TEST(ControllerFigures, RoleAndSourceNames) {
  EXPECT_EQ(toString(TargetRole::kControllerManager), "kube-controller-manager");
  EXPECT_EQ(toString(TargetRole::kScheduler), "kube-scheduler");
  EXPECT_EQ(toString(TargetRole::kApiserver), "apiserver");
  EXPECT_EQ(toString(Source::kControllerManager), "kube-controller-manager");
  EXPECT_EQ(toString(Source::kScheduler), "kube-scheduler");
  EXPECT_EQ(roleName(TargetRole::kApiserver), "kube-apiserver");
}

TEST(ControllerFigures, AllFiguresIncludesThem) {
  std::vector<TargetScrapes> ts{target("kube-controller-manager", TargetRole::kControllerManager,
                                       {{0, queues({{"replicaset", 1, 0}})}, {10, queues({{"replicaset", 4, 8}})}})};
  auto figs = allFigures(ts);
  EXPECT_EQ(valueOf(figs, "workqueue_depth_max", cmQueue("replicaset")), 4);
  EXPECT_NE(findFigure(figs, "scheduler_pending_pods_max"), nullptr);
}

}  // namespace
}  // namespace cpscale::metrics
