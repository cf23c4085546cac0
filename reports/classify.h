// Which axis binds a cluster, and which rung of the recipe ladder fits it: the
// cluster's axis pressures (sim/metrics/axis_pressure.h) held against the capacity
// index (capacity.h), what each recipe held along each axis in the same units.
// `cpscale classify` builds the inputs (a result's steady window, or two live scrape
// rounds) and prints one of the renderings below.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/metrics/figures.h"
#include "sim/result/capacity.h"
#include "sim/result/result.h"

namespace cpscale::reports {

// The ladder's rungs, cheapest first. Recipes an index holds beyond these come after
// them, in the order the index lists them.
inline constexpr std::string_view kRecipeLadder[] = {"classic", "classic-ha", "role-split", "partitioned-storage",
                                                     "sharded-watch"};
// The axes as axis_pressure{axis} and CapacitySearch::axis name them.
inline constexpr std::string_view kPressureAxes[] = {"node", "churn", "state"};
// A rung fits when it held pressure / headroom on every axis.
inline constexpr double kDefaultHeadroom = 0.8;
// The capacity index shipped with cpscale, relative to its source tree: classify reads
// it when no --capacity is given and the file is there.
inline constexpr std::string_view kShippedCapacityIndex = "reports/examples/index/capacity.json";

// What one recipe held along one axis, from its capacity search.
struct AxisCapacity {
  std::string recipe;
  std::string axis;
  // axis_pressure{axis} at the largest step that held; 0 when no step held; nullopt when
  // the held step carries no available axis_pressure for the axis (`note` says why).
  std::optional<double> capacity;
  bool atLeast = false;        // every step up to the search's max held: a lower bound
  std::optional<double> held;  // the knob's value at that step
  std::string knob;            // workloads.fleet.count
  std::string knobUnit;        // nodes
  std::string note;            // why capacity is 0 or unknown, in words
  std::string file;            // the index the search came from
};

// The capacity index (or several) as a table over recipes x axes.
struct CapacityTable {
  std::vector<std::string> files;
  std::vector<std::string> recipes;  // ladder order, then the others in index order
  std::vector<AxisCapacity> entries;
  const AxisCapacity* find(std::string_view recipe, std::string_view axis) const;
};

// Adds every search of `idx` (read from `file`); a later search for a (recipe, axis)
// already in the table replaces it, so a newer index given later wins.
void addToTable(CapacityTable& table, const result::CapacityIndex& idx, const std::string& file);

struct ClassifyOptions {
  std::string source;              // what was read, for the reader: a result file or a server
  std::string span;                // the window in words: "steady, 2m to 3m (1m)", "two scrape rounds 30s apart"
  std::vector<std::string> notes;  // how the pressures were read, where it matters
  std::string recipe;              // empty: guessed from resident_object_replicas
  std::string recipeFrom;          // how the recipe is known ("--recipe", "the result's profile")
  double headroom = kDefaultHeadroom;
};

// One axis on the cluster's own recipe.
struct AxisVerdict {
  std::string axis;
  metrics::Figure pressure;              // axis_pressure{axis}; may be unavailable
  std::optional<AxisCapacity> capacity;  // the cluster's recipe on this axis, if measured
  std::optional<double> utilization;     // pressure / capacity; +Inf when the recipe held nothing
  std::string reason;                    // one sentence naming the figures
};

// One recipe of the ladder against the cluster's pressures.
struct RungAxis {
  std::string axis;
  bool fits = false;
  bool checked = true;  // false: the pressure is unavailable, so this axis did not count
  std::string reason;
};
struct RungCheck {
  std::string recipe;
  bool fits = false;
  std::vector<RungAxis> axes;
};

struct Classification {
  std::string source;
  metrics::Window window = metrics::Window::kSteady;
  std::string span;
  std::vector<std::string> notes;
  std::string recipe;
  std::string recipeFrom;
  bool recipeGuessed = false;
  double headroom = kDefaultHeadroom;
  std::vector<std::string> capacityFiles;
  std::vector<metrics::Figure> figures;  // axisPressureFigures' output
  std::vector<AxisVerdict> axes;         // node, churn, state
  std::optional<std::string> binding;    // the axis with the highest utilization
  std::string bindingReason;
  std::vector<RungCheck> ladder;    // every recipe of the table, ladder order
  std::optional<std::string> rung;  // the first that fits
  std::string rungReason;
};

// Empty when at least one axis_pressure among `pressures` is measured; otherwise each
// axis with the reason it is unavailable ("node: ...; churn: ...").
std::string whyNoPressure(std::span<const metrics::Figure> pressures);

// The axis pressures over a result's steady window (axisPressureFigures of its
// steady-window figures). Throws ConfigError(where, "/figures", why) when the result has
// no steady-window figures or none of the three pressures could be measured from them.
std::vector<metrics::Figure> resultPressures(const result::RunResult& r, const std::string& where);

// `pressures`: axisPressureFigures' output. Throws nothing: what cannot be compared is
// said in the reasons.
Classification classify(std::vector<metrics::Figure> pressures, const CapacityTable& table, const ClassifyOptions& o);

// For a terminal (100 columns), and the machine-readable document (kind Classification).
std::string renderClassification(const Classification& c);
nlohmann::json toJson(const Classification& c);

}  // namespace cpscale::reports
