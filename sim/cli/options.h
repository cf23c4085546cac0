// Command-line pieces shared by subcommands.
#pragma once

#include <cxxopts.hpp>

#include "sim/cli/commands.h"
#include "sim/kube/kubeconfig.h"

namespace cpscale::cli {

// Parses `args` (what follows the command name); anything unrecognised is a
// ConfigError naming it.
cxxopts::ParseResult parseArgs(cxxopts::Options& opts, const Args& args);

// --kubeconfig and --context, resolved as kubectl does ($KUBECONFIG, ~/.kube/config).
void addTargetOptions(cxxopts::Options& opts);
kube::RestConfig loadTarget(const cxxopts::ParseResult& r);

}  // namespace cpscale::cli
