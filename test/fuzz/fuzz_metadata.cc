// decodeMetadata and decodeResourceVersion against nlohmann's SAX parse on arbitrary
// text. The one-pass scan is the fast path of every response a workload reads with
// Decode::kMetadata or kResourceVersion; whatever it returns, and wherever it gives up,
// the result must be exactly what the SAX parse gives for the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "sim/kube/api_client.h"
#include "test/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json fast = cpscale::kube::decodeMetadata(text);
  const nlohmann::json reference = cpscale::kube::decodeMetadataBySax(text);
  CPSCALE_FUZZ_CHECK(fast == reference, "the scan and the SAX parse disagree");
  // Decode::kResourceVersion reads the same field by the same scan, without a document.
  const nlohmann::json::json_pointer at("/metadata/resourceVersion");
  const std::string rv = reference.contains(at) && reference[at].is_string() ? reference[at].get<std::string>() : "";
  CPSCALE_FUZZ_CHECK(cpscale::kube::decodeResourceVersion(text) == rv, "the resourceVersion read disagrees");
  return 0;
}
