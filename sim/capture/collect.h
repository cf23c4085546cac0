// What `cpscale capture` reads from a cluster: GETs only. Every request goes through a
// ReadOnlyTransport, which refuses any other method before it reaches the network, so
// a capture cannot write to the cluster it measures, whoever points it where.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "sim/capture/shape.h"
#include "sim/kube/transport.h"

namespace cpscale::capture {

// A Transport that passes GETs to the one it wraps and throws std::logic_error on any
// other method: a write in the capture path is a bug, never a request.
class ReadOnlyTransport final : public kube::Transport {
 public:
  explicit ReadOnlyTransport(kube::Transport& inner) : inner_(inner) {}
  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override;
  void cancel(kube::RequestId id) override { inner_.cancel(id); }
  std::size_t poll(engine::Duration maxWait) override { return inner_.poll(maxWait); }
  std::size_t inFlight() const override { return inner_.inFlight(); }
  void wakeup() override { inner_.wakeup(); }
  const std::string& server() const override { return inner_.server(); }
  std::size_t gets() const { return gets_; }

 private:
  kube::Transport& inner_;
  std::size_t gets_ = 0;
};

struct CollectOptions {
  std::chrono::milliseconds window{std::chrono::minutes(5)};
  // Waits out the window between the two scrapes (the wall clock; tests pass their own).
  std::function<void(std::chrono::milliseconds)> wait;
  // Monotonic seconds, to time the window (default: the steady clock).
  std::function<double()> seconds;
  // The time, RFC 3339, for the record.
  std::function<std::string()> now;
  // Said as the capture goes ("scraping /metrics", "waiting 5m").
  std::function<void(const std::string&)> progress;
};

// Scrapes /metrics, lists what the shape needs, waits `window`, scrapes again, and
// lists the custom resources created in between. UnavailableError on a failed GET,
// naming the path and the status (never a credential).
Reading collect(kube::Transport& transport, const CollectOptions& options);

}  // namespace cpscale::capture
