// Command-line pieces shared by subcommands.
#pragma once

#include <cxxopts.hpp>
#include <optional>
#include <string>

#include "sim/cli/commands.h"
#include "sim/kube/kubeconfig.h"
#include "sim/kube/transport.h"

namespace cpscale::cli {

// Parses `args` (what follows the command name); anything unrecognised is a
// ConfigError naming it. With -h/--help it prints the command's help and returns
// nullopt: the command then exits 0. `opts` must declare "h,help".
std::optional<cxxopts::ParseResult> parseArgs(cxxopts::Options& opts, const Args& args);

// --kubeconfig and --context, resolved as kubectl does ($KUBECONFIG, ~/.kube/config),
// or --in-cluster: the pod's service account (kube::loadInCluster; its directory
// $CPSCALE_SERVICE_ACCOUNT_DIR when set), exclusive with both.
void addTargetOptions(cxxopts::Options& opts);
kube::RestConfig loadTarget(const cxxopts::ParseResult& r);
// True when the command line names a cluster (any of the three options): commands that
// otherwise start or read something local go to that cluster instead.
bool namesCluster(const cxxopts::ParseResult& r);
// How messages name those options.
inline constexpr const char* kClusterOptions = "--kubeconfig/--context/--in-cluster";

// A fresh run id ("r" + 7 hex digits): it prefixes every name a run creates.
std::string newRunId();
// Throws ConfigError unless `id` can name objects (1-20 of [a-z0-9-], alphanumeric ends).
void checkRunId(const std::string& id);
// --yes or CPSCALE_ASSUME_YES=1: the user confirmed a non-loopback target.
bool assumeYes(const cxxopts::ParseResult& r);
// True when `config`'s server is loopback or the user confirmed it; otherwise says on
// stderr what `command` would `doWhat` ("send load to", "delete objects on") and how to
// confirm, and returns false: the command then exits 2, having contacted nothing.
bool confirmedTarget(const cxxopts::ParseResult& r, const kube::RestConfig& config, const std::string& command,
                     const std::string& doWhat);
// GET /version through `transport` (bound to `config`): the server's gitVersion
// ("unknown" when the body does not say) and the HTTP version spoken. Throws
// UnavailableError when the server cannot be reached or refuses the credentials.
struct ServerReached {
  std::string gitVersion;
  std::string httpVersion;
};
ServerReached reachServer(kube::Transport& transport, const kube::RestConfig& config);

}  // namespace cpscale::cli
