#include "sim/cli/scenario_args.h"

#include "sim/cli/options.h"
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

std::vector<controlplane::Profile> loadProfiles(const cxxopts::ParseResult& r) {
  std::vector<controlplane::Profile> profiles;
  if (r.count("profile"))
    for (const auto& p : r["profile"].as<std::vector<std::string>>()) profiles.push_back(controlplane::loadProfile(p));
  if (profiles.empty()) profiles.emplace_back();
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

RunOptions runOptions(const cxxopts::ParseResult& r, const std::optional<kube::RestConfig>& cluster,
                      const controlplane::Profile& profile, const fs::path& binDir) {
  RunOptions ro;
  ro.cluster = cluster;
  ro.profile = profile;
  ro.binDir = binDir;
  ro.cleanup = r.count("no-cleanup") == 0;
  ro.progress = r.count("quiet") == 0;
  return ro;
}

}  // namespace cpscale::cli
