// parseGate and evaluateGate on arbitrary gate text. A gate either parses or fails
// with ConfigError; a parsed gate is evaluated against a fixed set of figures (exact,
// summable, ambiguous, unavailable, windowed) plus figures made to match the gate's
// own name and selector, so evaluation reaches every branch. A gate never passes
// without a measured number, and a failure that did not compare says why.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/error.h"
#include "sim/metrics/gate.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using cpscale::metrics::Figure;
using cpscale::metrics::Labels;
using cpscale::metrics::Source;
using cpscale::metrics::Window;

std::vector<Figure> catalogue() {
  std::vector<Figure> f;
  f.push_back(Figure::measured("write_qps", {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}},
                               480, "1/s", Source::kApiserver));
  f.push_back(Figure::measured("write_qps", {{"group", ""}, {"resource", "nodes"}, {"verb", "PATCH"}}, 12, "1/s",
                               Source::kApiserver));
  f.push_back(
      Figure::measured("client_latency_p99", {{"resource", "leases"}, {"verb", "PUT"}}, 0.2, "s", Source::kClient));
  f.push_back(
      Figure::measured("client_latency_p99", {{"resource", "nodes"}, {"verb", "GET"}}, 0.05, "s", Source::kClient));
  f.push_back(Figure::measured("lease_write_share", {}, 0.7, "ratio", Source::kApiserver));
  f.push_back(Figure::unavailable("bytes_per_object", {{"apiserver", "kube-apiserver-0"}}, "bytes", Source::kApiserver,
                                  "no apiserver_storage_size_bytes in the scrapes"));
  f.push_back(
      Figure::measured("bytes_per_object", {{"apiserver", "kube-apiserver-1"}}, 3000, "bytes", Source::kApiserver));
  f.push_back(Figure::measured("generator_limited", {}, 0, "count", Source::kClient));
  Figure setup = Figure::measured("write_qps", {{"resource", "nodes"}}, 900, "1/s", Source::kApiserver);
  setup.window = Window::kSetup;
  f.push_back(setup);
  Figure run = Figure::measured("capacity", {{"axis", "node"}}, 3000, "count", Source::kClient);
  run.window = Window::kRun;
  f.push_back(run);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  cpscale::metrics::Gate gate;
  try {
    gate = cpscale::metrics::parseGate(text, "fuzz.yaml:1", "gates[0]");
  } catch (const cpscale::ConfigError& e) {
    CPSCALE_FUZZ_CHECK(e.field() == "gates[0]", e.what());
    return 0;
  }
  CPSCALE_FUZZ_CHECK(!gate.figure.empty(), text);
  for (std::size_t i = 1; i < gate.selector.size(); ++i)
    CPSCALE_FUZZ_CHECK(!(gate.selector[i].name < gate.selector[i - 1].name), "selector sorted by name");

  std::vector<Figure> figures = catalogue();
  // The gate's own figure: once with exactly its selector, twice with one more label
  // (summed when additive, ambiguous when not), once unavailable in another shape.
  Labels exact = gate.selector;
  figures.push_back(Figure::measured(gate.figure, exact, 1.5, "1/s", Source::kApiserver));
  for (const char* v : {"a", "b"}) {
    Labels more = exact;
    more.push_back({"zz_extra", v});
    figures.push_back(Figure::measured(gate.figure, more, 2, size % 2 ? "bytes" : "s", Source::kApiserver));
  }
  Labels other = exact;
  other.insert(other.begin(), {"", "x"});
  figures.push_back(Figure::unavailable(gate.figure, other, "count", Source::kEtcd, "not scraped"));

  for (std::size_t n : {std::size_t{0}, std::size_t{10}, figures.size() - 1, figures.size()}) {
    auto r = cpscale::metrics::evaluateGate(gate, std::span<const Figure>(figures.data(), n));
    CPSCALE_FUZZ_CHECK(!r.passed || r.measured.has_value(), "passed without a measured value: " + text);
    CPSCALE_FUZZ_CHECK(r.measured.has_value() || !r.reason.empty(), "failed without a reason: " + text);
    CPSCALE_FUZZ_CHECK(r.gate.text == gate.text, text);
  }
  return 0;
}
