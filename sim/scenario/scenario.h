// A scenario: what load to drive, for how long, what to measure and what must hold.
// Read from scenarios/*.yaml (apiVersion cpscale.io/v1alpha1, kind Scenario), with
// `--set path=value` overrides applied before validation so CI can scale a scenario
// without copying it. Every error names the file, the line and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/clock.h"
#include "sim/load/open_loop_driver.h"
#include "sim/metrics/gate.h"
#include "workloads/workload.h"

namespace cpscale::scenario {

// One `--set path=value`: path segments are map keys, list indexes ([0]) or, in a
// list of named items, an item's name ("workloads.fleet.count=500").
struct Override {
  std::string path;
  std::string value;
};
// Throws ConfigError for text without '=' or with an empty path.
Override parseOverride(const std::string& text);

// `capacity:` (cpscale capacity): the knob a capacity search steps, the ladder of
// values it tries, how long it holds each, and the gates that define "holds".
//   capacity:
//     knob: workloads.fleet.count   # workloads.<name>.<numeric field>
//     axis: node                    # node | churn | state; default from the workload's kind
//     start: 300                    # first step (the knob's value in the file is replaced)
//     factor: 2                     # each next step = previous x factor ...
//     max: 4800                     # ... up to this (the last step is max itself)
//     hold: 30s                     # each step's steady window; default `duration`
//     settle: 30s                   # per step, how long to wait for the controller-manager's
//                                   # workqueues to empty before the window starts anyway
//     bisect: 0                     # refinement runs between the last pass and the first fail
//     gates: [...]                  # what holds means; default: the scenario's `gates`
// The scenario's `gates` are evaluated on the search's result, whose figures are the
// capacity figure and the last held step's: `capacity{axis=node} >= 3000` gates CI on
// what a recipe holds.
struct CapacitySpec {
  std::string knob;
  std::string workload;  // the knob's workload name ("fleet")
  std::string field;     // the knob's field ("count")
  std::string axis;
  std::string unit;  // what the knob counts, for reports ("nodes", "sessions/min", ...)
  double start = 0;
  double factor = 2;
  double max = 0;
  engine::Duration hold{0};
  engine::Duration settle = std::chrono::seconds(30);
  int bisect = 0;
  std::vector<metrics::Gate> gates;
  std::string where;  // file:line of the block, for errors found later
};

// The axis a workload kind loads and the unit of one of its knobs, as the kind declares
// them (workloads/kind.h); "" for an unknown kind, the field's name for a field that is
// not one of its knobs.
std::string axisOfKind(const std::string& kind);
std::string unitOfKnob(const std::string& kind, const std::string& field);

// The values a search steps through: start, start x factor, ..., capped at max (whose
// value is the last step), rounded to whole numbers when `whole` (counts).
std::vector<double> capacityLadder(const CapacitySpec& spec, bool whole = true);

// `faults:` (cpscale run on the local plane): members of the plane killed or frozen
// during the steady window, to rehearse what a run (and the plane) does through them.
//   faults:
//     - kill: kube-apiserver-0   # SIGKILL the member ...
//       at: 20s                  # ... this long after the steady window started
//       restartAfter: 10s        # start it again (same flags, data and port); unset: it stays down
//     - stop: etcd-main          # SIGSTOP: frozen, not dead (a hung disk, a stalled VM)
//       at: 40s
//       for: 5s                  # then SIGCONT
// The run goes on through them: the client counts its errors and retries, watches are
// reopened or relisted, the fault's window is an incident in result.json and on every
// chart, counters that restart at 0 are split at the restart, and the gates decide the
// exit code.
struct FaultSpec {
  enum class Action { kKill, kStop };
  Action action = Action::kKill;
  std::string member;                            // a member of the plane: etcd-main, kube-apiserver-0, ...
  engine::Duration at{0};                        // from the steady window's start
  std::optional<engine::Duration> restartAfter;  // kill: when to start it again
  engine::Duration stopFor{0};                   // stop: how long it stays frozen
  std::string where;                             // file:line of the entry
  std::string path;                              // "faults[0]", for errors found at run time
};
std::string_view toString(FaultSpec::Action a);

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // the file
  // The measured steady-state window: it starts once every workload finished its setup
  // (nodes registered, populations created, watchers synced) and `warmup` passed, and
  // lasts this long.
  engine::Duration duration{0};
  // Setup that has not finished by then ends the run as failed (exit 3), with what it
  // measured: a population that never finishes creating is never reported as complete.
  engine::Duration setupTimeout = std::chrono::minutes(10);
  // After setup, load runs this long before the measured window starts (e.g. for churn
  // sessions to reach their steady live population). Recorded as part of setup.
  engine::Duration warmup{0};
  std::uint64_t seed = 1;
  std::size_t workers = 1;
  engine::Duration scrapeInterval = std::chrono::seconds(5);
  load::DriverOptions driver;
  // After the window: how long to wait for responses still in flight.
  engine::Duration drain = std::chrono::seconds(10);
  std::vector<std::unique_ptr<workloads::Workload>> workloads;
  std::vector<metrics::Gate> gates;
  std::optional<CapacitySpec> capacity;
  std::vector<FaultSpec> faults;
  // The scenario after overrides, as the result document records it.
  nlohmann::json effective;
  // What it was parsed from (the file's text and the overrides applied to its tree), for
  // vary() to parse again without reading the file; null for a scenario built in code.
  struct Parsed;
  std::shared_ptr<const Parsed> parsed;
};

Scenario loadScenario(const std::filesystem::path& path, const std::vector<Override>& overrides = {});

// A change to a parsed scenario in its own types: knob values as numbers, durations as
// durations. What a capacity step and the model's sampling vary; text overrides are
// for what comes as text (the command line's --set, a calibration's cases).
struct Variation {
  std::vector<std::pair<std::string, double>> knobs;  // a path as --set names it, its value
  std::optional<engine::Duration> duration;
  std::optional<engine::Duration> warmup;
  Variation& setKnob(std::string path, double value);
  Variation& setDuration(engine::Duration d);
  Variation& setWarmup(engine::Duration d);
};

// `base` varied: its file's text (read when it was loaded, not again) with its overrides
// and then the variation applied, validated as the file is. A path the scenario does not
// have is a ConfigError naming the scenario's file and the path; `base` is unchanged.
Scenario vary(const Scenario& base, const Variation& variation);

// A knob value as --set takes it and phase names show it: "1200", "2.5", "1000000".
std::string knobText(double v);

// The YAML tree as JSON (scalars that read as numbers or booleans become those).
nlohmann::json yamlToJson(const YAML::Node& node);

}  // namespace cpscale::scenario
