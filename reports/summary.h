// summary.md: the run at a glance, as Markdown whose raw text is aligned so it reads
// as well in a terminal or a CI log as it renders on a code host.
#pragma once

#include <string>

#include "reports/result.h"

namespace cpscale::reports {

// Title (scenario, profile, target, status), the headline table grouped by axis, the
// gates, generator health and then every figure of the run.
std::string renderSummary(const RunResult& r);

// A Markdown table whose columns are padded to equal width; `rightAligned[i]` for
// numeric columns. Cells are escaped ("|" inside a cell would end it).
std::string markdownTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& rightAligned = {});

// "1.2k/s", or "unavailable" when the gate had nothing to compare; the unit is that of
// the gate's figure in `r`.
std::string formatGateMeasured(const RunResult& r, const scenario::GateResult& g);
// "<= 600" as written in the scenario.
std::string formatGateThreshold(const scenario::GateResult& g);

}  // namespace cpscale::reports
