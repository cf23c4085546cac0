// Workload summaries merged across workers, and the node lifecycle figures drawn from
// the kubelet fleet's: measured, or unavailable with the reason.
#include "sim/run/workload_figures.h"

#include <gtest/gtest.h>

#include <set>

#include "workloads/workload.h"

namespace cpscale::run {
namespace {

using nlohmann::json;

TEST(MergeSummary, NumbersAddFlagsAndArraysConcatenateObjectsMergeByTheSameRules) {
  json merged = json::object();
  mergeSummary(
      merged,
      {{"nodes", 3},
       {"setupComplete", true},
       {"lastError", "first"},
       {"nodeLifecycle",
        {{"notReadyTransitions", 1}, {"notReadySeconds", {41.5}}, {"watch", {{"synced", true}, {"lists", 1}}}}}});
  mergeSummary(merged, {{"nodes", 4},
                        {"setupComplete", false},
                        {"lastError", "second"},
                        {"extra", {1, 2}},
                        {"nodeLifecycle",
                         {{"notReadyTransitions", 2},
                          {"notReadySeconds", {44.0, 40.25}},
                          {"readyAgainSeconds", {3.0}},
                          {"watch", {{"synced", true}, {"lists", 2}}}}}});
  EXPECT_EQ(merged["nodes"], 7);
  EXPECT_EQ(merged["setupComplete"], false);
  EXPECT_EQ(merged["lastError"], "first");
  EXPECT_EQ(merged["extra"], json::array({1, 2}));
  const json& lc = merged["nodeLifecycle"];
  EXPECT_EQ(lc["notReadyTransitions"], 3);
  EXPECT_EQ(lc["notReadySeconds"], json::array({41.5, 44.0, 40.25}));
  EXPECT_EQ(lc["readyAgainSeconds"], json::array({3.0}));
  EXPECT_EQ(lc["watch"]["synced"], true);
  EXPECT_EQ(lc["watch"]["lists"], 3);
}

result::WorkloadSummary fleet(double failed, double returned, json lifecycle) {
  if (!lifecycle.contains("watchStreams")) lifecycle["watchStreams"] = 2;
  return {"kubelets", "fleet", {{"nodesFailed", failed}, {"nodesReturned", returned}, {"nodeLifecycle", lifecycle}}};
}

// The workers' summaries of one workload as the run merges them.
result::WorkloadSummary mergeWorkers(const std::vector<result::WorkloadSummary>& ws) {
  result::WorkloadSummary m = ws.front();
  m.summary = json::object();
  for (const auto& w : ws) mergeSummary(m.summary, w.summary);
  return m;
}

const metrics::Figure& figure(const std::vector<metrics::Figure>& fs, const char* name) {
  const metrics::Figure* f = metrics::findFigure(fs, name, metrics::sortedLabels({{"workload", "fleet"}}));
  if (f == nullptr) throw std::runtime_error(std::string("no figure ") + name);
  return *f;
}

TEST(WorkloadFigures, MedianAndMaxOfTheSamplesThenTheSamplesLeaveTheSummary) {
  std::vector<result::WorkloadSummary> ws{{"churn", "sessions", {{"sessionsCreated", 10}}},
                                          fleet(5, 5,
                                                {{"notReadyTransitions", 5},
                                                 {"readyTransitions", 4},
                                                 {"notReadyAtEnd", 1},
                                                 {"notReadySeconds", {52.1, 47.0, 55.3, 49.9, 50.5}},
                                                 {"readyAgainSeconds", {4.0, 9.5, 2.5, 3.0}}})};
  auto fs = workloadFigures(ws);
  // The churn workload's one (session_write_failures), the fleet's two renewal counts,
  // its seven lifecycle figures, its five endpoint delivery figures and its four node
  // watch outage figures (unavailable).
  ASSERT_EQ(fs.size(), 19u);
  for (const auto& f : fs) {
    EXPECT_EQ(f.window, metrics::Window::kRun) << f.name;
    EXPECT_EQ(f.source, metrics::Source::kClient) << f.name;
  }
  EXPECT_EQ(figure(fs, "node_not_ready_transitions").value, 5);
  EXPECT_EQ(figure(fs, "node_not_ready_seconds_p50").value, 50.5);
  EXPECT_EQ(figure(fs, "node_not_ready_seconds_max").value, 55.3);
  EXPECT_EQ(figure(fs, "node_not_ready_seconds_max").unit, "s");
  EXPECT_EQ(figure(fs, "node_ready_transitions").value, 4);
  EXPECT_EQ(figure(fs, "node_ready_again_seconds_p50").value, 3.0);  // nearest rank of four: the second
  EXPECT_EQ(figure(fs, "node_ready_again_seconds_max").value, 9.5);
  EXPECT_EQ(figure(fs, "nodes_not_ready_at_end").value, 1);
  EXPECT_EQ(figure(fs, "nodes_not_ready_at_end").unit, "count");
  const json& lc = ws[1].summary["nodeLifecycle"];
  EXPECT_FALSE(lc.contains("notReadySeconds"));
  EXPECT_FALSE(lc.contains("readyAgainSeconds"));
  EXPECT_EQ(lc["notReadyTransitions"], 5);
}

TEST(WorkloadFigures, WithoutFailuresTheSecondsAreUnavailable) {
  std::vector<result::WorkloadSummary> ws{fleet(0, 0,
                                                {{"notReadyTransitions", 0},
                                                 {"readyTransitions", 0},
                                                 {"notReadyAtEnd", 0},
                                                 {"notReadySeconds", json::array()},
                                                 {"readyAgainSeconds", json::array()}})};
  auto fs = workloadFigures(ws);
  for (const char* n : {"node_not_ready_seconds_p50", "node_not_ready_seconds_max", "node_ready_again_seconds_p50",
                        "node_ready_again_seconds_max"}) {
    EXPECT_FALSE(figure(fs, n).available()) << n;
    EXPECT_EQ(figure(fs, n).unavailableReason, "no node failed in this run") << n;
  }
  EXPECT_EQ(figure(fs, "node_not_ready_transitions").value, 0);
  EXPECT_EQ(figure(fs, "nodes_not_ready_at_end").value, 0);
}

TEST(WorkloadFigures, FailuresWithoutAnyNotReadySeenPointAtTheMissingController) {
  std::vector<result::WorkloadSummary> ws{fleet(3, 3,
                                                {{"notReadyTransitions", 0},
                                                 {"readyTransitions", 0},
                                                 {"notReadyAtEnd", 0},
                                                 {"notReadySeconds", json::array()},
                                                 {"readyAgainSeconds", json::array()}})};
  auto fs = workloadFigures(ws);
  EXPECT_EQ(figure(fs, "node_not_ready_transitions").value, 0);
  for (const char* n : {"node_not_ready_seconds_p50", "node_ready_again_seconds_max"}) {
    EXPECT_EQ(figure(fs, n).unavailableReason, "no NotReady was seen: no node lifecycle controller ran?") << n;
  }
}

TEST(WorkloadFigures, NotReadySeenButNoReturnLeavesOnlyTheReadyAgainUnavailable) {
  std::vector<result::WorkloadSummary> ws{fleet(
      2, 0,
      {{"notReadyTransitions", 2}, {"readyTransitions", 0}, {"notReadyAtEnd", 2}, {"notReadySeconds", {50.0, 51.0}}})};
  auto fs = workloadFigures(ws);
  EXPECT_EQ(figure(fs, "node_not_ready_seconds_p50").value, 50.0);
  EXPECT_EQ(figure(fs, "node_ready_again_seconds_p50").unavailableReason, "no failed node returned in this run");
  EXPECT_EQ(figure(fs, "nodes_not_ready_at_end").value, 2);
}

TEST(WorkloadFigures, ANodeWatchThatNeverOpenedMeasuresNothing) {
  std::vector<result::WorkloadSummary> ws{
      fleet(2, 0, {{"watchStreams", 0}, {"notReadyTransitions", 0}, {"watchLastError", "GET nodes: 403 Forbidden"}})};
  auto fs = workloadFigures(ws);
  // The renewals are counted whatever the watch did; the lifecycle figures are not.
  std::erase_if(fs, [](const metrics::Figure& f) {
    return f.name.starts_with("lease_renewals_") || f.name.starts_with("watch_deliver") ||
           f.name == "endpoint_readiness_changes" || f.name.starts_with("node_watch");
  });
  ASSERT_EQ(fs.size(), 7u);
  for (const auto& f : fs) {
    EXPECT_FALSE(f.available()) << f.name;
    EXPECT_EQ(f.unavailableReason, "the fleet's node watch never opened: GET nodes: 403 Forbidden") << f.name;
  }
}

TEST(WorkloadFigures, RenewalsMissedAreTheFailedAndTheNeverSent) {
  std::vector<result::WorkloadSummary> ws{fleet(0, 0, {})};
  ws[0].summary["leaseRenewals"] = 1800;
  ws[0].summary["leaseRenewalFailures"] = 3;
  ws[0].summary["leaseRenewalsSkipped"] = 2;
  auto fs = workloadFigures(ws);
  EXPECT_EQ(figure(fs, "lease_renewals_answered").value, 1800);
  EXPECT_EQ(figure(fs, "lease_renewals_missed").value, 5);
}

TEST(WorkloadFigures, ADormantPopulationCountsWhatItWasAskedAgainstWhatItMade) {
  std::vector<result::WorkloadSummary> ws{
      {"dormant", "platform", {{"objects", 3100}, {"created", 3098}, {"watchers", 20}, {"watchersSynced", 19}}},
      {"dormant", "quiet", {{"objects", 10}, {"created", 10}, {"watchers", 0}, {"watchersSynced", 0}}},
      {"churn", "sessions", {{"createFailures", 1}, {"writeFailures", 4}}},
  };
  auto fs = workloadFigures(ws);
  auto of = [&](const char* name, const char* workload) {
    const metrics::Figure* f = metrics::findFigure(fs, name, metrics::sortedLabels({{"workload", workload}}));
    if (f == nullptr) throw std::runtime_error(std::string("no figure ") + name);
    return *f;
  };
  EXPECT_EQ(of("dormant_objects", "platform").value, 3100);
  EXPECT_EQ(of("dormant_objects_created", "platform").value, 3098);
  EXPECT_EQ(of("dormant_objects_missing", "platform").value, 2);
  EXPECT_EQ(of("dormant_watchers_synced", "platform").value, 19);
  EXPECT_EQ(of("dormant_watchers_unsynced", "platform").value, 1);
  EXPECT_EQ(of("dormant_objects_missing", "quiet").value, 0);
  EXPECT_FALSE(of("dormant_watchers_unsynced", "quiet").available());
  EXPECT_EQ(of("dormant_watchers_unsynced", "quiet").unavailableReason, "the workload opened no watchers");
  EXPECT_EQ(of("session_write_failures", "sessions").value, 5);
  for (const auto& f : fs) EXPECT_EQ(f.window, metrics::Window::kRun) << f.name;
}

// The figures each kind reports are exactly the ones a gate may name for it (the list
// the scenario's gates are checked against at load).
TEST(WorkloadFigures, EachKindReportsExactlyItsOwnFigures) {
  std::vector<result::WorkloadSummary> ws{
      fleet(5, 5,
            {{"notReadyTransitions", 5},
             {"readyTransitions", 4},
             {"notReadySeconds", {50.0}},
             {"readyAgainSeconds", {4.0}}}),
      {"churn", "sessions", {{"writeFailures", 0}}},
      {"dormant", "platform", {{"objects", 10}, {"created", 10}, {"watchers", 2}, {"watchersSynced", 2}}},
  };
  const auto fs = workloadFigures(ws);
  for (const auto& w : ws) {
    std::set<std::string> reported;
    for (const auto& f : fs)
      if (metrics::labelValue(f.labels, "workload") == w.name) reported.insert(f.name);
    const auto& own = workloads::ownFigures(w.kind);
    EXPECT_EQ(reported, std::set<std::string>(own.begin(), own.end())) << w.kind;
    for (const auto& name : reported) {
      EXPECT_EQ(workloads::figureKindOf(name), w.kind) << name;
      EXPECT_EQ(workloads::notOwnFigure(w.kind, name), "") << name;
    }
  }
  EXPECT_EQ(workloads::notOwnFigure("churn", "session_writes"),
            "a churn workload reports no figure named session_writes (its own: session_write_failures)");
}

TEST(WorkloadFigures, EndpointDeliveryQuantilesAreOverEveryChangeAndNode) {
  std::vector<result::WorkloadSummary> ws{fleet(0, 0, {})};
  ws[0].summary["endpointDelivery"] = {{"changes", 2}, {"receipts", 5}, {"seconds", {0.4, 0.1, 2.5, 0.3, 0.2}}};
  auto fs = workloadFigures(ws);
  const auto labels = metrics::sortedLabels({{"workload", "fleet"}, {"resource", "endpointslices"}});
  auto at = [&](const char* name) {
    const metrics::Figure* f = metrics::findFigure(fs, name, labels);
    if (f == nullptr) throw std::runtime_error(std::string("no figure ") + name);
    return *f;
  };
  EXPECT_EQ(figure(fs, "endpoint_readiness_changes").value, 2);
  EXPECT_EQ(at("watch_deliveries").value, 5);
  EXPECT_EQ(at("watch_delivery_p50").value, 0.3);  // nearest rank of five: the third
  EXPECT_EQ(at("watch_delivery_p99").value, 2.5);
  EXPECT_EQ(at("watch_delivery_max").value, 2.5);
  EXPECT_EQ(at("watch_delivery_p99").unit, "s");
  EXPECT_FALSE(ws[0].summary["endpointDelivery"].contains("seconds"));  // trimmed, counts stay
}

TEST(WorkloadFigures, ChangesThatReachedNoProxyMeasureZeroDeliveriesAndNoLatency) {
  std::vector<result::WorkloadSummary> ws{fleet(0, 0, {})};
  ws[0].summary["endpointDelivery"] = {{"changes", 3}, {"receipts", 0}, {"seconds", json::array()}};
  auto fs = workloadFigures(ws);
  const auto labels = metrics::sortedLabels({{"workload", "fleet"}, {"resource", "endpointslices"}});
  EXPECT_EQ(metrics::findFigure(fs, "watch_deliveries", labels)->value, 0);
  const metrics::Figure* p99 = metrics::findFigure(fs, "watch_delivery_p99", labels);
  ASSERT_NE(p99, nullptr);
  EXPECT_FALSE(p99->available());
  EXPECT_NE(p99->unavailableReason.find("no EndpointSlice controller"), std::string::npos) << p99->unavailableReason;
  // Without Services there is nothing to time, and the figures say so.
  std::vector<result::WorkloadSummary> none{fleet(0, 0, {})};
  fs = workloadFigures(none);
  EXPECT_EQ(figure(fs, "endpoint_readiness_changes").unavailableReason,
            "the fleet has no Services (services.count is 0)");
}

// A relist storm: every node stream's outage, and the longest episode (from the first
// stream lost to the last one back) is the time until every node watched again. Two
// workers' books merge (arrays concatenate); a stream still out at the end leaves that
// time unmeasured, saying how many were out.
TEST(WorkloadFigures, NodeWatchOutagesAndTheTimeUntilEveryNodeWatchesAgain) {
  std::vector<result::WorkloadSummary> ws{fleet(0, 0, {}), fleet(0, 0, {})};
  ws[0].summary["nodeWatchOutages"] = {{"outages", 3}, {"seconds", {9.5, 12.0, 1.0}}, {"episodes", {14.25, 1.0}}};
  ws[1].summary["nodeWatchOutages"] = {{"outages", 1}, {"seconds", {11.0}}, {"episodes", {11.0}}};
  ws[0].summary["nodeWatches"] = {{"outNow", 0}};
  ws[1].summary["nodeWatches"] = {{"outNow", 0}};
  std::vector<result::WorkloadSummary> merged{mergeWorkers(ws)};
  auto fs = workloadFigures(merged);
  EXPECT_EQ(figure(fs, "node_watch_outages").value, 4);
  EXPECT_EQ(figure(fs, "node_watch_outage_max").value, 12.0);
  EXPECT_EQ(figure(fs, "node_watch_outage_p99").value, 12.0);
  EXPECT_EQ(figure(fs, "node_watches_restored_seconds").value, 14.25);
  EXPECT_EQ(figure(fs, "node_watches_restored_seconds").unit, "s");
  EXPECT_FALSE(merged[0].summary["nodeWatchOutages"].contains("seconds"));  // trimmed

  ws[1].summary["nodeWatches"]["outNow"] = 2;
  std::vector<result::WorkloadSummary> stillOut{mergeWorkers(ws)};
  fs = workloadFigures(stillOut);
  EXPECT_EQ(figure(fs, "node_watches_restored_seconds").unavailableReason,
            "2 node streams were still without a watch when the run ended");
  EXPECT_EQ(figure(fs, "node_watch_outage_max").value, 12.0);

  // The shared watch: nothing of the nodes' own to time.
  std::vector<result::WorkloadSummary> shared{fleet(0, 0, {})};
  fs = workloadFigures(shared);
  EXPECT_EQ(figure(fs, "node_watches_restored_seconds").unavailableReason,
            "the nodes do not watch on their own (watches.mode shared)");
}

}  // namespace
}  // namespace cpscale::run
