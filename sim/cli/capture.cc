// capture: a cluster's shape along the three axes, measured with GETs alone, written as
// a scenario that reproduces it (`cpscale run` it on a test plane, `--set` it bigger).
// It sends no load, so a cluster that is not on this machine needs no --yes.
#include <cxxopts.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "sim/capture/collect.h"
#include "sim/capture/scenario_writer.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/kube/curl_transport.h"
#include "sim/scenario/scenario.h"

namespace cpscale::cli {
namespace fs = std::filesystem;

namespace {

// A scenario name from the output file's stem: lower-case letters, digits and '-'.
std::string nameFrom(const fs::path& out) {
  std::string n;
  for (char c : out.stem().string())
    n += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(static_cast<unsigned char>(c)))
                                                     : '-';
  return n.empty() ? "captured" : n;
}

}  // namespace

int capture(const Args& args) {
  cxxopts::Options opts("cpscale capture",
                        "Measure a cluster's shape with GETs and two /metrics scrapes a window apart, and write a "
                        "scenario that reproduces it: its nodes and their lease and status cadence, a churn actor "
                        "per custom resource it creates, what it holds at rest and who watches it. Read-only.");
  addTargetOptions(opts);
  opts.add_options()("o,output", "the scenario file to write", cxxopts::value<std::string>())(
      "window", "time between the two /metrics scrapes the write rates come from",
      cxxopts::value<std::string>()->default_value("5m"))(
      "scale", "multiply nodes, rates and object counts (namespaces, kinds and watchers per kind stay)",
      cxxopts::value<double>()->default_value("1"))("name", "the scenario's name (default: the file's stem)",
                                                    cxxopts::value<std::string>())(
      "duration", "the replay's steady window", cxxopts::value<std::string>()->default_value("5m"))(
      "quiet", "no progress on stderr")("h,help", "show this help");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  if (!r.count("output")) throw ConfigError("command line", "--output", "required: the scenario file to write");
  const fs::path out = r["output"].as<std::string>();
  const auto window = parseDuration(r["window"].as<std::string>());
  if (!window || *window < std::chrono::seconds(10))
    throw ConfigError("command line", "--window",
                      "'" + r["window"].as<std::string>() +
                          "': a duration of at least 10s (write rates are counter "
                          "increases over it)");
  if (!parseDuration(r["duration"].as<std::string>()))
    throw ConfigError("command line", "--duration", "'" + r["duration"].as<std::string>() + "' is not a duration");
  const double scale = r["scale"].as<double>();
  if (!(scale > 0 && scale <= 1000)) throw ConfigError("command line", "--scale", "must be in (0, 1000]");
  if (!out.parent_path().empty() && !fs::is_directory(out.parent_path()))
    throw ConfigError("command line", "--output", "no directory " + out.parent_path().string());

  kube::RestConfig config = loadTarget(r);
  kube::CurlTransportOptions to;
  to.connectTimeout = std::chrono::seconds(5);
  to.defaultTimeout = std::chrono::seconds(60);
  kube::CurlTransport transport(config, to);
  const bool quiet = r.count("quiet") > 0;

  capture::CollectOptions co;
  co.window = std::chrono::duration_cast<std::chrono::milliseconds>(*window);
  co.wait = [](std::chrono::milliseconds d) { std::this_thread::sleep_for(d); };
  co.now = utcNowRfc3339;
  co.progress = [&](const std::string& s) {
    if (!quiet) std::cerr << "cpscale capture: " << s << "\n";
  };
  const capture::Reading reading = capture::collect(transport, co);
  const capture::ClusterShape shape = capture::measureShape(reading);
  if (shape.nodes.nodes.value == 0 && shape.churned.empty() && shape.dormant.empty())
    throw UnavailableError(config.server +
                           " holds no nodes, creates no custom resources and holds no objects of its "
                           "own: there is nothing to reproduce");

  capture::WriteOptions wo;
  wo.name = r.count("name") ? r["name"].as<std::string>() : nameFrom(out);
  wo.scale = scale;
  wo.duration = r["duration"].as<std::string>();
  // The churned kinds' CRDs, from their captured schemas, beside the scenario.
  wo.crdDir = out.stem().string() + ".crds";
  const fs::path crdDir = out.parent_path() / wo.crdDir;
  const bool crdDirExisted = fs::exists(crdDir);
  std::vector<fs::path> written;
  const std::string text = capture::writeScenario(shape, wo);

  // Written beside the target and read back as `cpscale run` reads it, then renamed: a
  // scenario cpscale cannot run is never left at --output.
  const fs::path tmp = out.string() + ".tmp";
  try {
    for (const auto& c : shape.churned) {
      std::string why;
      const auto crd = capture::replayCrdTemplate(c, why);
      if (!crd) continue;
      fs::create_directories(crdDir);
      written.push_back(crdDir / (c.key.describe() + ".json"));
      std::ofstream(written.back()) << crd->dump(2) << "\n";
    }
    {
      std::ofstream f(tmp);
      f << text;
      if (!f) throw ConfigError("command line", "--output", "cannot write " + out.string());
    }
    // Read in the directory it goes to, so its CRD templates resolve as they will.
    (void)scenario::loadScenario(tmp);
    fs::rename(tmp, out);
  } catch (...) {
    fs::remove(tmp);
    for (const auto& f : written) fs::remove(f);
    if (!crdDirExisted && fs::exists(crdDir) && fs::is_empty(crdDir)) fs::remove(crdDir);
    throw;
  }

  std::cout << "captured " << config.server << " (" << shape.version << ") over "
            << formatDuration(std::chrono::milliseconds(static_cast<long long>(shape.windowSeconds * 1000)))
            << "\n  nodes: " << shape.nodes.nodes.value << ", pods: " << shape.nodes.pods.value
            << "\n  custom resources created in the window: " << shape.churned.size()
            << "\n  kinds at rest: " << shape.dormant.size() << "\n";
  if (!shape.notReproduced.empty()) {
    std::cout << "  not reproduced (no workload writes them):\n";
    for (const auto& w : shape.notReproduced) std::cout << "    " << w << "\n";
  }
  for (const auto& f : written) std::cout << "  CRD from its captured schema: " << f.string() << "\n";
  std::cout << "Scenario: " << out.string() << "\nReplay it: cpscale run " << out.string() << "\n";
  return 0;
}

}  // namespace cpscale::cli
