// junit.xml: a run as one JUnit test suite, so any CI system shows gate failures as
// failed tests: one test case per gate and one that fails unless the run completed.
#pragma once

#include <string>
#include <string_view>

#include "reports/result.h"

namespace cpscale::reports {

std::string renderJunit(const RunResult& r);

// Text for XML content and attribute values: & < > " ' escaped, and characters XML 1.0
// forbids (control characters other than tab, newline, carriage return) replaced by
// U+FFFD, since a parser rejects the whole file over one of them.
std::string xmlEscape(std::string_view s);

}  // namespace cpscale::reports
