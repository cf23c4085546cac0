#include "reports/run_outputs.h"

#include "reports/html.h"
#include "reports/junit.h"
#include "reports/summary.h"
#include "sim/result/json_io.h"

namespace cpscale::reports {

void writeRunOutputs(const result::RunResult& r, const std::filesystem::path& dir) {
  result::writeResult(r, dir / result::kResultFile);
  result::jsonio::writeFile(dir / result::kSummaryFile, renderSummary(r));
  result::jsonio::writeFile(dir / result::kHtmlFile, renderHtml(r));
  result::jsonio::writeFile(dir / result::kJunitFile, renderJunit(r));
}

}  // namespace cpscale::reports
