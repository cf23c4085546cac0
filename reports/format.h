// Shared vocabulary of every renderer: how a figure is named on a page and how its value
// reads with human units (which figures each axis is judged by is in headline.h). Kept
// in one place so summary.md, report.html and `cpscale compare` never disagree.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/metrics/figures.h"

namespace cpscale::reports {

// name{label=value,...} in the syntax gates use, so a line of a report can be pasted
// into a scenario's gates as is.
std::string figureKey(std::string_view name, const metrics::Labels& labels);
std::string figureKey(const metrics::Figure& f);

// The key shortened for a narrow table: label keys abbreviated (measured_from -> from),
// ".k8s.io" dropped from API groups, and the group (also the group part of a
// kind=<group>/<resource> label) left out when `keepGroup` is false: the resource name
// alone is unambiguous in the result.
std::string shortKey(const metrics::Figure& f, bool keepGroup = true);

// Resource names that occur with more than one API group among these figures.
std::vector<std::string> ambiguousResourceNames(std::span<const metrics::Figure> figures);

// A value with a human unit: "1.2k/s", "35.1 MiB", "12.3 ms", "71.2 %", "48.2k".
// Unit "" prints the number with up to four significant digits. Non-finite values
// print as "NaN", "+Inf", "-Inf". A unit not listed here (a scenario knob's, as
// capacity{...} carries it) follows the number: "2,400 nodes".
std::string formatValue(double value, std::string_view unit);

// A plain number for a sentence: whole and grouped from 100 on ("2,900", "30,000"),
// else three significant digits ("30.4", "0.570").
std::string formatGrouped(double value);

// A count in the unit a scenario knob steps ("nodes", "sessions/min", ...), exact while
// it fits a glance: "2,400 nodes", "2.50 sessions/min"; the number alone for unit "".
// formatValue falls back to this for any unit it does not know (capacity{...} figures).
std::string formatKnobValue(double value, std::string_view unit);

// The figure's value, or "unavailable (reason)".
std::string formatFigureValue(const metrics::Figure& f);

// Seconds on a time axis: "0s", "45s", "2m", "1m30s", "1h05m".
std::string formatElapsed(double seconds);

// The three independent directions a control plane runs out of room in.
enum class Axis { kNode, kChurn, kState };
inline constexpr Axis kAllAxes[] = {Axis::kNode, Axis::kChurn, Axis::kState};
std::string_view toString(Axis a);  // "node-bound", ...
// The axis a workload kind names ("node", "churn", "state"), or none.
std::optional<Axis> axisNamed(std::string_view name);
std::string_view describe(Axis a);  // one line: what pressure the axis measures

// Whether the generator, not the server, set the pace, and how late it sent.
std::vector<const metrics::Figure*> generatorHealthFigures(std::span<const metrics::Figure> figures);

// The unit of the first figure with this name, "" if none: gates carry a bare number.
std::string unitOf(std::span<const metrics::Figure> figures, std::string_view name);

// Resources written by the node fleet: their latency belongs to the node axis.
bool isNodeResource(std::string_view resource);

// Text for XML content and attribute values: & < > " ' escaped, and characters XML 1.0
// forbids (control characters other than tab, newline, carriage return) replaced by
// U+FFFD, since a parser rejects the whole file over one of them.
std::string xmlEscape(std::string_view s);

}  // namespace cpscale::reports
