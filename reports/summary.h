// summary.md: the run at a glance, as Markdown whose raw text is aligned so it reads
// as well in a terminal or a CI log as it renders on a code host.
#pragma once

#include <string>
#include <vector>

#include "sim/result/result.h"

namespace cpscale::reports {

// summary.md is read in terminals and CI logs: no line of it is wider than this.
inline constexpr std::size_t kSummaryColumns = 100;

// Title (scenario, profile, target, status), the run's phases and incidents, the
// headline per axis of the workloads that ran (steady window), the load per replica,
// the controllers (when scraped), the setup figures, the gates, generator health and
// then every figure of the run, grouped by name, each with its window.
std::string renderSummary(const result::RunResult& r);
// What a terminal gets at the end of a run: the summary up to (not including) All
// figures, which stay in summary.md.
std::string renderTerminalSummary(const result::RunResult& r);

// A simulated run's calibration (machine, date, file), its worst measured error
// against live runs, and the sampling weight; empty for a live run.
std::string modelLine(const result::RunResult& r);

// A Markdown table whose columns are padded to equal width; `rightAligned[i]` for
// numeric columns. Cells are escaped ("|" inside a cell would end it). With
// `maxWidth`, the widest text columns are narrowed until the table fits and a cell that
// no longer fits continues on rows of its own below (broken after "," or " ", or before
// "{", indented by two), so nothing is cut off.
std::string markdownTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& rightAligned = {}, std::size_t maxWidth = 0);

// `text` broken at spaces into lines of at most `width` columns (a word longer than
// that stands alone); lines after the first begin with `indent`. Ends with a newline.
std::string wrapText(std::string_view text, std::size_t width, std::string_view indent = "  ");

// Reasons numbered under a table ("[1]" in the cell, the sentence below it), so a long
// reason never widens a column. `prefix` opens each rendered reason.
struct NumberedNotes {
  std::string prefix;
  std::vector<std::string> reasons;
  std::string mark(const std::string& reason);
  // A blank line, then one wrapped line per reason; empty without reasons.
  std::string render() const;
};

// Display width of UTF-8 text: one column per code point.
std::size_t displayWidth(std::string_view s);

// "1.2k/s", or "unavailable" when the gate had nothing to compare; the unit is that of
// the gate's figure in `r`.
std::string formatGateMeasured(const result::RunResult& r, const metrics::GateResult& g);
// "<= 600" as written in the scenario.
std::string formatGateThreshold(const metrics::GateResult& g);

}  // namespace cpscale::reports
