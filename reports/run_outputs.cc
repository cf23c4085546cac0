#include "reports/run_outputs.h"

#include "reports/html.h"
#include "reports/junit.h"
#include "reports/summary.h"
#include "sim/result/json_io.h"

namespace cpscale::reports {

void writeRunOutputs(const RunResult& r, const std::filesystem::path& dir) {
  writeResult(r, dir / kResultFile);
  jsonio::writeFile(dir / kSummaryFile, renderSummary(r));
  jsonio::writeFile(dir / kHtmlFile, renderHtml(r));
  jsonio::writeFile(dir / kJunitFile, renderJunit(r));
}

}  // namespace cpscale::reports
