#include "sim/cli/scenario_args.h"

#include "sim/cli/options.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/controlplane/local_plane.h"

namespace cpscale::cli {

namespace fs = std::filesystem;

std::vector<scenario::Override> scenarioOverrides(const cxxopts::ParseResult& r) {
  std::vector<scenario::Override> overrides;
  if (r.count("set"))
    for (const auto& s : r["set"].as<std::vector<std::string>>()) overrides.push_back(scenario::parseOverride(s));
  return overrides;
}

void addLeaseTierOption(cxxopts::Options& opts) {
  opts.add_options()("propagate-every",
                     "put a lease tier in front of the plane: it answers the kubelets' Lease renewals and writes "
                     "through transitions and one renewal per Lease every D (below the node monitor grace period)",
                     cxxopts::value<std::string>());
}

void applyLeaseTierOption(const cxxopts::ParseResult& r, controlplane::Profile& p) {
  if (!r.count("propagate-every")) return;
  if (namesCluster(r))
    throw ConfigError("command line", "--propagate-every",
                      std::string("puts a lease tier in front of the local plane or the model; against a cluster the "
                                  "profile is only recorded: drop it or ") +
                          kClusterOptions);
  const std::string text = r["propagate-every"].as<std::string>();
  const auto every = parseDuration(text);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(every.value_or(Duration{0}));
  const std::string why = every ? controlplane::leaseTierRefusal(ms, p) : "is not a duration";
  if (!why.empty()) throw ConfigError("command line", "--propagate-every", "'" + text + "' " + why);
  p.leaseTier = controlplane::LeaseTierSpec{ms};
}

std::vector<controlplane::Profile> loadProfiles(const cxxopts::ParseResult& r) {
  std::vector<controlplane::Profile> profiles;
  if (r.count("profile"))
    for (const auto& p : r["profile"].as<std::vector<std::string>>()) profiles.push_back(controlplane::loadProfile(p));
  if (profiles.empty()) profiles.emplace_back();
  for (auto& p : profiles) applyLeaseTierOption(r, p);
  return profiles;
}

std::string runIdArg(const cxxopts::ParseResult& r) {
  std::string runId = r.count("run-id") ? r["run-id"].as<std::string>() : newRunId();
  checkRunId(runId);
  return runId;
}

fs::path binDirArg(const cxxopts::ParseResult& r) {
  return r.count("bin-dir") ? fs::path(r["bin-dir"].as<std::string>()) : controlplane::defaultBinDir();
}

ClusterArg clusterArg(const cxxopts::ParseResult& r, const std::string& command, const std::string& doWhat) {
  ClusterArg c;
  if (!namesCluster(r)) return c;
  c.cluster = loadTarget(r);
  c.refused = !confirmedTarget(r, *c.cluster, command, doWhat);
  return c;
}

run::RunOptions runOptions(const cxxopts::ParseResult& r, const std::optional<kube::RestConfig>& cluster,
                           const controlplane::Profile& profile, const fs::path& binDir) {
  run::RunOptions ro;
  ro.cluster = cluster;
  ro.profile = profile;
  ro.binDir = binDir;
  ro.cleanup = r.count("no-cleanup") == 0;
  ro.progress = r.count("quiet") == 0;
  return ro;
}

}  // namespace cpscale::cli
