// The real control plane for an integration test binary: started once (the vanilla
// pinned binaries from $CPSCALE_BIN_DIR), shared by every test case, stopped at exit.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "sim/controlplane/local_plane.h"
#include "sim/kube/kubeconfig.h"

namespace cpscale::testing {

class PlaneEnvironment : public ::testing::Environment {
 public:
  explicit PlaneEnvironment(controlplane::Profile profile = {}) : profile_(std::move(profile)) {}
  void SetUp() override;
  void TearDown() override;

  static PlaneEnvironment& instance();
  const controlplane::LocalPlane& plane() const { return *plane_; }
  const std::filesystem::path& kubeconfig() const { return plane_->kubeconfig(); }
  // The plane's kubeconfig, loaded as cpscale loads any.
  kube::RestConfig restConfig() const;

 private:
  controlplane::Profile profile_;
  std::filesystem::path stateDir_;
  std::unique_ptr<controlplane::LocalPlane> plane_;
};

// A unique temporary directory under the test's TempDir.
std::filesystem::path makeTempDir(const std::string& prefix);

// Runs a shell command, returning its exit code and combined output.
struct CommandResult {
  int exitCode = -1;
  std::string output;
};
CommandResult runCommand(const std::string& command);

}  // namespace cpscale::testing
