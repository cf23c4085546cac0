// classify: which axis binds a cluster, and which rung of the recipe ladder fits it.
// The pressures come from a result's steady window or from a live cluster (two rounds
// of /metrics scrapes a window apart: GETs only), and are held against the capacity
// index (reports/classify.h).
#include <algorithm>
#include <cxxopts.hpp>
#include <filesystem>
#include <iostream>
#include <thread>

#include "reports/classify.h"
#include "reports/headline.h"
#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/metrics/axis_pressure.h"
#include "sim/metrics/scraper.h"
#include "sim/result/result.h"
#include "sim/run/target_check.h"

namespace cpscale::cli {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Long enough for rates over a few lease renewal periods, short enough to wait for.
constexpr engine::Duration kDefaultWindow = 30s;

// What classify measured, and how it is known.
struct Pressures {
  std::vector<metrics::Figure> figures;  // axisPressureFigures' output
  std::string source;
  std::string span;
  std::string note;
  std::string profile;      // the result's profile, if any
  std::string profileFrom;  // how the result knows it
};

Pressures fromResult(const fs::path& path) {
  result::RunResult res = result::readResult(path);
  Pressures p;
  p.figures = reports::resultPressures(res, path.string());
  const result::Phase* phase = result::findPhase(res, "steady");
  p.source = path.string();
  p.span = "steady" + (phase ? ", " + reports::formatSpan(*phase) : std::string());
  p.profile = res.profile.name;
  p.profileFrom = res.profile.applied ? "the result's profile" : "the profile recorded in the result";
  return p;
}

// The apiservers to scrape: every endpoint of the `kubernetes` Service when each of
// them answers /version with these credentials (one replica each), else the
// kubeconfig's server alone (which may be a load balancer in front of them: scraping
// both would count its replica twice).
std::vector<metrics::ScrapeTarget> apiserverTargets(const kube::RestConfig& config, kube::Transport& probe,
                                                    std::string& note) {
  engine::WallClock wall;
  kube::ApiClient api(probe, wall);
  std::vector<std::string> endpoints = run::apiserverEndpoints(api);
  kube::CurlTransportOptions to;
  to.connectTimeout = 3s;
  to.defaultTimeout = 10s;
  std::vector<metrics::ScrapeTarget> targets;
  // The endpoints speak what the server speaks (https on any real cluster).
  const std::string scheme = config.server.starts_with("http://") ? "http://" : "https://";
  for (const std::string& hostPort : endpoints) {
    kube::RestConfig c = config;
    c.server = scheme + hostPort;
    auto transport = std::make_shared<kube::CurlTransport>(c, to);
    try {
      reachServer(*transport, c);
    } catch (const UnavailableError& e) {
      note = "scraped " + config.server + " alone: endpoint " + hostPort +
             " of the kubernetes Service did not answer (" + e.what() + ")";
      targets.clear();
      break;
    }
    metrics::ScrapeTarget t;
    t.info.name = hostPort;
    t.transport = std::move(transport);
    targets.push_back(std::move(t));
  }
  if (!targets.empty()) {
    note = "scraped the " + std::to_string(targets.size()) + " endpoint" + (targets.size() == 1 ? "" : "s") +
           " of the kubernetes Service, one kube-apiserver replica each";
    return targets;
  }
  if (endpoints.empty())
    note = "scraped " + config.server + " alone: the kubernetes Service's Endpoints could not be read";
  metrics::ScrapeTarget t;
  t.info.name = config.server;
  t.transport = std::make_shared<kube::CurlTransport>(config, to);
  targets.push_back(std::move(t));
  return targets;
}

// Two scrape rounds `window` apart, on a paced engine of its own.
std::vector<metrics::TargetScrapes> scrapeTwice(std::vector<metrics::ScrapeTarget> targets, engine::Duration window) {
  engine::WallClock clock;
  engine::PacedSimulator sim(clock);
  metrics::ScraperOptions so;
  so.interval = window;
  so.timeout = std::min<engine::Duration>(window, 10s);
  metrics::Scraper scraper(sim, std::move(targets), so);
  sim.setIdleHook([&](engine::TimePoint deadline) {
    scraper.pollTransports();
    auto wait = std::min<engine::Duration>(deadline - clock.now(), 20ms);
    if (wait.count() > 0) std::this_thread::sleep_for(wait);
  });
  scraper.start();  // a round now, the next one a window later
  sim.runUntil(sim.now() + window);
  scraper.stop();
  const engine::TimePoint deadline = clock.now() + so.timeout + 1s;
  while (scraper.inFlight() > 0 && clock.now() < deadline) sim.runUntil(clock.now() + 5ms);
  return scraper.targets();
}

Pressures fromCluster(const kube::RestConfig& config, engine::Duration window) {
  kube::CurlTransportOptions to;
  to.connectTimeout = 5s;
  to.defaultTimeout = 10s;
  kube::CurlTransport probe(config, to);
  reachServer(probe, config);
  std::string note;
  std::vector<metrics::ScrapeTarget> targets = apiserverTargets(config, probe, note);
  std::vector<metrics::TargetScrapes> scrapes = scrapeTwice(std::move(targets), window);
  std::vector<metrics::Figure> figures = metrics::writeFigures(scrapes);
  for (metrics::Figure& f : metrics::apiserverMemoryFigures(scrapes)) figures.push_back(std::move(f));
  Pressures p;
  p.figures = metrics::axisPressureFigures(figures);
  if (std::string why = reports::whyNoPressure(p.figures); !why.empty())
    throw UnavailableError("no axis pressure could be measured on " + config.server + ": " + why);
  p.source = config.server + " (context " + config.contextName + ")";
  p.note = note;
  p.span = "two scrape rounds " + formatDuration(window) + " apart";
  return p;
}

}  // namespace

int classify(const Args& args) {
  cxxopts::Options opts("cpscale classify",
                        "Which axis binds a cluster (node, churn, state) and which rung of the recipe ladder fits it.\n"
                        "Reads a result's steady window, or a live cluster: two rounds of /metrics scrapes a window\n"
                        "apart, from every kube-apiserver endpoint of the kubernetes Service (else the kubeconfig's\n"
                        "server). Against a cluster it sends GETs only (/version, that Endpoints object, /metrics),\n"
                        "so any server is read without --yes; credentials are never printed.");
  addTargetOptions(opts);
  opts.add_options()("result", "a run's result.json (instead of a live cluster)", cxxopts::value<std::string>())(
      "capacity",
      "capacity index (repeatable; a later one wins for the same recipe and axis; default: the shipped " +
          std::string(reports::kShippedCapacityIndex) + ", if present)",
      cxxopts::value<std::vector<std::string>>())(
      "recipe", "the cluster's recipe (default: the result's profile, else guessed from its kube-apiserver replicas)",
      cxxopts::value<std::string>())("window", "live: time between the two scrape rounds",
                                     cxxopts::value<std::string>()->default_value(formatDuration(kDefaultWindow)))(
      "headroom", "a rung fits when it held pressure / headroom on every axis (0 < h <= 1)",
      cxxopts::value<double>()->default_value("0.8"))("json", "print a JSON document instead of text")(
      "h,help", "show this help");
  opts.parse_positional({"result"});
  opts.positional_help("[RESULT.json]");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;

  // Everything that can be wrong with the input is checked before anything is contacted.
  const bool live = !r.count("result");
  if (!live && namesCluster(r))
    throw ConfigError("command line", "RESULT.json", std::string("give a result or ") + kClusterOptions + ", not both");
  auto window = parseDuration(r["window"].as<std::string>());
  if (!window || window->count() <= 0)
    throw ConfigError("command line", "--window", "expected a positive duration such as 30s or 1m");
  if (!live && r.count("window"))
    throw ConfigError("command line", "--window", "applies to a live cluster, not a result");
  const double headroom = r["headroom"].as<double>();
  if (!(headroom > 0 && headroom <= 1)) throw ConfigError("command line", "--headroom", "must be in (0, 1]");
  if (r.count("recipe") && r["recipe"].as<std::string>().empty())
    throw ConfigError("command line", "--recipe", "must not be empty");

  reports::CapacityTable table;
  if (r.count("capacity")) {
    for (const auto& file : r["capacity"].as<std::vector<std::string>>())
      reports::addToTable(table, result::readCapacityIndex(file), file);
  } else if (fs::path shipped = fs::path(CPSCALE_SOURCE_DIR) / reports::kShippedCapacityIndex; fs::exists(shipped)) {
    reports::addToTable(table, result::readCapacityIndex(shipped), shipped.string());
  }
  std::optional<kube::RestConfig> cluster;
  if (live) cluster = loadTarget(r);

  Pressures p = live ? fromCluster(*cluster, *window) : fromResult(r["result"].as<std::string>());
  reports::ClassifyOptions co;
  co.source = p.source;
  co.span = p.span;
  if (!p.note.empty()) co.notes.push_back(p.note);
  co.headroom = headroom;
  if (r.count("recipe")) {
    co.recipe = r["recipe"].as<std::string>();
  } else if (!p.profile.empty()) {
    co.recipe = p.profile;
    co.recipeFrom = p.profileFrom;
  }
  reports::Classification c = reports::classify(std::move(p.figures), table, co);
  if (r.count("json"))
    std::cout << reports::toJson(c).dump(2) << "\n";
  else
    std::cout << reports::renderClassification(c);
  return 0;
}

}  // namespace cpscale::cli
