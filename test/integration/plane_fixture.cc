#include "test/integration/plane_fixture.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>

namespace cpscale::testing {
namespace fs = std::filesystem;

namespace {
PlaneEnvironment* g_instance = nullptr;
}

fs::path makeTempDir(const std::string& prefix) {
  std::string tmpl = (fs::path(::testing::TempDir()) / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  return tmpl;
}

void PlaneEnvironment::SetUp() {
  g_instance = this;
  stateDir_ = makeTempDir("cpscale-plane");
  controlplane::PlaneOptions options;
  options.stateDir = stateDir_;
  options.binDir = controlplane::defaultBinDir();
  options.profile = profile_;
  options.name = "itest";
  plane_ = std::make_unique<controlplane::LocalPlane>(options);
}

void PlaneEnvironment::TearDown() {
  plane_.reset();
  std::error_code ec;
  fs::remove_all(stateDir_, ec);
}

kube::RestConfig PlaneEnvironment::restConfig() const {
  kube::LoadOptions lo;
  lo.explicitPath = kubeconfig().string();
  return kube::loadKubeconfig(lo);
}

PlaneEnvironment& PlaneEnvironment::instance() {
  if (!g_instance) throw std::logic_error("PlaneEnvironment not registered");
  return *g_instance;
}

CommandResult runCommand(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(p);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace cpscale::testing
