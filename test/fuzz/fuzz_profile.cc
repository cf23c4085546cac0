// loadProfile on arbitrary files. ConfigError is the documented outcome for bad input;
// anything else escaping, a crash, a sanitizer report or a hang is a finding. A profile
// that loads must be one the local plane can start: its checks are what keep a user's
// flags from fighting cpscale's own.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sim/common/error.h"
#include "sim/controlplane/profile.h"
#include "test/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cpscale::fuzz::Sandbox sandbox;
  const auto path = sandbox.write("profile.yaml", std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    cpscale::controlplane::Profile p = cpscale::controlplane::loadProfile(path);
    CPSCALE_FUZZ_CHECK(p.apiservers >= 1 && p.apiservers <= 16, "apiservers in range");
    CPSCALE_FUZZ_CHECK(!p.etcds.empty() && p.etcds.size() <= 8, "one to eight etcds");
    CPSCALE_FUZZ_CHECK(p.etcds.front().resources.empty(), "the main etcd holds everything not routed");
    CPSCALE_FUZZ_CHECK(!p.clientApiservers().empty(), "the workloads have an apiserver");
    std::vector<std::string> urls;
    for (std::size_t i = 0; i < p.etcds.size(); ++i) urls.push_back("https://127.0.0.1:" + std::to_string(2379 + i));
    (void)p.etcdServersOverrides(urls);
  } catch (const cpscale::ConfigError&) {
  }
  return 0;
}
