// A synthetic run with known figures for the renderer tests: two apiservers (one of
// which exits mid-run), kubelets, a churn CRD and a dormant population, a setup phase
// with its own write rates and the bytes-per-object fit, one unavailable family, passed
// and failed gates.
#pragma once

#include <chrono>
#include <string>
#include <tuple>
#include <utility>

#include "sim/result/result.h"

namespace cpscale::result::testing {

inline engine::TimePoint at(double seconds) {
  return engine::TimePoint{std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(seconds))};
}

inline metrics::TimeSeries ramp(double from, double to, int points = 7, double step = 15, double start = 0) {
  metrics::TimeSeries ts;
  for (int i = 0; i < points; ++i) ts.push(at(start + step * i), from + (to - from) * i / (points - 1));
  return ts;
}

inline RunResult sampleResult() {
  using metrics::Figure;
  using metrics::Source;
  RunResult r;
  r.runId = "20250301-101500-ab12";
  r.scenario = {"mixed-smoke",
                "1k kubelets renewing leases, a session churn, a dormant population",
                "scenarios/mixed.yaml",
                {{"nodes", 1000}, {"duration", "60s"}}};
  r.profile = {"classic-ha", "two apiservers, one etcd", "profiles/classic-ha.yaml", true, {{"apiservers", 2}}};
  r.target = {"local",
              "https://127.0.0.1:6443",
              "cpscale-local",
              {{"kube-apiserver-0", "kube-apiserver", "https://127.0.0.1:6443", "v1.33.1", "workloads"},
               {"kube-apiserver-1", "kube-apiserver", "https://127.0.0.1:6444", "v1.33.1", "kube-scheduler"},
               {"etcd-0", "etcd", "https://127.0.0.1:2379", "3.5.21", ""}},
              "v1.33.1",
              "3.5.21"};
  r.environment = {"0.1.0", "ci-runner-7", 8, 17179869184ULL, "2025-03-01T10:15:00Z", "2025-03-01T10:16:05Z", {}};
  r.status = RunStatus::kCompleted;
  r.measuredSeconds = 60;
  r.phases = {{"setup", 0, 30, true, ""}, {"ramp/platform/configmaps", 5, 25, true, ""}, {"steady", 30, 90, true, ""}};
  r.incidents = {{"member-exited", "kube-apiserver-1", 70, "exit status 137 (killed)", std::nullopt}};
  auto& f = r.figures;
  f.push_back(Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}},
                               100, "1/s", Source::kApiserver, ramp(100, 100)));
  f.push_back(Figure::measured("write_qps", {{"group", "cpscale.io"}, {"resource", "sessions"}, {"verb", "POST"}}, 40,
                               "1/s", Source::kApiserver, ramp(20, 60)));
  f.push_back(Figure::measured("write_qps", {}, 140, "1/s", Source::kApiserver, ramp(120, 160)));
  f.push_back(Figure::measured("lease_write_share", {}, 0.714285, "ratio", Source::kApiserver, ramp(0.8, 0.65)));
  f.push_back(Figure::unavailable("etcd_lease_proposal_share", {}, "ratio", Source::kEtcd,
                                  "leases share an etcd with everything else"));
  f.push_back(Figure::measured("client_latency_p50",
                               {{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}}, 0.004, "s",
                               Source::kClient));
  f.push_back(Figure::measured("client_latency_p99",
                               {{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}}, 0.0123, "s",
                               Source::kClient));
  f.push_back(Figure::measured("client_latency_p99",
                               {{"measured_from", "sent"}, {"resource", "leases"}, {"verb", "PUT"}}, 0.0101, "s",
                               Source::kClient));
  f.push_back(Figure::measured("server_latency_p99",
                               {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}}, 0.008, "s",
                               Source::kApiserver));
  f.push_back(Figure::unavailable("server_latency_p99",
                                  {{"group", "cpscale.io"}, {"resource", "sessions"}, {"verb", "POST"}}, "s",
                                  Source::kApiserver, "no observations in the window"));
  for (const char* a : {"kube-apiserver-0", "kube-apiserver-1"}) {
    double base = a[15] == '0' ? 300 : 280;
    f.push_back(Figure::measured("apiserver_heap_inuse_bytes", {{"apiserver", a}}, base * 1048576, "bytes",
                                 Source::kApiserver, ramp(200 * 1048576, base * 1048576)));
  }
  f.push_back(
      Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 580 * 1048576.0, "bytes", Source::kApiserver));
  f.push_back(
      Figure::measured("apiserver_request_qps", {{"apiserver", "kube-apiserver-0"}}, 180, "1/s", Source::kApiserver));
  f.push_back(
      Figure::measured("apiserver_request_qps", {{"apiserver", "kube-apiserver-1"}}, 95, "1/s", Source::kApiserver));
  f.push_back(
      Figure::measured("apiserver_write_qps", {{"apiserver", "kube-apiserver-0"}}, 92, "1/s", Source::kApiserver));
  f.push_back(
      Figure::measured("apiserver_write_qps", {{"apiserver", "kube-apiserver-1"}}, 48, "1/s", Source::kApiserver));
  // The dormant population was created during setup: nobody wrote it in the steady window.
  f.push_back(Figure::measured("write_qps", {{"group", ""}, {"resource", "configmaps"}, {"verb", "POST"}}, 0, "1/s",
                               Source::kApiserver, ramp(0, 0, 5, 15, 30)));
  f.push_back(Figure::measured("rejected_write_qps", {}, 0.5, "1/s", Source::kApiserver));
  // Setup: registration, the population ramp and the bytes-per-object fit over it.
  auto setup = [&](Figure fig) {
    fig.window = metrics::Window::kSetup;
    f.push_back(std::move(fig));
  };
  setup(Figure::measured("write_qps", {{"group", ""}, {"resource", "configmaps"}, {"verb", "POST"}}, 250, "1/s",
                         Source::kApiserver, ramp(0, 250, 3, 10)));
  setup(Figure::measured("write_qps", {{"group", ""}, {"resource", "nodes"}, {"verb", "POST"}}, 33.3, "1/s",
                         Source::kApiserver));
  setup(Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}}, 60,
                         "1/s", Source::kApiserver));
  const metrics::Labels fit{{"apiserver", "kube-apiserver-0"}, {"heap", "inuse"}};
  setup(Figure::measured("bytes_per_object", fit, 3480, "bytes", Source::kApiserver));
  setup(Figure::measured("bytes_per_object_ci_low", fit, 3300, "bytes", Source::kApiserver));
  setup(Figure::measured("bytes_per_object_ci_high", fit, 3650, "bytes", Source::kApiserver));
  setup(Figure::measured("bytes_per_object_r2", fit, 0.98, "ratio", Source::kApiserver));
  setup(Figure::measured(
      "bytes_per_object",
      {{"apiserver", "kube-apiserver-0"}, {"heap", "inuse"}, {"kind", "configmaps"}, {"workload", "platform"}}, 2900,
      "bytes", Source::kApiserver));
  f.push_back(Figure::measured("apiserver_objects",
                               {{"apiserver", "kube-apiserver-0"}, {"group", ""}, {"resource", "nodes"}}, 1000,
                               "objects", Source::kApiserver, ramp(0, 1000)));
  f.push_back(
      Figure::measured("apiserver_objects",
                       {{"apiserver", "kube-apiserver-0"}, {"group", "coordination.k8s.io"}, {"resource", "leases"}},
                       1002, "objects", Source::kApiserver, ramp(2, 1002)));
  f.push_back(Figure::measured("schedule_lag_p99", {}, 0.0021, "s", Source::kClient));
  f.push_back(Figure::measured("generator_limited", {{"limit", "schedule"}}, 0, "", Source::kClient));

  metrics::GateResult pass;
  pass.gate = {"write_qps{resource=leases} <= 600",
               "write_qps",
               {{"resource", "leases"}},
               metrics::GateOp::kLe,
               600,
               "600",
               "",
               "",
               metrics::GateFold::kNone};
  pass.measured = 100;
  pass.passed = true;
  metrics::GateResult fail;
  fail.gate = {"client_latency_p99{verb=PUT,resource=leases} <= 10ms",
               "client_latency_p99",
               {{"resource", "leases"}, {"verb", "PUT"}},
               metrics::GateOp::kLe,
               0.01,
               "10ms",
               "",
               "",
               metrics::GateFold::kNone};
  fail.measured = 0.0123;
  fail.passed = false;
  metrics::GateResult missing;
  missing.gate = {"etcd_lease_proposal_share >= 50%",
                  "etcd_lease_proposal_share",
                  {},
                  metrics::GateOp::kGe,
                  0.5,
                  "50%",
                  "",
                  "",
                  metrics::GateFold::kNone};
  missing.passed = false;
  missing.reason = "etcd_lease_proposal_share is unavailable: leases share an etcd with everything else";
  r.gates = {pass, fail, missing};
  r.workloads = {{"kubelets", "nodes", {{"nodes", 1000}, {"renewals", 6000}}},
                 {"churn", "sessions", {{"created", 2400}}},
                 {"dormant", "platform", {{"configmaps", 5000}}},
                 {"cleanup", "cleanup", {{"deleted", 8400}}}};
  r.exitCode = 1;
  return r;
}

// The sample with the local plane's controllers scraped: kube-controller-manager's
// workqueues (more of them than the headline shows), node lifecycle and scheduler
// figures, and the node fleet's own record of nodes going NotReady and Ready again.
inline RunResult controllerResult() {
  using metrics::Figure;
  using metrics::Source;
  RunResult r = sampleResult();
  auto& f = r.figures;
  const std::string cm = "kube-controller-manager";
  auto count = [&](std::string name, metrics::Labels labels, double v, Source source) {
    f.push_back(Figure::measured(std::move(name), std::move(labels), v, "count", source));
  };
  count("workqueue_depth_max", {{"component", cm}}, 41, Source::kControllerManager);
  count("workqueue_adds", {{"component", cm}}, 5230, Source::kControllerManager);
  const std::tuple<const char*, double, double> queues[] = {
      {"endpoint_slice", 1, 150},   {"garbage_collector_attempt_to_delete", 41, 1200},
      {"namespace", 0, 20},         {"node_lifecycle_controller", 12, 3000},
      {"replicaset", 3, 180},       {"deployment", 3, 250},
      {"noexec_taint_pod", 9, 400}, {"ttl_jobs_to_delete", 0, 30}};
  for (const auto& [q, depth, adds] : queues) {
    count("workqueue_depth_max", {{"component", cm}, {"queue", q}}, depth, Source::kControllerManager);
    count("workqueue_adds", {{"component", cm}, {"queue", q}}, adds, Source::kControllerManager);
  }
  count("node_lifecycle_evictions", {}, 12, Source::kControllerManager);
  count("node_lifecycle_evictions", {{"zone", ""}}, 12, Source::kControllerManager);
  count("node_lifecycle_unhealthy_nodes_max", {}, 50, Source::kControllerManager);
  count("node_lifecycle_unhealthy_nodes_max", {{"zone", ""}}, 50, Source::kControllerManager);
  count("taint_eviction_pod_deletions", {}, 0, Source::kControllerManager);
  f.push_back(
      Figure::measured("leader_election_master", {{"component", cm}, {"name", cm}}, 1, "", Source::kControllerManager));
  count("scheduler_pending_pods_max", {}, 7, Source::kScheduler);
  count("scheduler_pending_pods_max", {{"queue", "active"}}, 7, Source::kScheduler);
  count("scheduler_schedule_attempts", {}, 120, Source::kScheduler);
  for (auto [result, n] : {std::pair{"error", 0.0}, std::pair{"scheduled", 118.0}, std::pair{"unschedulable", 2.0}})
    count("scheduler_schedule_attempts", {{"result", result}}, n, Source::kScheduler);
  // The fleet's record, over the whole run: 50 nodes were stopped and brought back.
  auto fleet = [&](std::string name, double v, std::string unit) {
    Figure fig = Figure::measured(std::move(name), {{"workload", "nodes"}}, v, std::move(unit), Source::kClient);
    fig.window = metrics::Window::kRun;
    f.push_back(std::move(fig));
  };
  fleet("node_not_ready_transitions", 50, "count");
  fleet("node_not_ready_seconds_p50", 42.5, "s");
  fleet("node_not_ready_seconds_max", 48.1, "s");
  fleet("node_ready_transitions", 50, "count");
  fleet("node_ready_again_seconds_p50", 1.2, "s");
  fleet("node_ready_again_seconds_max", 3.4, "s");
  return r;
}

// The sample as a big platform run reports it: CRDs of long API groups, long label
// sets, long reasons, a long status and incident. What a 100-column terminal must take.
inline RunResult wideResult() {
  using metrics::Figure;
  using metrics::Source;
  RunResult r = sampleResult();
  r.statusDetail =
      "kube-apiserver-1 exited with status 137 while the steady window was being measured; figures after "
      "1m10s describe one replica";
  r.incidents[0].detail =
      "exit status 137 (killed): the kernel's OOM killer chose it after its resident set grew past "
      "the container limit";
  const std::vector<std::pair<const char*, std::vector<const char*>>> crds{
      {"observability.platform.example.com", {"alertmanagerconfigurations", "servicemonitors", "prometheusrules"}},
      {"networking.internal.corp.example.org", {"trafficpolicies", "verylongcustomresourcedefinitionnames"}},
      {"cpscale.io", {"workflows", "workflowtemplates"}}};
  double qps = 7;
  for (const auto& [g, resources] : crds)
    for (const char* res : resources) {
      metrics::Labels l{{"group", g}, {"resource", res}, {"verb", "POST"}};
      r.figures.push_back(Figure::measured("write_qps", l, qps += 3, "1/s", Source::kApiserver));
      r.figures.push_back(Figure::measured("server_latency_p99", l, 0.021, "s", Source::kApiserver));
      r.figures.push_back(Figure::measured("client_latency_p99",
                                           {{"measured_from", "scheduled"}, {"resource", res}, {"verb", "POST"}}, 0.03,
                                           "s", Source::kClient));
      r.figures.push_back(Figure::measured("apiserver_objects",
                                           {{"apiserver", "kube-apiserver-0"}, {"group", g}, {"resource", res}}, 12000,
                                           "objects", Source::kApiserver));
      r.figures.push_back(Figure::unavailable("server_latency_p99.9", l, "s", Source::kApiserver,
                                              "fewer than 1000 observations of this resource and verb in the steady "
                                              "window, too few for a 99.9th percentile"));
      Figure bpo = Figure::measured("bytes_per_object",
                                    {{"apiserver", "kube-apiserver-0"},
                                     {"heap", "inuse"},
                                     {"kind", std::string(g) + "/" + res},
                                     {"workload", "platform"}},
                                    4100, "bytes", Source::kApiserver);
      bpo.window = metrics::Window::kSetup;
      r.figures.push_back(bpo);
    }
  metrics::GateResult g;
  g.gate = {
      "server_latency_p99{group=observability.platform.example.com,resource=alertmanagerconfigurations,verb=POST} "
      "<= 20ms",
      "server_latency_p99",
      {{"resource", "alertmanagerconfigurations"}},
      metrics::GateOp::kLe,
      0.02,
      "20ms",
      "",
      "",
      metrics::GateFold::kNone};
  g.measured = 0.021;
  g.passed = false;
  g.reason =
      "measured 21.0 ms over the steady window against a threshold of 20 ms; kube-apiserver-1 had exited by then";
  r.gates.push_back(g);
  return r;
}

}  // namespace cpscale::result::testing
