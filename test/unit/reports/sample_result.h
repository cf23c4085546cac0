// A synthetic run with known figures for the renderer tests: two apiservers, leases
// and a churn CRD, one unavailable family, passed and failed gates.
#pragma once

#include <chrono>

#include "reports/result.h"

namespace cpscale::reports::testing {

inline engine::TimePoint at(double seconds) {
  return engine::TimePoint{std::chrono::duration_cast<engine::Duration>(std::chrono::duration<double>(seconds))};
}

inline metrics::TimeSeries ramp(double from, double to, int points = 7, double step = 10) {
  metrics::TimeSeries ts;
  for (int i = 0; i < points; ++i) ts.push(at(step * i), from + (to - from) * i / (points - 1));
  return ts;
}

inline RunResult sampleResult() {
  using metrics::Figure;
  using metrics::Source;
  RunResult r;
  r.runId = "20250301-101500-ab12";
  r.scenario = {"node-bound-smoke", "1k kubelets renewing leases", "scenarios/node-bound.yaml",
                {{"nodes", 1000}, {"duration", "60s"}}};
  r.profile = {"classic-ha", "two apiservers, one etcd", "profiles/classic-ha.yaml", true, {{"apiservers", 2}}};
  r.target = {"local",
              "https://127.0.0.1:6443",
              "cpscale-local",
              {{"kube-apiserver-0", "kube-apiserver", "https://127.0.0.1:6443", "v1.33.1"},
               {"etcd-0", "etcd", "https://127.0.0.1:2379", "3.5.21"}},
              "v1.33.1",
              "3.5.21"};
  r.environment = {"0.1.0", "ci-runner-7", 8, 17179869184ULL, "2025-03-01T10:15:00Z", "2025-03-01T10:16:05Z"};
  r.status = RunStatus::kCompleted;
  r.measuredSeconds = 60;
  auto& f = r.figures;
  f.push_back(Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}},
                               100, "1/s", Source::kApiserver, ramp(100, 100)));
  f.push_back(Figure::measured("write_qps", {{"group", "cpscale.io"}, {"resource", "sessions"}, {"verb", "POST"}}, 40,
                               "1/s", Source::kApiserver, ramp(20, 60)));
  f.push_back(Figure::measured("write_qps", {}, 140, "1/s", Source::kApiserver, ramp(120, 160)));
  f.push_back(Figure::measured("lease_write_share", {}, 0.714285, "ratio", Source::kApiserver, ramp(0.8, 0.65)));
  f.push_back(Figure::unavailable("etcd_lease_proposal_share", {}, "ratio", Source::kEtcd,
                                  "leases share an etcd with everything else"));
  f.push_back(Figure::measured("client_latency_p50", {{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}},
                               0.004, "s", Source::kClient));
  f.push_back(Figure::measured("client_latency_p99", {{"measured_from", "scheduled"}, {"resource", "leases"}, {"verb", "PUT"}},
                               0.0123, "s", Source::kClient));
  f.push_back(Figure::measured("client_latency_p99", {{"measured_from", "sent"}, {"resource", "leases"}, {"verb", "PUT"}},
                               0.0101, "s", Source::kClient));
  f.push_back(Figure::measured("server_latency_p99", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}},
                               0.008, "s", Source::kApiserver));
  f.push_back(Figure::unavailable("server_latency_p99", {{"group", "cpscale.io"}, {"resource", "sessions"}, {"verb", "POST"}},
                                  "s", Source::kApiserver, "no observations in the window"));
  for (const char* a : {"kube-apiserver-0", "kube-apiserver-1"}) {
    double base = a[15] == '0' ? 300 : 280;
    f.push_back(Figure::measured("apiserver_heap_inuse_bytes", {{"apiserver", a}}, base * 1048576, "bytes",
                                 Source::kApiserver, ramp(200 * 1048576, base * 1048576)));
  }
  f.push_back(Figure::measured("apiserver_heap_inuse_bytes_all_replicas", {}, 580 * 1048576.0, "bytes", Source::kApiserver));
  f.push_back(Figure::measured("bytes_per_object", {{"apiserver", "kube-apiserver-0"}}, 3480, "bytes", Source::kApiserver));
  f.push_back(Figure::measured("apiserver_objects", {{"apiserver", "kube-apiserver-0"}, {"group", ""}, {"resource", "nodes"}},
                               1000, "objects", Source::kApiserver, ramp(0, 1000)));
  f.push_back(Figure::measured("apiserver_objects",
                               {{"apiserver", "kube-apiserver-0"}, {"group", "coordination.k8s.io"}, {"resource", "leases"}},
                               1002, "objects", Source::kApiserver, ramp(2, 1002)));
  f.push_back(Figure::measured("schedule_lag_p99", {}, 0.0021, "s", Source::kClient));
  f.push_back(Figure::measured("generator_limited", {}, 0, "", Source::kClient));

  scenario::GateResult pass;
  pass.gate = {"write_qps{resource=leases} <= 600", "write_qps", {{"resource", "leases"}}, scenario::GateOp::kLe, 600, "600"};
  pass.measured = 100;
  pass.passed = true;
  scenario::GateResult fail;
  fail.gate = {"client_latency_p99{verb=PUT,resource=leases} <= 10ms", "client_latency_p99",
               {{"resource", "leases"}, {"verb", "PUT"}}, scenario::GateOp::kLe, 0.01, "10ms"};
  fail.measured = 0.0123;
  fail.passed = false;
  scenario::GateResult missing;
  missing.gate = {"etcd_lease_proposal_share >= 50%", "etcd_lease_proposal_share", {}, scenario::GateOp::kGe, 0.5, "50%"};
  missing.passed = false;
  missing.reason = "etcd_lease_proposal_share is unavailable: leases share an etcd with everything else";
  r.gates = {pass, fail, missing};
  r.workloads = {{"KubeletFleet", "nodes", {{"nodes", 1000}, {"renewals", 6000}}}};
  r.exitCode = 1;
  return r;
}

}  // namespace cpscale::reports::testing
