// One paced engine worker as `cpscale run` builds it, for integration tests that drive
// workloads on the real plane: a CurlTransport (over the given replicas), the open-loop
// driver, and an ApiClient on the driver.
#pragma once

#include <chrono>
#include <ctime>
#include <functional>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "sim/engine/open_loop_driver.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "workloads/workload.h"

namespace cpscale::testing {

class LiveRun {
 public:
  // `servers` empty: the config's server only.
  explicit LiveRun(const kube::RestConfig& config, const std::vector<std::string>& servers = {},
                   engine::DriverOptions driver = {})
      : transport_(config, {.maxHostConnections = static_cast<long>(driver.connections),
                            .maxConcurrentStreams = static_cast<long>(driver.maxInFlightPerConnection),
                            .servers = servers}),
        driver_(transport_, clock_, driver),
        sim_(clock_),
        api_(driver_, clock_, sim_) {
    sim_.setIdleHook([this](engine::TimePoint deadline) { driver_.poll(deadline - clock_.now()); });
  }
  // The run's origin on the Unix clock, so timestamps written into objects are real.
  workloads::WorkloadContext context(const std::string& runId) {
    workloads::WorkloadContext ctx{sim_, api_, runId, 7};
    ctx.epochUnixNanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count() -
                         clock_.now().time_since_epoch().count();
    return ctx;
  }
  // Runs until `done` holds (checked every 200 ms) or `limit` of run time passed.
  void runUntil(const std::function<bool()>& done, engine::Duration limit) {
    const engine::TimePoint end = clock_.now() + limit;
    while (!done() && clock_.now() < end) sim_.runUntil(clock_.now() + std::chrono::milliseconds(200));
  }
  engine::PacedSimulator& sim() { return sim_; }
  engine::OpenLoopDriver& driver() { return driver_; }
  kube::CurlTransport& transport() { return transport_; }

 private:
  engine::WallClock clock_;
  kube::CurlTransport transport_;
  engine::OpenLoopDriver driver_;
  engine::PacedSimulator sim_;
  kube::ApiClient api_;
};

// Unix seconds of a MicroTime ("2024-05-01T12:00:00.123456Z") or metav1.Time
// ("2024-05-01T12:00:00Z"), as the server writes them.
inline double unixSeconds(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339.substr(0, 19));
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  const std::string fraction = rfc3339.size() > 20 && rfc3339[19] == '.' ? rfc3339.substr(19, rfc3339.size() - 20) : "";
  return static_cast<double>(timegm(&tm)) + (fraction.empty() ? 0 : std::stod("0" + fraction));
}

}  // namespace cpscale::testing
