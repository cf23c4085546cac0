// loadScenario with --set overrides on arbitrary files. The input is the scenario file;
// its leading lines of the form "#set path=value" (YAML comments, so the file parses
// the same with or without them) are also given as --set arguments, through
// parseOverride as the CLI does. ConfigError is the documented outcome for bad input;
// anything else escaping, a crash, a sanitizer report or a hang is a finding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/error.h"
#include "sim/scenario/scenario.h"
#include "test/fuzz/fuzz_support.h"
#include "workloads/templates.h"

namespace {

std::vector<std::string> overrideLines(std::string_view text) {
  std::vector<std::string> out;
  while (text.substr(0, 5) == "#set ") {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(5, nl == std::string_view::npos ? std::string_view::npos : nl - 5);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cpscale::fuzz::Sandbox sandbox;
  static const std::filesystem::path templates = std::filesystem::weakly_canonical(cpscale::workloads::templateDir());
  const std::string text(reinterpret_cast<const char*>(data), size);

  // Templates are read from the template directory (relative names) or where a
  // scenario says (absolute ones); both stay inside the sandbox and that directory.
  const std::vector<std::filesystem::path> bases{templates, sandbox.dir()};
  if (cpscale::fuzz::yamlNamesOutsideFiles(text, bases, bases)) return -1;

  std::vector<cpscale::scenario::Override> overrides;
  for (const auto& line : overrideLines(text)) {
    try {
      overrides.push_back(cpscale::scenario::parseOverride(line));
    } catch (const cpscale::ConfigError& e) {
      CPSCALE_FUZZ_CHECK(line.find('=') == std::string::npos || line.front() == '=', e.what());
      return 0;
    }
    if (cpscale::fuzz::yamlNamesOutsideFiles(overrides.back().value, bases, bases)) return -1;
  }

  const auto path = sandbox.write("scenario.yaml", text);
  try {
    cpscale::scenario::Scenario s = cpscale::scenario::loadScenario(path, overrides);
    CPSCALE_FUZZ_CHECK(!s.workloads.empty(), "a loaded scenario has a workload");
    CPSCALE_FUZZ_CHECK(s.duration.count() > 0, "a loaded scenario has a positive duration");
    if (s.capacity) {
      auto ladder = cpscale::scenario::capacityLadder(*s.capacity);
      CPSCALE_FUZZ_CHECK(!ladder.empty(), "a capacity search has a step");
    }
  } catch (const cpscale::ConfigError&) {
  }
  return 0;
}
