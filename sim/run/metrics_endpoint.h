// The generator's own /metrics (--metrics-addr), so a run can be watched from
// Prometheus like any other component: requests sent/completed, writes, errors and the
// worst schedule lag, read from the run's live counters at scrape time.
#pragma once

#include <memory>
#include <string>

#include "sim/run/run_progress.h"

namespace prometheus {
class Exposer;
}

namespace cpscale::run {

class MetricsEndpoint {
 public:
  // `address` is "host:port" or ":port" (then 127.0.0.1). Throws ConfigError for a
  // malformed address, UnavailableError when it cannot bind.
  MetricsEndpoint(const std::string& address, const RunCounters& counters);
  ~MetricsEndpoint();
  const std::string& address() const { return address_; }

 private:
  std::string address_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<void> collectable_;
};

// ":9090" -> "127.0.0.1:9090"; validates host and port.
std::string normalizeMetricsAddress(const std::string& address);

}  // namespace cpscale::run
