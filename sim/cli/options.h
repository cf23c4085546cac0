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

// --kubeconfig and --context, resolved as kubectl does ($KUBECONFIG, ~/.kube/config).
void addTargetOptions(cxxopts::Options& opts);
kube::RestConfig loadTarget(const cxxopts::ParseResult& r);

// A fresh run id ("r" + 7 hex digits): it prefixes every name a run creates.
std::string newRunId();
// Throws ConfigError unless `id` can name objects (1-20 of [a-z0-9-], alphanumeric ends).
void checkRunId(const std::string& id);
// --yes or CPSCALE_ASSUME_YES=1: the user confirmed a non-loopback target.
bool assumeYes(const cxxopts::ParseResult& r);
// GET /version through `transport` (bound to `config`): the server's gitVersion
// ("unknown" when the body does not say) and the HTTP version spoken. Throws
// UnavailableError when the server cannot be reached or refuses the credentials.
struct ServerReached {
  std::string gitVersion;
  std::string httpVersion;
};
ServerReached reachServer(kube::Transport& transport, const kube::RestConfig& config);

}  // namespace cpscale::cli
