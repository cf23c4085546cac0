// Capacity: how much load a recipe holds along one axis. `cpscale capacity` steps one
// scenario knob (workloads.fleet.count, workloads.sessions.sessionsPerMinute,
// workloads.platform.objectsPerKind, ...) on one plane, holds each step for a steady
// window, evaluates the gates that define "holds", and stops at the first step that
// fails, or where the generator rather than the server was the limit (such a step is
// not a capacity: the search says so and reports the last step that held as a lower
// bound). Each step keeps every figure of its window.
//
// The capacity index is the table over recipes (profiles) x axes that `cpscale
// classify` reads: per entry the largest load that held and the axis pressures
// (axis_pressure{axis}) measured at it, so a cluster's pressure can be compared with
// it in the same units.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics/figures.h"
#include "sim/metrics/gate.h"

namespace cpscale::result {

inline constexpr int kCapacitySchemaVersion = 1;
inline constexpr std::string_view kCapacityIndexKind = "CapacityIndex";
inline constexpr std::string_view kCapacityIndexFile = "capacity.json";

// Why a search stopped.
enum class CapacityLimit {
  kServer,       // a step failed a gate with the generator on schedule: the recipe's limit
  kGenerator,    // a step where the generator fell behind its schedule: not a capacity
  kMaxReached,   // every step up to the search's max held: capacity is at least max
  kInterrupted,  // Ctrl-C
  kFailed,       // the run could not go on (setup timed out, a member exited, an error)
};
std::string_view toString(CapacityLimit l);  // "server" | "generator" | "max" | "interrupted" | "failed"
std::optional<CapacityLimit> parseCapacityLimit(std::string_view s);

// One step of a search: the knob held at `value` for a steady window.
struct CapacityStep {
  double value = 0;
  // The step's steady window, in seconds since the run started.
  double startSeconds = 0;
  double endSeconds = 0;
  bool held = false;              // every hold gate passed and the generator kept up
  bool generatorLimited = false;  // the generator fell behind: the step says nothing of the server
  // Empty when it held; otherwise the first gate that failed ("client_latency_p99{...} <= 1s:
  // measured 1.8 s") or why the step could not be measured.
  std::string brokeBy;
  std::vector<metrics::Figure> figures;  // the window's figures, axis_pressure included
  std::vector<metrics::GateResult> gates;
};

// One search: one scenario knob on one recipe.
struct CapacitySearch {
  std::string profile;              // the recipe
  std::string scenario;             // the scenario's name
  std::string axis;                 // "node" | "churn" | "state"
  std::string knob;                 // e.g. "workloads.fleet.count"
  std::string unit;                 // what the knob counts ("nodes", "sessions/min", "objects/kind")
  std::vector<CapacityStep> steps;  // in the order they ran (bisection steps last)
  std::optional<double> held;       // largest value that held; none when the first step failed
  CapacityLimit limit = CapacityLimit::kFailed;
  std::string brokeBy;     // the figure/gate that broke first (the failing step's brokeBy)
  std::string detail;      // in words: why the search stopped
  std::string resultFile;  // the run's result.json, relative to the index file
};

// The axis pressures measured at the step that held (empty when none held).
std::vector<metrics::Figure> pressureAtHeld(const CapacitySearch& s);

// A search as the index keeps it: every step with its verdict and gates, but of its
// figures only those the index and classify read (axis_pressure, write_qps{},
// lease_write_share, apiserver_heap_inuse_bytes_all_replicas, the scheduled-send
// client_latency_p99 and what each hold gate's selector picks), without their series over time.
// The search's own result.json keeps everything.
CapacitySearch indexEntry(const CapacitySearch& s);

// The index over recipes x axes, with where it was measured.
struct CapacityIndex {
  int schemaVersion = kCapacitySchemaVersion;
  std::string cpscaleVersion;
  std::string host;
  int cpus = 0;
  std::string machine;  // in words, e.g. "2 CPUs (AMD EPYC ...), 24 GiB"
  std::string kubernetesVersion;
  std::string etcdVersion;
  std::string measuredAt;  // RFC 3339
  // Set for an index projected by the model (`cpscale capacity --model`): the
  // calibration it used (file, machine, date), the cores each member was given, where
  // the generator was, and the model's measured error against live runs.
  nlohmann::json projection;
  std::vector<CapacitySearch> searches;
};

nlohmann::json toJson(const CapacityStep& s);
nlohmann::json toJson(const CapacitySearch& s);
nlohmann::json toJson(const CapacityIndex& idx);
// Throws ConfigError(where, JSON path, what is wrong).
// `path`: where `j` sits in its document ("/capacity" in a result.json).
CapacitySearch capacitySearchFromJson(const nlohmann::json& j, const std::string& where, const std::string& path = "");
CapacityIndex capacityIndexFromJson(const nlohmann::json& j, const std::string& where);
// Atomic write, as writeResult. Throws std::runtime_error naming the file.
void writeCapacityIndex(const CapacityIndex& idx, const std::filesystem::path& path);
// Throws ConfigError naming the file and field for a missing, malformed or foreign file.
CapacityIndex readCapacityIndex(const std::filesystem::path& path);

}  // namespace cpscale::result
