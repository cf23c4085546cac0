// What every command that runs a scenario (run, capacity, simulate, calibrate, job)
// reads from its command line the same way: --set overrides, --profile files, the run
// id, the pinned binaries' directory, the cluster with its confirmation, the RunOptions
// they fill, and the exit code a result's gates give.
#pragma once

#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "sim/controlplane/profile.h"
#include "sim/kube/kubeconfig.h"
#include "sim/metrics/gate.h"
#include "sim/run/runner.h"
#include "sim/scenario/scenario.h"

namespace cpscale::cli {

// --set path.to.field=value, in the order given; ConfigError names a malformed one.
std::vector<scenario::Override> scenarioOverrides(const cxxopts::ParseResult& r);
// --propagate-every D: every profile gets a lease tier writing through every D (the
// node-liveness seam, controlplane::LeaseTierSpec).
void addLeaseTierOption(cxxopts::Options& opts);
void applyLeaseTierOption(const cxxopts::ParseResult& r, controlplane::Profile& profile);
// Every --profile, loaded and validated; the default profile alone when none is given;
// with --propagate-every, each with that lease tier (ConfigError if it cannot be).
std::vector<controlplane::Profile> loadProfiles(const cxxopts::ParseResult& r);
// --run-id, checked (ConfigError), or a fresh one.
std::string runIdArg(const cxxopts::ParseResult& r);
// --bin-dir, or where the pinned kube-apiserver and etcd are by default.
std::filesystem::path binDirArg(const cxxopts::ParseResult& r);

// The cluster the command line names (--kubeconfig/--context/--in-cluster), or none:
// the local plane. `refused` when the user did not confirm a non-loopback server (said
// on stderr, see confirmedTarget): the command then exits 2, having contacted nothing.
struct ClusterArg {
  std::optional<kube::RestConfig> cluster;
  bool refused = false;
};
ClusterArg clusterArg(const cxxopts::ParseResult& r, const std::string& command, const std::string& doWhat);

// The RunOptions every command fills alike: target, profile, binaries, --no-cleanup and
// --quiet. Run id, output directory and the rest are the command's.
run::RunOptions runOptions(const cxxopts::ParseResult& r, const std::optional<kube::RestConfig>& cluster,
                           const controlplane::Profile& profile, const std::filesystem::path& binDir);

}  // namespace cpscale::cli
