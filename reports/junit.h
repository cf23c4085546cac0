// junit.xml: a run as one JUnit test suite, so any CI system shows gate failures as
// failed tests: one test case per gate and one that fails unless the run completed.
#pragma once

#include "reports/format.h"  // xmlEscape

#include <string>
#include <string_view>

#include "sim/result/result.h"

namespace cpscale::reports {

std::string renderJunit(const result::RunResult& r);

}  // namespace cpscale::reports
