// report.html: one self-contained page (inline CSS and SVG, no scripts, nothing
// fetched from the network) that can be attached to a CI run or mailed as is.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "sim/result/result.h"

namespace cpscale::reports {

// Ids of the charts (each an <svg class="chart ...">). A chart whose data is missing is
// an <svg class="chart chart-unavailable"> with the same id, saying why.
inline constexpr std::string_view kChartWriteQps = "chart-write-qps";
inline constexpr std::string_view kChartLeaseShare = "chart-lease-share";
inline constexpr std::string_view kChartHeap = "chart-heap";
inline constexpr std::string_view kChartObjects = "chart-objects";
// One per (resource, verb): "chart-latency-<resource>-<verb>" with every character
// other than [a-z0-9] replaced by '-'; "chart-latency" alone when there is none.
inline constexpr std::string_view kChartLatency = "chart-latency";
std::string latencyChartId(std::string_view resource, std::string_view verb);

// A capacity run's charts, each a figure against the knob's value (svg::XyChart) with
// the breaking point marked: axis pressure, write QPS, heap of all replicas, the worst
// client p99, and one per hold gate ("chart-capacity-gate-<n>", n from 1) with its
// threshold. A chart whose figure is also a gate's is drawn once, as the gate's.
inline constexpr std::string_view kChartCapacityPressure = "chart-capacity-pressure";
inline constexpr std::string_view kChartCapacityWriteQps = "chart-capacity-write-qps";
inline constexpr std::string_view kChartCapacityHeap = "chart-capacity-heap";
inline constexpr std::string_view kChartCapacityClientP99 = "chart-capacity-client-p99";
std::string capacityGateChartId(std::size_t n);

// The page's style sheet, for other pages of the family (the capacity index).
std::string_view reportStyle();

std::string renderHtml(const result::RunResult& r);

}  // namespace cpscale::reports
