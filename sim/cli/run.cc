// run, report, compare, cleanup: the commands around a scenario run.
#include <cstdlib>
#include <cxxopts.hpp>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "reports/capacity_report.h"
#include "reports/compare.h"
#include "reports/html.h"
#include "reports/junit.h"
#include "reports/merge.h"
#include "reports/run_outputs.h"
#include "reports/summary.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/cli/scenario_args.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/interrupt.h"
#include "sim/controlplane/local_plane.h"
#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/result/capacity.h"
#include "sim/result/result.h"
#include "sim/run/metrics_endpoint.h"
#include "sim/run/runner.h"
#include "sim/run/shard_results.h"
#include "sim/run/target_check.h"
#include "sim/scenario/gate_check.h"
#include "workloads/cleanup.h"

namespace cpscale::cli {
namespace fs = std::filesystem;
namespace {

// --publish-result: the shard's result.json, already written, stored in the cluster
// too. Returns the run's exit code, or 4 when a completed run's result could not be
// stored (a run that failed keeps its 3).
int publishResult(const kube::RestConfig& cluster, const fs::path& resultFile, const std::string& runId,
                  const run::ShardSpec& shard, int exitCode) {
  std::ifstream in(resultFile, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  run::PublishOutcome p;
  if (!in) {
    p.detail = "cannot read " + resultFile.string();
  } else {
    engine::WallClock wall;
    kube::CurlTransport transport(cluster);
    kube::ApiClient api(transport, wall);
    p = run::publishShardResult(api, runId, shard.index, text.str());
  }
  if (p.ok) {
    std::cerr << "cpscale run: result published for `cpscale collect --run-id " << runId << "` (ConfigMap"
              << (p.names.size() > 1 ? "s " : " ") << run::kMeetingNamespace << "/" << p.names.front()
              << (p.names.size() > 1 ? " to -" + std::to_string(p.names.size() - 1) : "") << ")\n";
    return exitCode;
  }
  std::cerr << "cpscale run: shard " << shard.index << "'s result is in " << resultFile.string()
            << " but could not be published for `cpscale collect`: " << p.detail << "\n";
  return exitCode == static_cast<int>(ExitCode::kUnavailable) ? exitCode : static_cast<int>(ExitCode::kNotPublished);
}

// What `cpscale merge` and `cpscale collect` share: the shards' results as one, written
// to `out` with its reports, the summary printed. Returns the gates' exit code.
int mergeResults(const std::vector<std::string>& paths, const fs::path& out) {
  std::vector<result::RunResult> shards;
  for (const auto& p : paths) shards.push_back(result::readResult(p));
  result::RunResult merged = reports::mergeShards(std::move(shards), paths);
  reports::writeRunOutputs(merged, out);
  const std::string summary = reports::renderTerminalSummary(merged);
  std::cout << summary << "\nReport: " << (out / "report.html").string()
            << "\nResult: " << (out / "result.json").string() << "\n";
  return merged.exitCode;
}

}  // namespace

int run(const Args& args) {
  cxxopts::Options opts("cpscale run", "Run a scenario against the local plane (default) or a cluster.");
  addTargetOptions(opts);
  addLeaseTierOption(opts);
  opts.add_options()("scenario", "scenario file (YAML)", cxxopts::value<std::string>())(
      "profile", "control-plane profile for the local plane; give two to compare them",
      cxxopts::value<std::vector<std::string>>())("set", "override a scenario field: path.to.field=value (repeatable)",
                                                  cxxopts::value<std::vector<std::string>>())(
      "out", "output directory (default runs/<run-id>)", cxxopts::value<std::string>())(
      "run-id", "run id (default: random); labels every object the run creates", cxxopts::value<std::string>())(
      "keep", "leave the local plane running after the run")("no-cleanup", "keep the objects the run created")(
      "yes", "confirm sending load to a non-loopback server (or CPSCALE_ASSUME_YES=1)")("quiet", "no progress output")(
      "shard",
      "drive shard I of N of every population (I from 0); every shard runs with the same --run-id "
      "and --kubeconfig, shard 0 sets up, scrapes and cleans up",
      cxxopts::value<std::string>())(
      "publish-result",
      "a shard: store its result.json in the cluster too, for `cpscale collect` (exit 4 if it "
      "cannot)")("metrics-addr", "serve the generator's own Prometheus metrics on host:port (:port = loopback)",
                 cxxopts::value<std::string>())(
      "pin",
      "pin a local plane's member or the generator to CPUs: ROLE=CPUS (kube-apiserver, etcd, "
      "kube-controller-manager, kube-scheduler, generator; CPUS as taskset -c), repeatable, or 'isolated'",
      cxxopts::value<std::vector<std::string>>())(
      "bin-dir", "pinned kube-apiserver/etcd directory (default $CPSCALE_BIN_DIR or ~/.cache/cpscale/bin/current)",
      cxxopts::value<std::string>())("h,help", "show this help");
  opts.parse_positional({"scenario"});
  opts.positional_help("SCENARIO");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("scenario"))
    throw ConfigError("command line", "SCENARIO", "a scenario file is required (e.g. scenarios/smoke.yaml)");

  // Everything that can be wrong with the input is checked before anything is contacted.
  const std::vector<scenario::Override> overrides = scenarioOverrides(r);
  std::string scenarioPath = r["scenario"].as<std::string>();
  scenario::Scenario probe = scenario::loadScenario(scenarioPath, overrides);
  // One run cannot judge what only a capacity search finds.
  scenario::refuseCapacityGatesOutsideASearch(probe);

  const std::vector<controlplane::Profile> profiles = loadProfiles(r);
  if (profiles.size() > 2)
    throw ConfigError("command line", "--profile", "at most two profiles can be compared in one run");
  for (const auto& p : profiles) scenario::checkGatesOnProfile(probe, p);

  controlplane::Placement placement;
  if (r.count("pin"))
    placement = controlplane::parsePlacement(r["pin"].as<std::vector<std::string>>(), controlplane::cpusOnline());
  if (namesCluster(r) && !placement.empty())
    throw ConfigError("command line", "--pin",
                      std::string("pins the local plane's members; drop it or ") + kClusterOptions);
  if (namesCluster(r) && profiles.size() > 1)
    throw ConfigError("command line", "--profile",
                      std::string("two profiles need the local plane; drop ") + kClusterOptions);
  const ClusterArg target = clusterArg(r, "cpscale run", "send load to");
  if (target.refused) return static_cast<int>(ExitCode::kBadInput);
  const std::optional<kube::RestConfig>& cluster = target.cluster;
  run::ShardSpec shard;
  if (r.count("shard")) {
    shard = run::parseShard(r["shard"].as<std::string>());
    if (shard.sharded() && !cluster)
      throw ConfigError("command line", "--shard",
                        "the shards of a run share one cluster: give each the same --kubeconfig or --in-cluster (for a "
                        "local plane, `cpscale up` prints it)");
    if (shard.sharded() && !r.count("run-id"))
      throw ConfigError("command line", "--shard", "the shards of a run meet by run id: give each the same --run-id");
  }
  const bool publish = r.count("publish-result") > 0;
  if (publish && !shard.sharded())
    throw ConfigError("command line", "--publish-result",
                      "publishes a shard's result for `cpscale collect`: give --shard I/N (N >= 2)");
  const std::string runId = runIdArg(r);
  fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : fs::path("runs") / runId;
  const fs::path binDir = binDirArg(r);

  run::RunCounters counters;
  std::unique_ptr<run::MetricsEndpoint> endpoint;
  if (r.count("metrics-addr")) {
    endpoint = std::make_unique<run::MetricsEndpoint>(r["metrics-addr"].as<std::string>(), counters);
    std::cerr << "cpscale run: generator metrics on http://" << endpoint->address() << "/metrics\n";
  }
  if (const auto* g = placement.of("generator")) controlplane::pinThisThread(*g);
  installInterruptHandlers();
  std::vector<result::RunResult> results;
  int worst = 0;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    // Each profile gets its own freshly built workloads (they hold per-run state), from
    // the scenario as parsed once.
    scenario::Scenario sc = i + 1 == profiles.size() ? std::move(probe) : scenario::vary(probe, {});
    run::RunOptions ro = runOptions(r, cluster, profiles[i], binDir);
    ro.runId = profiles.size() > 1 ? runId + "-" + std::to_string(i + 1) : runId;
    ro.outDir = profiles.size() > 1 ? out / profiles[i].name : out;
    ro.keepPlane = r.count("keep") > 0;
    ro.counters = &counters;
    ro.shard = shard;
    ro.placement = placement;
    result::RunResult res = run::executeRun(sc, ro);
    // The terminal gets the headline, gates and generator health; summary.md has all.
    const std::string summary = reports::renderTerminalSummary(res);
    std::cout << summary << "\n";
    std::cout << "Report: " << (ro.outDir / "report.html").string()
              << "\nResult: " << (ro.outDir / "result.json").string() << "\n";
    int code = res.exitCode;
    if (publish) code = publishResult(*cluster, ro.outDir / "result.json", runId, shard, code);
    worst = std::max(worst, code);
    results.push_back(std::move(res));
    if (interrupted()) break;
  }
  if (results.size() == 2) {
    reports::Comparison c = reports::compareResults(results[0], results[1]);
    c.aName = results[0].profile.name;
    c.bName = results[1].profile.name;
    std::string md = reports::renderComparisonMarkdown(c, "Profiles compared: " + c.aName + " vs " + c.bName);
    std::ofstream(out / "comparison.md") << md;
    std::cout << "\n" << md << "\nComparison: " << (out / "comparison.md").string() << "\n";
  }
  return worst;
}

int report(const Args& args) {
  cxxopts::Options opts(
      "cpscale report",
      "Render a run's reports from its result.json alone (or a capacity index's pages from its capacity.json).");
  opts.add_options()("result", "result.json", cxxopts::value<std::string>())(
      "format", "md, html or junit (default: all three, next to the result)", cxxopts::value<std::string>())(
      "o,output", "file to write (default: stdout for one format)", cxxopts::value<std::string>())("h,help",
                                                                                                   "show this help");
  opts.parse_positional({"result"});
  opts.positional_help("RESULT.json");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("result")) throw ConfigError("command line", "RESULT.json", "a result file is required");
  fs::path path = r["result"].as<std::string>();
  // A capacity index (cpscale capacity's capacity.json) renders as the index pages.
  if (std::ifstream peek(path); peek) {
    auto j = nlohmann::json::parse(peek, nullptr, false);
    if (j.is_object() && j.value("kind", "") == result::kCapacityIndexKind) {
      result::CapacityIndex idx = result::readCapacityIndex(path);
      if (r.count("format")) {
        const std::string f = r["format"].as<std::string>();
        if (f != "md" && f != "html")
          throw ConfigError("command line", "--format", "a capacity index renders as md or html, not '" + f + "'");
        std::string text =
            f == "md" ? reports::renderCapacityIndexMarkdown(idx) : reports::renderCapacityIndexHtml(idx);
        if (r.count("output"))
          std::ofstream(r["output"].as<std::string>()) << text;
        else
          std::cout << text;
        return 0;
      }
      // The pages only: the index itself is the input, left as it is.
      std::ofstream(path.parent_path() / "capacity.md") << reports::renderCapacityIndexMarkdown(idx);
      std::ofstream(path.parent_path() / "capacity.html") << reports::renderCapacityIndexHtml(idx);
      std::cout << "Wrote " << (path.parent_path() / "capacity.md").string() << ", "
                << (path.parent_path() / "capacity.html").string() << "\n";
      return 0;
    }
  }
  result::RunResult res = result::readResult(path);
  auto render = [&](const std::string& format) -> std::string {
    if (format == "md") return reports::renderSummary(res);
    if (format == "html") return reports::renderHtml(res);
    if (format == "junit") return reports::renderJunit(res);
    throw ConfigError("command line", "--format", "unknown format '" + format + "' (md, html, junit)");
  };
  if (r.count("format")) {
    std::string text = render(r["format"].as<std::string>());
    if (r.count("output"))
      std::ofstream(r["output"].as<std::string>()) << text;
    else
      std::cout << text;
    return 0;
  }
  fs::path dir = path.parent_path();
  std::ofstream(dir / "summary.md") << render("md");
  std::ofstream(dir / "report.html") << render("html");
  std::ofstream(dir / "junit.xml") << render("junit");
  std::cout << "Wrote " << (dir / "summary.md").string() << ", " << (dir / "report.html").string() << ", "
            << (dir / "junit.xml").string() << "\n";
  return 0;
}

int merge(const Args& args) {
  cxxopts::Options opts("cpscale merge",
                        "One result from the results of a sharded run's shards (cpscale run --shard I/N).");
  opts.add_options()("results", "every shard's result.json", cxxopts::value<std::vector<std::string>>())(
      "out", "output directory (default: merged/ beside the first result's directory)", cxxopts::value<std::string>())(
      "h,help", "show this help");
  opts.parse_positional({"results"});
  opts.positional_help("RESULT.json...");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("results")) throw ConfigError("command line", "RESULT.json", "every shard's result file is required");
  const auto paths = r["results"].as<std::vector<std::string>>();
  const fs::path first = fs::path(paths.front()).parent_path();
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>())
                                      : (first.has_parent_path() ? first.parent_path() : fs::path(".")) / "merged";
  return mergeResults(paths, out);
}

int collect(const Args& args) {
  cxxopts::Options opts("cpscale collect",
                        "Collect the results a sharded run's shards published (cpscale run --publish-result, e.g. the "
                        "pods of `cpscale job`) and merge them.");
  addTargetOptions(opts);
  opts.add_options()("run-id", "the run's id", cxxopts::value<std::string>())(
      "shards", "how many shards the run had (default: as its results say)", cxxopts::value<std::size_t>())(
      "out", "output directory: shard-<i>/result.json and merged/ (default runs/<run-id>)",
      cxxopts::value<std::string>())("timeout", "wait this long for every shard's result (e.g. 30m)",
                                     cxxopts::value<std::string>()->default_value("10m"))(
      "keep", "leave the result ConfigMaps in the cluster")(
      "yes", "confirm deleting the result ConfigMaps on a non-loopback server (or CPSCALE_ASSUME_YES=1)")(
      "h,help", "show this help");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("run-id")) throw ConfigError("command line", "--run-id", "the run id is required");
  const std::string runId = r["run-id"].as<std::string>();
  checkRunId(runId);
  std::optional<std::size_t> shards;
  if (r.count("shards")) {
    shards = r["shards"].as<std::size_t>();
    if (*shards < 1 || *shards > 1024) throw ConfigError("command line", "--shards", "must be 1 to 1024");
  }
  auto timeout = parseDuration(r["timeout"].as<std::string>());
  if (!timeout || timeout->count() < 0)
    throw ConfigError("command line", "--timeout", "expected a duration such as 90s or 30m");
  const fs::path out = r.count("out") ? fs::path(r["out"].as<std::string>()) : fs::path("runs") / runId;
  const bool keep = r.count("keep") > 0;
  kube::RestConfig config = loadTarget(r);
  if (!keep && !confirmedTarget(r, config, "cpscale collect", "read and then delete run " + runId + "'s results on"))
    return static_cast<int>(ExitCode::kBadInput);

  installInterruptHandlers();
  engine::WallClock wall;
  kube::CurlTransport transport(config);
  kube::ApiClient api(transport, wall);
  reachServer(transport, config);
  std::size_t lastSeen = SIZE_MAX;
  run::CollectedResults c = run::awaitShardResults(
      api, wall, runId, shards, *timeout, std::chrono::seconds(2), [] { return interrupted(); },
      [&](const run::CollectedResults& now) {
        if (now.results.size() == lastSeen) return;
        lastSeen = now.results.size();
        std::cerr << "cpscale collect: " << now.results.size() << " of "
                  << (now.shards ? std::to_string(*now.shards) : std::string("?")) << " shards' results so far\n";
      });
  for (const auto& p : c.problems) std::cerr << "cpscale collect: " << p << "\n";
  if (!c.complete()) {
    std::string which;
    for (std::size_t i : c.missing) which += (which.empty() ? "" : ", ") + std::to_string(i);
    throw UnavailableError(!c.shards ? "no shard of run " + runId + " published a result (ConfigMaps labelled " +
                                           run::kResultOfLabel + "=" + runId + " in " + run::kMeetingNamespace +
                                           ") within " + formatDuration(*timeout)
                                     : "shard" + std::string(c.missing.size() == 1 ? " " : "s ") + which + " of " +
                                           std::to_string(*c.shards) + " published no result within " +
                                           formatDuration(*timeout) + " (ConfigMap " + run::kMeetingNamespace + "/" +
                                           run::shardResultName(runId, c.missing.front()) + "...); their logs say why");
  }
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < *c.shards; ++i) {
    const fs::path dir = out / ("shard-" + std::to_string(i));
    fs::create_directories(dir);
    std::ofstream(dir / "result.json", std::ios::binary) << c.results.at(i);
    paths.push_back((dir / "result.json").string());
  }
  std::cerr << "cpscale collect: " << *c.shards << " results in " << out.string() << "\n";
  int code = mergeResults(paths, out / "merged");
  if (keep) return code;
  const auto errors = run::deleteShardResults(api, runId);
  for (const auto& e : errors) std::cerr << "cpscale collect: deleting the results: " << e << "\n";
  if (!errors.empty()) {
    std::cerr << "cpscale collect: some of run " << runId
              << "'s result ConfigMaps are left (kubectl delete configmaps -n " << run::kMeetingNamespace << " -l "
              << run::kResultOfLabel << "=" << runId << ")\n";
    return static_cast<int>(ExitCode::kUnavailable);
  }
  return code;
}

int compare(const Args& args) {
  cxxopts::Options opts("cpscale compare", "What got worse (or better) between two runs, figure by figure.");
  opts.add_options()("a", "baseline result.json", cxxopts::value<std::string>())("b", "candidate result.json",
                                                                                 cxxopts::value<std::string>())(
      "tolerance", "relative change that counts (default 0.10)", cxxopts::value<double>()->default_value("0.10"))(
      "h,help", "show this help");
  opts.parse_positional({"a", "b"});
  opts.positional_help("A.json B.json");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("a") || !r.count("b"))
    throw ConfigError("command line", "A.json B.json", "two result files are required");
  double tol = r["tolerance"].as<double>();
  if (tol < 0) throw ConfigError("command line", "--tolerance", "must not be negative");
  auto a = result::readResult(r["a"].as<std::string>());
  auto b = result::readResult(r["b"].as<std::string>());
  reports::CompareOptions co;
  co.relativeTolerance = tol;
  auto diff = reports::compareResults(a, b, co);
  diff.aName = r["a"].as<std::string>();
  diff.bName = r["b"].as<std::string>();
  std::cout << reports::renderComparisonText(diff);
  return diff.regressed() ? static_cast<int>(ExitCode::kGateFailed) : 0;
}

int cleanup(const Args& args) {
  cxxopts::Options opts("cpscale cleanup", "Delete every object a run created (by its cpscale.io/run label).");
  addTargetOptions(opts);
  opts.add_options()("run", "run id", cxxopts::value<std::string>())("yes", "confirm a non-loopback server")(
      "timeout", "give up after this long, reporting what is left (e.g. 5m)",
      cxxopts::value<std::string>()->default_value("2m"))("h,help", "show this help");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("run")) throw ConfigError("command line", "--run", "the run id is required");
  std::string runId = r["run"].as<std::string>();
  checkRunId(runId);
  workloads::CleanupOptions co;
  auto timeout = parseDuration(r["timeout"].as<std::string>());
  if (!timeout || timeout->count() <= 0)
    throw ConfigError("command line", "--timeout", "expected a positive duration such as 90s or 5m");
  co.timeout = *timeout;
  kube::RestConfig config = loadTarget(r);
  if (!confirmedTarget(r, config, "cpscale cleanup", "delete objects on")) return static_cast<int>(ExitCode::kBadInput);
  engine::WallClock wall;
  kube::CurlTransport transport(config);
  kube::ApiClient api(transport, wall);
  auto cleaned = workloads::cleanupRun(api, wall, runId, {}, co);
  for (const auto& [resource, n] : cleaned.deleted) std::cout << "deleted   " << n << " " << resource << "\n";
  for (const auto& [resource, n] : cleaned.remaining) std::cout << "remaining " << n << " " << resource << "\n";
  for (const auto& e : cleaned.errors) std::cerr << "cpscale cleanup: " << e << "\n";
  if (cleaned.deleted.empty() && cleaned.complete()) std::cout << "nothing labelled cpscale.io/run=" << runId << "\n";
  if (!cleaned.complete())
    std::cerr << "cpscale cleanup: incomplete; run `cpscale cleanup --run " << runId << "` again to finish\n";
  return cleaned.complete() ? 0 : static_cast<int>(ExitCode::kUnavailable);
}

}  // namespace cpscale::cli
