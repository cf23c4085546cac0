#include "sim/run/metrics_endpoint.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include "sim/common/error.h"

namespace cpscale::run {

namespace {

class CountersCollectable final : public prometheus::Collectable {
 public:
  explicit CountersCollectable(const RunCounters& c) : c_(c) {}
  std::vector<prometheus::MetricFamily> Collect() const override {
    auto counter = [](std::string name, std::string help, double v) {
      prometheus::MetricFamily f{std::move(name), std::move(help), prometheus::MetricType::Counter, {}};
      prometheus::ClientMetric m;
      m.counter.value = v;
      f.metric.push_back(m);
      return f;
    };
    return {
        counter("cpscale_requests_sent_total", "Requests handed to the transport.", double(c_.sent.load())),
        counter("cpscale_requests_completed_total", "Requests that completed (any outcome).",
                double(c_.completed.load())),
        counter("cpscale_writes_total", "Successful POST/PUT/PATCH/DELETE requests.", double(c_.writes.load())),
        counter("cpscale_request_errors_total", "Requests without a 2xx response.", double(c_.errors.load())),
    };
  }

 private:
  const RunCounters& c_;
};

}  // namespace

std::string normalizeMetricsAddress(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) throw ConfigError("command line", "--metrics-addr", "expected host:port or :port");
  std::string host = address.substr(0, colon);
  std::string port = address.substr(colon + 1);
  int p = 0;
  try {
    p = std::stoi(port);
  } catch (...) {
  }
  if (p < 1 || p > 65535 || port.find_first_not_of("0123456789") != std::string::npos)
    throw ConfigError("command line", "--metrics-addr", "port '" + port + "' is not between 1 and 65535");
  if (host.empty()) host = "127.0.0.1";
  return host + ":" + port;
}

MetricsEndpoint::MetricsEndpoint(const std::string& address, const RunCounters& counters)
    : address_(normalizeMetricsAddress(address)) {
  try {
    exposer_ = std::make_unique<prometheus::Exposer>(address_);
  } catch (const std::exception& e) {
    throw UnavailableError("cannot serve metrics on " + address_ + ": " + e.what());
  }
  auto c = std::make_shared<CountersCollectable>(counters);
  exposer_->RegisterCollectable(c);
  collectable_ = c;
}

MetricsEndpoint::~MetricsEndpoint() = default;

}  // namespace cpscale::run
