// A small SVG chart writer for report.html: time charts (lines or stacked areas),
// grouped bar charts, charts of a figure against a scenario knob, and the placeholder a
// chart shows when its data is unavailable.
// Every chart carries axes with tick labels, a title, a legend, and an id plus the
// class "chart" so tests and readers can find it. No scripts, no external resources.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpscale::reports::svg {

struct Series {
  std::string name;
  std::vector<double> x;  // seconds since the run started, increasing
  std::vector<double> y;
};

// A part of the run on the time axis. "setup" is shaded and the data over it faded, so
// the eye goes to the steady window the headline describes; every phase's start is a
// dashed boundary labelled with its name.
struct PhaseSpan {
  std::string name;  // "setup", "steady"; "ramp/..." sub-phases are not drawn
  double start = 0;
  double end = 0;
  bool complete = true;  // false: labelled "(cut short)"
};

// Something that happened to the target: a red band at `at` (or over [at, until], a
// fault's window) with `label` as its tooltip.
struct IncidentMark {
  std::string label;
  double at = 0;
  std::optional<double> until;
};

struct TimeChart {
  std::string id;
  std::string title;
  std::string unit;  // a Figure unit: "1/s", "bytes", "ratio", "objects", "s", ...
  std::vector<Series> series;
  bool stacked = false;        // areas on top of each other, the total as the outline
  std::optional<double> yMax;  // e.g. 1 for a ratio, instead of the data's maximum
  std::vector<PhaseSpan> phases;
  std::vector<IncidentMark> incidents;
};
std::string timeChart(const TimeChart& c);

struct BarChart {
  std::string id;
  std::string title;
  std::string unit;
  std::vector<std::string> seriesNames;  // one colour each, side by side in a group
  std::vector<std::string> groupNames;   // along the x axis
  // values[group][series]; nullopt draws a "n/a" mark instead of a bar.
  std::vector<std::vector<std::optional<double>>> values;
  int width = 430;  // two side by side in the report's 900 px column
  int height = 250;
};
std::string barChart(const BarChart& c);

// A figure against a scenario knob (a capacity search's steps): x is the knob's value,
// y the figure measured while the step held it. Points are joined by lines in x order;
// a point that held is filled, one that did not is hollow, and one without a number is
// an "n/a" mark on the x axis (its tooltip says why) where the line breaks.
struct XyPoint {
  double x = 0;
  std::optional<double> y;  // nullopt (or non-finite): unavailable
  bool filled = true;       // false: hollow (the step did not hold)
  std::string note;         // the point's tooltip: its value in words, or why there is none
};

struct XySeries {
  std::string name;
  std::vector<XyPoint> points;  // any order: drawn sorted by x
};

// A vertical line across the plot at `x`, labelled: where the search broke.
struct XyMark {
  double x = 0;
  std::string label = "broke";
  std::string title;  // tooltip: why
};

struct XyChart {
  std::string id;
  std::string title;
  std::string xUnit;  // the knob's unit, named under the x axis ("nodes")
  std::string unit;   // the y figure's unit: "1/s", "bytes", "ratio", "s", ...
  std::vector<XySeries> series;
  std::optional<XyMark> mark;       // red, labelled
  std::optional<double> threshold;  // a gate's threshold: a dashed horizontal line ...
  std::string thresholdLabel;       // ... labelled with it ("<= 1s")
  std::optional<double> yMax;       // e.g. 1 for a ratio, instead of the data's maximum
  int width = 430;                  // two side by side in the report's 900 px column
  int height = 260;
};
std::string xyChart(const XyChart& c);

// Same footprint as a chart, saying what is missing and why.
std::string placeholder(const std::string& id, const std::string& title, const std::string& reason, int width = 920,
                        int height = 180);

// Text for an SVG/HTML element or attribute.
std::string escape(std::string_view s);

// Nice axis ticks (1, 2, 5 x 10^k) from 0 covering max; exposed for tests.
std::vector<double> niceTicks(double max, int approxCount);

}  // namespace cpscale::reports::svg
