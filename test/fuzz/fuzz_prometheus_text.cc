// parsePrometheusText on arbitrary bodies. Besides crashes and sanitizer reports it
// checks what the header promises: a body is accepted or rejected as a whole, whatever
// the family filter keeps (a dropped family is still checked for syntax), and the
// families a filter keeps are exactly those of an unfiltered parse.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sim/metrics/prometheus_text.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using cpscale::metrics::FamilyMap;
using cpscale::metrics::MetricFamily;
using cpscale::metrics::ParseResult;

bool sameValue(double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0; }

bool sameFamily(const MetricFamily& a, const MetricFamily& b) {
  if (a.name != b.name || a.type != b.type || a.help != b.help || a.samples.size() != b.samples.size()) return false;
  for (std::size_t i = 0; i < a.samples.size(); ++i) {
    const auto& x = a.samples[i];
    const auto& y = b.samples[i];
    if (x.name != y.name || x.labels != y.labels || !sameValue(x.value, y.value) || x.timestampMs != y.timestampMs)
      return false;
  }
  return true;
}

// Keeps a family by a hash of its name: about half of them, differently per name.
bool keepHalf(std::string_view name) {
  std::uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return (h >> 7) & 1;
}

void checkLabels(const FamilyMap& families) {
  for (const auto& [name, family] : families) {
    CPSCALE_FUZZ_CHECK(name == family.name, name);
    for (const auto& s : family.samples)
      for (std::size_t i = 1; i < s.labels.size(); ++i)
        CPSCALE_FUZZ_CHECK(s.labels[i - 1].name < s.labels[i].name, "labels sorted and unique in " + s.name);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  ParseResult all = cpscale::metrics::parsePrometheusText(body);
  ParseResult some = cpscale::metrics::parsePrometheusText(body, keepHalf);
  ParseResult none = cpscale::metrics::parsePrometheusText(body, [](std::string_view) { return false; });

  CPSCALE_FUZZ_CHECK(all.ok() == some.ok() && all.ok() == none.ok(), "accepted with one filter, rejected with another");
  if (!all.ok()) {
    CPSCALE_FUZZ_CHECK(all.families.empty() && some.families.empty(), "families returned with an error");
    CPSCALE_FUZZ_CHECK(all.error->line >= 1, all.error->describe());
    CPSCALE_FUZZ_CHECK(
        all.error->describe() == some.error->describe() && all.error->describe() == none.error->describe(),
        all.error->describe() + " vs " + some.error->describe());
    return 0;
  }
  checkLabels(all.families);
  CPSCALE_FUZZ_CHECK(none.families.empty(), "a filter that keeps nothing kept a family");
  for (const auto& [name, family] : all.families) {
    auto it = some.families.find(name);
    if (keepHalf(name)) {
      CPSCALE_FUZZ_CHECK(it != some.families.end() && sameFamily(family, it->second), "kept family differs: " + name);
    } else {
      CPSCALE_FUZZ_CHECK(it == some.families.end(), "dropped family kept: " + name);
    }
  }
  for (const auto& [name, family] : some.families)
    CPSCALE_FUZZ_CHECK(all.families.count(name) == 1, "filtered parse has a family the full parse lacks: " + name);
  return 0;
}
