// Building blocks the metrics tests share: run times in whole seconds, time series
// from (second, value) points, and a target whose scrapes are Prometheus text bodies.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/metrics/prometheus_text.h"
#include "sim/metrics/scrape_history.h"
#include "sim/metrics/time_series.h"

namespace cpscale::metrics::testing {

inline engine::TimePoint at(int s) { return engine::TimePoint{std::chrono::seconds(s)}; }

inline TimeSeries series(std::initializer_list<std::pair<int, double>> points) {
  TimeSeries t;
  for (auto [s, v] : points) t.push(at(s), v);
  return t;
}

// A target whose scrapes are the given exposition bodies at the given seconds, each
// counted as an answered attempt.
inline TargetScrapes target(std::string name, TargetRole role,
                            const std::vector<std::pair<int, std::string>>& scrapes) {
  TargetScrapes t;
  t.info.name = std::move(name);
  t.info.role = role;
  for (const auto& [s, body] : scrapes) {
    ParseResult r = parsePrometheusText(body);
    EXPECT_TRUE(r.ok()) << r.error->describe();
    t.history.record(at(s), r.families);
    ++t.status.attempts;
    ++t.status.successes;
  }
  return t;
}

}  // namespace cpscale::metrics::testing
