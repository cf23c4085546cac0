// One run of a scenario against one target: the local plane for a profile, or a
// user's cluster. Brings the target up (local), prepares the workloads, drives them
// on the engine's workers while the scraper polls every apiserver and etcd, derives
// the figures, evaluates the gates, cleans up and writes the result. Failures and
// interruptions half-way still produce a result with what was measured.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "sim/controlplane/placement.h"
#include "sim/controlplane/profile.h"
#include "sim/kube/kubeconfig.h"
#include "sim/result/result.h"
#include "sim/run/run_progress.h"
#include "sim/run/shard.h"
#include "sim/run/target.h"
#include "sim/scenario/scenario.h"
#include "workloads/cleanup.h"

namespace cpscale::run {

struct RunOptions {
  std::string runId;
  std::filesystem::path outDir;  // result.json and the reports go here
  // Set: run against this cluster (the profile is only recorded). Unset: local plane.
  std::optional<kube::RestConfig> cluster;
  controlplane::Profile profile;
  std::filesystem::path binDir;
  bool keepPlane = false;  // leave the local plane running (detached)
  bool cleanup = true;     // delete what the run created
  bool progress = true;    // progress line / periodic log lines on stderr
  // Live counters to count into (read by --metrics-addr); the run's own when null.
  RunCounters* counters = nullptr;
  // A capacity search's ladder on this run (null: a plain run). The scenario holds
  // `steps.front()` (its knob already set to it); each next value is reached by growing
  // the knob's workload in place (Workload::growth), after which setup, the controllers'
  // settling (at most capacity->settle), the scenario's warmup and a steady window of
  // `capacity->hold` follow again. Each step's window is
  // judged by the capacity gates (judgeStep) as soon as it ends; the run stops after the
  // first step that does not hold. result.capacity holds the judged steps, each
  // window a phase "step/<value>", each growth a phase "grow/<value>"; the headline
  // figures are those of the last step that held. Gates and the exit code are left to
  // the caller, which knows the whole search.
  const scenario::CapacitySpec* capacity = nullptr;
  std::vector<double> steps;
  // The steady window starts no earlier than this, on the run's timeline (seconds
  // since its origin), whenever setup and warmup end. The validation runs the model
  // with the live run's start, so that both windows cover the same arrivals of one
  // sample (a live plane's controllers take a while to settle; the model's do not).
  std::optional<engine::TimePoint> earliestSteadyStart;
  // One shard of a sharded run (see shard.h): only shard 0 prepares, scrapes and
  // cleans up; every shard's window starts at the instant shard 0 publishes.
  ShardSpec shard;
  // The local plane's members pinned to CPUs (and the generator, which the caller pins:
  // this process). Recorded in result.environment.placement.
  controlplane::Placement placement;
};

// Runs and returns the result (already written to outDir). Throws ConfigError for bad
// input found before anything was contacted; everything later is reported in the
// result's status.
result::RunResult executeRun(scenario::Scenario& scenario, const RunOptions& options);
// The same against a target the caller made (the model, see simulate.h): `options`'
// cluster, profile files and plane fields are not read, but the profile is recorded.
// A virtual target runs the scenario with one worker.
result::RunResult executeRun(scenario::Scenario& scenario, const RunOptions& options, Target& target);

// The exit code of a finished run judged by its gates: 3 when the run stopped short
// (interrupted or failed), else 1 when a gate failed, else 0.
int gatesExitCode(std::span<const metrics::GateResult> gates, bool stopped);

// The cleanup outcome as the result document records it.
nlohmann::json cleanupJson(const workloads::CleanupResult& c);

}  // namespace cpscale::run
