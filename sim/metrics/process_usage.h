// The generator's own use of the machine: this process's CPU time (every thread's, user
// and system; the local plane's processes are children and are not in it) and resident
// memory, read from the kernel. A window's figures are the difference of two samples.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/metrics/figures.h"

namespace cpscale::metrics {

struct ProcessSample {
  std::chrono::steady_clock::time_point at;
  double cpuSeconds = 0;          // getrusage(RUSAGE_SELF): user + system
  std::int64_t rssBytes = 0;      // /proc/self/statm resident pages
  std::int64_t peakRssBytes = 0;  // VmHWM: the most resident since the process started
};

// Now; nullopt when the kernel would not say (no /proc).
std::optional<ProcessSample> sampleSelf();

// generator_cpu_cores (CPU seconds over wall seconds between the samples),
// generator_rss_bytes (at `to`), generator_rss_bytes_peak (the process's peak up to
// `to`, setup included), source client. Unavailable with `why` when either sample is
// missing or the window is empty.
std::vector<Figure> generatorResourceFigures(const std::optional<ProcessSample>& from,
                                             const std::optional<ProcessSample>& to, const std::string& why);

}  // namespace cpscale::metrics
