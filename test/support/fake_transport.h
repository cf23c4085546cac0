// A scripted Transport for unit tests of anything that talks to the API server: it
// records every request and answers from a handler or a queue, optionally after a
// latency in virtual time, with injectable transport faults. It is not a fake API
// server: the test decides every response.
//
// Delivery (the Transport contract: handlers never run inside submit()):
//  - default: responses are delivered by poll().
//  - with a VirtualClock: a response is due `latency` after submit; poll(maxWait)
//    delivers what is due and, if nothing is, advances the clock to the next due time
//    (at most maxWait ahead), as a real poll would wait.
//  - with a Scheduler (for code running on the engine): each response is delivered by
//    a scheduled event `latency` after submit; poll() only delivers zero-latency ones.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/scheduler.h"
#include "sim/kube/transport.h"

namespace cpscale::kube {

class FakeTransport final : public Transport {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // A fault decides the exchange never produced a response: connect failure, timeout...
  using FaultInjector = std::function<std::optional<TransportOutcome>(const HttpRequest&)>;
  // For streaming requests (onBodyChunk set): the body is fed in these pieces.
  using Chunker = std::function<std::vector<std::string>(const HttpRequest&, const HttpResponse&)>;
  // For stream requests (HttpRequest::stream), asked instead of the queue and the
  // handler: a response is delivered as usual; nullopt holds the stream open, as a
  // watch the server has nothing to say on, until pushToStreams/endStreams.
  using StreamHandler = std::function<std::optional<HttpResponse>(const HttpRequest&)>;

  FakeTransport() = default;
  explicit FakeTransport(engine::VirtualClock& clock) : clock_(&clock) {}
  explicit FakeTransport(engine::Scheduler& scheduler) : scheduler_(&scheduler) {}

  // Responses: queued ones are used first, in order; then the handler; with neither,
  // 404. A response with outcome != kOk is delivered as that transport failure.
  void setHandler(Handler h) { handler_ = std::move(h); }
  void enqueue(HttpResponse r) { queue_.push_back(std::move(r)); }
  void enqueue(int status, std::string body = {}, std::vector<Header> headers = {});
  void setLatency(engine::Duration d) { latency_ = d; }
  void setFault(FaultInjector f) { fault_ = std::move(f); }
  void setChunker(Chunker c) { chunker_ = std::move(c); }
  void setStreamHandler(StreamHandler h) { streamHandler_ = std::move(h); }

  // Feeds `chunk` to every held stream whose path contains `pathFragment` (a consumer
  // that refuses it ends its stream as aborted); returns how many streams took it.
  std::size_t pushToStreams(std::string_view pathFragment, std::string_view chunk);
  // Ends every held stream whose path contains `pathFragment` with `response` (its body
  // fed as the last chunk), as the server's timeout or a refusal; returns how many.
  std::size_t endStreams(std::string_view pathFragment, const HttpResponse& response);
  std::size_t heldStreams() const;

  struct Recorded {
    HttpRequest request;
    engine::TimePoint submittedAt{};  // virtual time, if a clock or scheduler is set
  };
  const std::vector<Recorded>& requests() const { return recorded_; }
  void clearRequests() { recorded_.clear(); }
  std::size_t cancelled() const { return cancelled_; }
  // The earliest time a pending response is due (VirtualClock mode), if any.
  std::optional<engine::TimePoint> nextDue() const;

  RequestId submit(HttpRequest req, ResponseHandler done) override;
  void cancel(RequestId id) override;
  std::size_t poll(engine::Duration maxWait) override;
  std::size_t inFlight() const override { return pending_.size(); }
  void wakeup() override {}
  const std::string& server() const override { return server_; }

 private:
  struct Pending {
    HttpRequest request;
    ResponseHandler done;
    HttpResponse response;
    engine::TimePoint due{};
    engine::EventId event = 0;
    bool held = false;  // an open stream: delivered only by endStreams or cancel
  };
  std::vector<RequestId> heldMatching(std::string_view pathFragment) const;
  engine::TimePoint now() const;
  HttpResponse respond(const HttpRequest& req);
  void deliver(RequestId id);

  engine::VirtualClock* clock_ = nullptr;
  engine::Scheduler* scheduler_ = nullptr;
  Handler handler_;
  std::deque<HttpResponse> queue_;
  FaultInjector fault_;
  Chunker chunker_;
  StreamHandler streamHandler_;
  engine::Duration latency_{0};
  std::vector<Recorded> recorded_;
  std::map<RequestId, Pending> pending_;  // ordered by id: FIFO among equal due times
  RequestId nextId_ = 0;
  std::size_t cancelled_ = 0;
  std::string server_ = "https://fake.invalid";
};

}  // namespace cpscale::kube
