#include "sim/metrics/process_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace cpscale::metrics {

std::optional<ProcessSample> sampleSelf() {
  ProcessSample s;
  s.at = std::chrono::steady_clock::now();
  rusage u{};
  if (::getrusage(RUSAGE_SELF, &u) != 0) return std::nullopt;
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  s.cpuSeconds = secs(u.ru_utime) + secs(u.ru_stime);
  s.peakRssBytes = static_cast<std::int64_t>(u.ru_maxrss) * 1024;  // KiB on Linux
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return std::nullopt;
  s.rssBytes = resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
  // The kernel updates its high-water mark lazily: it can trail what is resident now.
  s.peakRssBytes = std::max(s.peakRssBytes, s.rssBytes);
  return s;
}

std::vector<Figure> generatorResourceFigures(const std::optional<ProcessSample>& from,
                                             const std::optional<ProcessSample>& to, const std::string& why) {
  std::vector<Figure> out;
  const double wall = from && to ? std::chrono::duration<double>(to->at - from->at).count() : 0;
  if (!from || !to || wall <= 0) {
    const std::string reason = !why.empty() ? why : "the window had no length";
    out.push_back(Figure::unavailable("generator_cpu_cores", {}, "cores", Source::kClient, reason));
    out.push_back(Figure::unavailable("generator_rss_bytes", {}, "bytes", Source::kClient, reason));
    out.push_back(Figure::unavailable("generator_rss_bytes_peak", {}, "bytes", Source::kClient, reason));
    return out;
  }
  out.push_back(Figure::measured("generator_cpu_cores", {}, (to->cpuSeconds - from->cpuSeconds) / wall, "cores",
                                 Source::kClient));
  out.push_back(
      Figure::measured("generator_rss_bytes", {}, static_cast<double>(to->rssBytes), "bytes", Source::kClient));
  out.push_back(Figure::measured("generator_rss_bytes_peak", {}, static_cast<double>(to->peakRssBytes), "bytes",
                                 Source::kClient));
  return out;
}

}  // namespace cpscale::metrics
