// One paced engine worker as `cpscale run` builds it, for integration tests that drive
// workloads on the real plane: a CurlTransport (over the given replicas), the open-loop
// driver, and an ApiClient on the driver.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "sim/common/duration.h"
#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/load/open_loop_driver.h"
#include "workloads/params.h"
#include "workloads/workload.h"

namespace cpscale::testing {

class LiveRun {
 public:
  // Puts a decorator (a lease tier) between the driver and the live transport; it may
  // schedule on the run's engine.
  using Wrap = std::function<kube::TransportPtr(kube::TransportPtr, engine::Scheduler&)>;
  // `servers` empty: the config's server only.
  explicit LiveRun(const kube::RestConfig& config, const std::vector<std::string>& servers = {},
                   load::DriverOptions driver = {}, const Wrap& wrap = nullptr)
      : sim_(clock_),
        transport_(wrapped(std::make_unique<kube::CurlTransport>(config, curlOptions(driver, servers)), wrap)),
        driver_(*transport_, clock_, driver),
        api_(driver_, clock_, sim_) {
    sim_.setIdleHook([this](engine::TimePoint deadline) { driver_.poll(deadline - clock_.now()); });
  }
  // The run's origin on the Unix clock, so timestamps written into objects are real.
  workloads::WorkloadContext context(const std::string& runId) {
    workloads::WorkloadContext ctx{sim_, api_, runId, 7};
    ctx.epochUnixNanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
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
  load::OpenLoopDriver& driver() { return driver_; }
  kube::CurlTransport& transport() { return *curl_; }

 private:
  static kube::CurlTransportOptions curlOptions(const load::DriverOptions& driver,
                                                const std::vector<std::string>& servers) {
    kube::CurlTransportOptions o;
    o.maxHostConnections = static_cast<long>(driver.connections);
    o.maxConcurrentStreams = static_cast<long>(driver.maxInFlightPerConnection);
    o.servers = servers;
    return o;
  }
  kube::TransportPtr wrapped(std::unique_ptr<kube::CurlTransport> t, const Wrap& wrap) {
    curl_ = t.get();
    return wrap ? wrap(std::move(t), sim_) : kube::TransportPtr(std::move(t));
  }

  engine::WallClock clock_;
  engine::PacedSimulator sim_;
  kube::CurlTransport* curl_ = nullptr;
  kube::TransportPtr transport_;
  load::OpenLoopDriver driver_;
  kube::ApiClient api_;
};

// Unix seconds of a MicroTime ("2024-05-01T12:00:00.123456Z") or metav1.Time
// ("2024-05-01T12:00:00Z"), as the server writes them; NaN for anything else.
inline double unixSeconds(const std::string& rfc3339) {
  auto t = parseRfc3339(rfc3339);
  return t ? std::chrono::duration<double>(t->time_since_epoch()).count() : std::nan("");
}

// Sum of the samples of `metric` in the /metrics that `t` reaches whose labels contain
// every fragment ("verb=\"PUT\"").
inline double metricSum(kube::Transport& t, const std::string& metric, const std::vector<std::string>& fragments) {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = "/metrics";
  kube::HttpResponse resp = kube::roundTrip(t, req);
  EXPECT_EQ(resp.status, 200) << resp.detail;
  double sum = 0;
  std::istringstream lines(resp.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(metric + "{", 0) != 0) continue;
    bool all = true;
    for (const auto& f : fragments) all = all && line.find(f) != std::string::npos;
    if (all) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

// How many objects of `coll` carry the run's label.
inline std::size_t countLabelled(kube::ApiClient& api, const kube::ResourceRef& coll, const std::string& runId) {
  kube::ListOptions o;
  o.labelSelector = workloads::runSelector(runId);
  kube::ApiResult r = api.list(coll, o);
  EXPECT_TRUE(r.ok()) << r.describe();
  return r.ok() ? r.body["items"].size() : 0;
}

}  // namespace cpscale::testing
