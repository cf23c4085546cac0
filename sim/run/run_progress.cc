#include "sim/run/run_progress.h"

namespace cpscale::cli {

kube::RequestId CountingTransport::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  counters_.sent.fetch_add(1, std::memory_order_relaxed);
  // A retry keeps its call's scheduled time: the wait since is the client's backoff.
  if (req.intendedAt && req.attempt == 1) {
    std::int64_t lag = (clock_.now() - *req.intendedAt).count();
    std::int64_t seen = counters_.maxLagNs.load(std::memory_order_relaxed);
    while (lag > seen && !counters_.maxLagNs.compare_exchange_weak(seen, lag, std::memory_order_relaxed)) {
    }
  }
  bool write = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
  bool stream = static_cast<bool>(req.onBodyChunk);
  return inner_->submit(std::move(req), [this, write, stream, done = std::move(done)](kube::HttpResponse resp) {
    counters_.completed.fetch_add(1, std::memory_order_relaxed);
    bool ok = resp.ok() && resp.status >= 200 && resp.status < 300;
    if (ok && write) counters_.writes.fetch_add(1, std::memory_order_relaxed);
    // A watch ends when it is cancelled at the end of a run: not an error.
    if (!ok && !(stream && resp.outcome == kube::TransportOutcome::kAborted))
      counters_.errors.fetch_add(1, std::memory_order_relaxed);
    done(std::move(resp));
  });
}

}  // namespace cpscale::cli
