// A scenario: what load to drive, for how long, what to measure and what must hold.
// Read from scenarios/*.yaml (apiVersion cpscale.io/v1alpha1, kind Scenario), with
// `--set path=value` overrides applied before validation so CI can scale a scenario
// without copying it. Every error names the file, the line and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/clock.h"
#include "sim/engine/open_loop_driver.h"
#include "sim/scenario/gate.h"
#include "workloads/workload.h"

namespace cpscale::scenario {

// One `--set path=value`: path segments are map keys, list indexes ([0]) or, in a
// list of named items, an item's name ("workloads.fleet.count=500").
struct Override {
  std::string path;
  std::string value;
};
// Throws ConfigError for text without '=' or with an empty path.
Override parseOverride(const std::string& text);

struct Scenario {
  std::string name;
  std::string description;
  std::string source;  // the file
  // The measured steady-state window: it starts once every workload finished its setup
  // (nodes registered, populations created, watchers synced) and `warmup` passed, and
  // lasts this long.
  engine::Duration duration{0};
  // Setup that has not finished by then ends the run as failed (exit 3), with what it
  // measured: a population that never finishes creating is never reported as complete.
  engine::Duration setupTimeout = std::chrono::minutes(10);
  // After setup, load runs this long before the measured window starts (e.g. for churn
  // sessions to reach their steady live population). Recorded as part of setup.
  engine::Duration warmup{0};
  std::uint64_t seed = 1;
  std::size_t workers = 1;
  engine::Duration scrapeInterval = std::chrono::seconds(5);
  engine::DriverOptions driver;
  // After the window: how long to wait for responses still in flight.
  engine::Duration drain = std::chrono::seconds(10);
  std::vector<std::unique_ptr<workloads::Workload>> workloads;
  std::vector<Gate> gates;
  // The scenario after overrides, as the result document records it.
  nlohmann::json effective;
};

Scenario loadScenario(const std::filesystem::path& path, const std::vector<Override>& overrides = {});

// The YAML tree as JSON (scalars that read as numbers or booleans become those).
nlohmann::json yamlToJson(const YAML::Node& node);

}  // namespace cpscale::scenario
