// job: a sharded run as a Kubernetes Indexed Job. Prints the manifests (for kubectl
// apply, or a review), or creates them through the API (--apply), or has the server
// validate them without creating anything (--apply --dry-run); then says how to
// collect the shards' results.
#include <algorithm>
#include <cctype>
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/scenario_args.h"
#include "sim/common/error.h"
#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/run/job_manifest.h"
#include "sim/run/shard_results.h"
#include "sim/scenario/gate_check.h"
#include "sim/scenario/scenario.h"
#include "workloads/params.h"

namespace cpscale::cli {
namespace {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

// Where each manifest goes.
kube::ResourceRef collectionOf(const ojson& doc) {
  const std::string kind = doc.at("kind");
  const std::string ns = doc.at("metadata").value("namespace", "");
  if (kind == "ConfigMap") return kube::ResourceRef(kube::gvr::kConfigMaps).in(ns);
  if (kind == "ServiceAccount") return kube::ResourceRef(kube::gvr::kServiceAccounts).in(ns);
  if (kind == "ClusterRole") return kube::ResourceRef(kube::gvr::kClusterRoles);
  if (kind == "ClusterRoleBinding") return kube::ResourceRef(kube::gvr::kClusterRoleBindings);
  if (kind == "Job") return kube::ResourceRef({"batch", "v1", "jobs", true}).in(ns);
  throw std::logic_error("no collection for kind " + kind);
}

std::string objectName(const ojson& doc) {
  std::string kind = doc.at("kind");
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string ns = doc.at("metadata").value("namespace", "");
  return kind + " " + (ns.empty() ? "" : ns + "/") + doc.at("metadata").value("name", "");
}

// A word as a shell reads it back.
std::string shellWord(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,@%+") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// A key of ConfigMap data (and a file name under /scenario).
bool configMapKey(const std::string& s) {
  if (s.empty() || s.size() > 253 || s == "." || s == "..") return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

}  // namespace

int job(const Args& args) {
  cxxopts::Options opts("cpscale job",
                        "A sharded run as a Kubernetes Indexed Job: pod I runs shard I in the cluster "
                        "(cpscale run --in-cluster --shard I/N --publish-result). Prints the manifests: the scenario "
                        "as a ConfigMap, a ServiceAccount, the ClusterRole the scenario's workloads need and its "
                        "binding, the Job; --apply creates them. Then `cpscale collect` merges the shards' results.");
  addTargetOptions(opts);
  opts.add_options()("scenario", "scenario file (YAML)", cxxopts::value<std::string>())(
      "shards", "pods, each a shard of the run (2 to 1024)", cxxopts::value<std::size_t>())(
      "image", "the cpscale image (make image)",
      cxxopts::value<std::string>()->default_value("cpscale:" CPSCALE_VERSION))(
      "namespace", "the namespace of the Job, its ServiceAccount and the scenario's ConfigMap (it must exist)",
      cxxopts::value<std::string>()->default_value("default"))("run-id", "run id (default: random); names every object",
                                                               cxxopts::value<std::string>())(
      "set", "override a scenario field: path.to.field=value (repeatable; passed on to the pods)",
      cxxopts::value<std::vector<std::string>>())("apply",
                                                  "create the objects through the API instead of printing them")(
      "dry-run", "with --apply: the server validates every object (dryRun=All) and creates nothing")(
      "yes", "confirm creating the Job on a non-loopback server (or CPSCALE_ASSUME_YES=1)")("h,help", "show this help");
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO --shards N");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;

  // Everything that can be wrong with the input is checked before anything is printed
  // or sent: the pods would find it only once they run.
  if (!r.count("scenario"))
    throw ConfigError("command line", "SCENARIO", "a scenario file is required (e.g. scenarios/smoke.yaml)");
  if (!r.count("shards"))
    throw ConfigError("command line", "--shards", "how many shards (pods) the run has is required");
  run::JobSpec spec;
  spec.shards = r["shards"].as<std::size_t>();
  if (spec.shards < 2 || spec.shards > 1024)
    throw ConfigError("command line", "--shards",
                      "must be 2 to 1024 (" + std::to_string(spec.shards) +
                          " given); one process needs no Job: cpscale run --in-cluster in a pod, or from outside");
  const std::vector<scenario::Override> overrides = scenarioOverrides(r);
  // The pods get the overrides as written and parse them as `cpscale run` does.
  if (r.count("set")) spec.overrides = r["set"].as<std::vector<std::string>>();
  const fs::path scenarioPath = r["scenario"].as<std::string>();
  // The parser `cpscale run` uses: the pods read this text with these overrides.
  scenario::Scenario sc = scenario::loadScenario(scenarioPath, overrides);
  // Each pod runs one `cpscale run`, which refuses a capacity gate: refused here, before
  // anything is created in the cluster.
  scenario::refuseCapacityGatesOutsideASearch(sc);
  if (!sc.faults.empty())
    throw ConfigError(sc.faults.front().where, sc.faults.front().path,
                      "faults act on the members of a local plane cpscale starts, not on the cluster a Job runs in");
  {
    std::ifstream in(scenarioPath, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    spec.scenarioText = text.str();
  }
  if (spec.scenarioText.size() > run::kResultChunkBytes)
    throw ConfigError(scenarioPath.string(), "", "is larger than a ConfigMap holds");
  spec.scenarioFile = scenarioPath.filename().string();
  if (!configMapKey(spec.scenarioFile)) spec.scenarioFile = "scenario.yaml";
  spec.ns = r["namespace"].as<std::string>();
  if (!workloads::isDnsLabel(spec.ns))
    throw ConfigError("command line", "--namespace", "'" + spec.ns + "' is not a namespace name (a DNS label)");
  spec.image = r["image"].as<std::string>();
  if (spec.image.empty() || spec.image.find_first_of(" \t\n") != std::string::npos)
    throw ConfigError("command line", "--image", "'" + spec.image + "' is not an image reference");
  spec.runId = runIdArg(r);
  spec.workers = sc.workers;
  spec.expectedDuration = std::chrono::duration_cast<std::chrono::seconds>(sc.setupTimeout + sc.warmup + sc.duration +
                                                                           sc.drain + std::chrono::minutes(2));
  spec.rules = run::runRules(sc.workloads);
  const bool apply = r.count("apply") > 0, dryRun = r.count("dry-run") > 0;
  if (dryRun && !apply)
    throw ConfigError("command line", "--dry-run", "goes with --apply (printing sends nothing anyway)");

  // The collect step names the cluster as this command was told to.
  std::string target;
  for (const char* o : {"kubeconfig", "context"})
    if (r.count(o))
      target += std::string(target.empty() ? "" : " ") + "--" + o + " " + shellWord(r[o].as<std::string>());
  if (r.count("in-cluster")) target += std::string(target.empty() ? "" : " ") + "--in-cluster";
  if (r.count("yes")) target += std::string(target.empty() ? "" : " ") + "--yes";
  const std::string collect = run::collectCommand(spec, target);
  const std::string name = "cpscale-" + spec.runId;
  const std::vector<ojson> docs = run::jobManifests(spec);
  const std::string removeHint = "kubectl delete job,configmap,serviceaccount -n " + spec.ns + " -l " + run::kJobLabel +
                                 "=" + spec.runId + " && kubectl delete clusterrole,clusterrolebinding -l " +
                                 run::kJobLabel + "=" + spec.runId;

  if (!apply) {
    for (const auto& d : docs) std::cout << "---\n" << run::toYaml(d);
    std::cout << "# Run " << spec.runId << ": " << spec.shards << " shards of scenario " << sc.name << ", Job "
              << spec.ns << "/" << name << " (image " << spec.image << ").\n"
              << "# Apply with kubectl apply -f <this file>, or cpscale job ... --apply.\n"
              << "# Remove the Job's objects afterwards: " << removeHint << "\n"
              << "# Collect and merge the shards' results (waits until every shard has published its own):\n"
              << "#   " << collect << "\n";
    return 0;
  }

  kube::RestConfig config = loadTarget(r);
  if (!dryRun && !confirmedTarget(r, config, "cpscale job",
                                  "create Job " + spec.ns + "/" + name + " and a ClusterRole for its shards on"))
    return static_cast<int>(ExitCode::kBadInput);
  engine::WallClock wall;
  kube::CurlTransport transport(config);
  kube::ApiClient api(transport, wall);
  reachServer(transport, config);
  kube::WriteOptions wo;
  wo.fieldManager = "cpscale";
  wo.dryRun = dryRun;
  std::vector<std::string> created;
  bool refused = false;
  for (const auto& d : docs) {
    kube::ApiResult res = api.create(collectionOf(d), nlohmann::json(d), wo);
    if (res.ok()) {
      std::cout << objectName(d) << (dryRun ? " valid (server dry run, not created)" : " created") << "\n";
      created.push_back(objectName(d));
      continue;
    }
    refused = true;
    std::cout << objectName(d) << " refused: HTTP " << res.status << " "
              << (res.apiStatus.message.empty() ? res.describe() : res.apiStatus.message) << "\n";
    // Dry run: every object's verdict. Otherwise the Job must not start half set up.
    if (!dryRun) break;
  }
  if (refused) {
    if (!dryRun && !created.empty())
      std::cerr << "cpscale job: created before the refusal, and left: " << created.size() << " objects (" << removeHint
                << ")\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
  if (dryRun) {
    std::cerr << "cpscale job: the server accepts every object; nothing was created\n";
    return 0;
  }
  std::cerr << "cpscale job: run " << spec.runId << " started as Job " << spec.ns << "/" << name << " (" << spec.shards
            << " shards)\ncpscale job: remove its objects afterwards: " << removeHint
            << "\ncpscale job: collect and merge the shards' results:\n  " << collect << "\n";
  return 0;
}

}  // namespace cpscale::cli
