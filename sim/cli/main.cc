// cpscale: control-plane scale simulator and load generator.
#include <signal.h>
#include <yaml-cpp/exceptions.h>

#include <cxxopts.hpp>
#include <iostream>
#include <map>

#include "sim/cli/commands.h"
#include "sim/common/error.h"

namespace {

struct Command {
  int (*run)(const cpscale::cli::Args&);
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"up", {cpscale::cli::up, "start the local vanilla control plane and write its kubeconfig"}},
      {"down", {cpscale::cli::down, "stop the local control plane started by `up`"}},
      {"status", {cpscale::cli::status, "show the local control plane and whether each member runs"}},
      {"run", {cpscale::cli::run, "run a scenario against the local plane or a cluster, measure, gate, report"}},
      {"report", {cpscale::cli::report, "render summary.md, report.html and junit.xml from a result.json"}},
      {"compare", {cpscale::cli::compare, "compare two results figure by figure"}},
      {"merge", {cpscale::cli::merge, "one result from a sharded run's shards' results"}},
      {"job", {cpscale::cli::job, "a sharded run as a Kubernetes Indexed Job: print its manifests, or apply them"}},
      {"collect",
       {cpscale::cli::collect, "fetch the results a sharded run's shards published in the cluster, and merge them"}},
      {"capacity",
       {cpscale::cli::capacity, "step a scenario knob until a recipe stops holding: capacity per axis and recipe"}},
      {"cleanup", {cpscale::cli::cleanup, "delete every object a run created"}},
      {"simulate", {cpscale::cli::simulate, "a scenario in virtual time against the calibrated control-plane model"}},
      {"classify",
       {cpscale::cli::classify, "which axis binds a cluster or a result, and which recipe of the ladder fits it"}},
      {"calibrate",
       {cpscale::cli::calibrate, "measure the cost model's parameters on this machine with short live probes"}},
      {"capture",
       {cpscale::cli::capture, "measure a cluster's shape (read-only) and write a scenario that reproduces it"}},
      {"check", {cpscale::cli::check, "check that a cluster is reachable with a kubeconfig (read-only)"}},
      {"version", {cpscale::cli::version, "print cpscale's version and the pinned upstream versions"}},
  };
  return table;
}

void usage(std::ostream& os) {
  os << "cpscale: Kubernetes control-plane scale simulator and load generator\n\n"
        "Usage: cpscale <command> [options]     (cpscale <command> --help for its options)\n\n"
        "Commands:\n";
  for (const auto& [name, cmd] : commands())
    os << "  " << name << std::string(10 - name.size(), ' ') << cmd.summary << "\n";
  os << "\nExit codes: 0 ok, 1 a gate failed, 2 bad input or usage, 3 target unavailable or run aborted, 4 a shard's\n"
        "result was not published (run --publish-result)\n";
}

}  // namespace

int main(int argc, char** argv) {
  using cpscale::ExitCode;
  // A peer that closes a socket (an apiserver restarting, a /metrics client leaving) or
  // a closed stdout pipe must surface as a write error, not kill the run half-way with
  // nothing written.
  ::signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    usage(std::cerr);
    return static_cast<int>(ExitCode::kBadInput);
  }
  std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(std::cout);
    return 0;
  }
  auto it = commands().find(name);
  if (it == commands().end()) {
    std::cerr << "cpscale: unknown command '" << name << "'\n";
    usage(std::cerr);
    return static_cast<int>(ExitCode::kBadInput);
  }
  cpscale::cli::Args args(argv + 2, argv + argc);
  try {
    return it->second.run(args);
  } catch (const cpscale::ConfigError& e) {
    std::cerr << "cpscale " << name << ": " << e.what() << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const cxxopts::exceptions::exception& e) {
    std::cerr << "cpscale " << name << ": " << e.what() << " (see cpscale " << name << " --help)\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const YAML::Exception& e) {
    // Input files are read through YamlField, which names the file; this is the net
    // for any YAML read that is not, so bad input never looks like an outage.
    std::cerr << "cpscale " << name << ": invalid YAML";
    if (e.mark.line >= 0) std::cerr << " at line " << e.mark.line + 1 << ", column " << e.mark.column + 1;
    std::cerr << ": " << e.msg << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  } catch (const cpscale::UnavailableError& e) {
    std::cerr << "cpscale " << name << ": " << e.what() << "\n";
    return static_cast<int>(ExitCode::kUnavailable);
  } catch (const std::exception& e) {
    std::cerr << "cpscale " << name << ": " << e.what() << "\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
}
