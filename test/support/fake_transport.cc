#include "test/support/fake_transport.h"

#include <algorithm>

namespace cpscale::kube {

void FakeTransport::enqueue(int status, std::string body, std::vector<Header> headers) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  enqueue(std::move(r));
}

engine::TimePoint FakeTransport::now() const {
  if (clock_) return clock_->now();
  if (scheduler_) return scheduler_->now();
  return engine::TimePoint{};
}

HttpResponse FakeTransport::respond(const HttpRequest& req) {
  if (fault_) {
    if (auto outcome = fault_(req)) {
      HttpResponse r;
      r.outcome = *outcome;
      r.detail = "injected fault";
      return r;
    }
  }
  if (!queue_.empty()) {
    HttpResponse r = std::move(queue_.front());
    queue_.pop_front();
    return r;
  }
  if (handler_) return handler_(req);
  HttpResponse r;
  r.status = 404;
  r.body = R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})";
  return r;
}

RequestId FakeTransport::submit(HttpRequest req, ResponseHandler done) {
  RequestId id = ++nextId_;
  recorded_.push_back({req, now()});
  Pending p;
  if (req.stream && streamHandler_) {
    std::optional<HttpResponse> r = streamHandler_(req);
    p.held = !r.has_value();
    if (r) p.response = std::move(*r);
  } else {
    p.response = respond(req);
  }
  if (p.response.httpVersion.empty() && p.response.ok()) p.response.httpVersion = "2";
  p.request = std::move(req);
  p.done = std::move(done);
  p.due = now() + latency_;
  auto [it, _] = pending_.emplace(id, std::move(p));
  if (scheduler_ && latency_ > engine::Duration::zero() && !it->second.held) {
    it->second.event = scheduler_->scheduleAt(it->second.due, [this, id] { deliver(id); });
  }
  return id;
}

void FakeTransport::deliver(RequestId id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  HttpResponse resp = std::move(p.response);
  if (p.request.onBodyChunk && resp.ok()) {
    std::vector<std::string> chunks = chunker_ ? chunker_(p.request, resp) : std::vector<std::string>{resp.body};
    resp.body.clear();
    for (const auto& c : chunks) {
      if (!p.request.onBodyChunk(c)) {
        resp.outcome = TransportOutcome::kAborted;
        resp.detail = "aborted by the body consumer";
        break;
      }
    }
  }
  p.done(std::move(resp));
}

void FakeTransport::cancel(RequestId id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.event != 0) scheduler_->cancel(p.event);
  ++cancelled_;
  HttpResponse r;
  r.outcome = TransportOutcome::kAborted;
  r.detail = "cancelled";
  p.done(std::move(r));
}

std::vector<RequestId> FakeTransport::heldMatching(std::string_view pathFragment) const {
  std::vector<RequestId> ids;
  for (const auto& [id, p] : pending_) {
    if (p.held && p.request.path.find(pathFragment) != std::string::npos) ids.push_back(id);
  }
  return ids;
}

std::size_t FakeTransport::pushToStreams(std::string_view pathFragment, std::string_view chunk) {
  std::size_t n = 0;
  for (RequestId id : heldMatching(pathFragment)) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // ended by an earlier consumer
    // A copy: the consumer may cancel its own stream, which erases the entry.
    auto consume = it->second.request.onBodyChunk;
    const bool took = !consume || consume(chunk);
    it = pending_.find(id);
    if (it == pending_.end()) continue;
    if (!took) {
      it->second.held = false;
      it->second.response = HttpResponse{};
      it->second.response.outcome = TransportOutcome::kAborted;
      it->second.response.detail = "aborted by the body consumer";
      deliver(id);
      continue;
    }
    ++n;
  }
  return n;
}

std::size_t FakeTransport::endStreams(std::string_view pathFragment, const HttpResponse& response) {
  std::size_t n = 0;
  for (RequestId id : heldMatching(pathFragment)) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;
    it->second.held = false;
    it->second.response = response;
    deliver(id);
    ++n;
  }
  return n;
}

std::size_t FakeTransport::heldStreams() const {
  std::size_t n = 0;
  for (const auto& [id, p] : pending_) n += p.held;
  return n;
}

std::optional<engine::TimePoint> FakeTransport::nextDue() const {
  std::optional<engine::TimePoint> best;
  for (const auto& [id, p] : pending_) {
    if (p.event != 0 || p.held) continue;
    if (!best || p.due < *best) best = p.due;
  }
  return best;
}

std::size_t FakeTransport::poll(engine::Duration maxWait) {
  auto dueNow = [this] {
    std::vector<RequestId> ids;
    engine::TimePoint t = now();
    for (const auto& [id, p] : pending_) {
      if (p.event == 0 && !p.held && p.due <= t) ids.push_back(id);
    }
    return ids;
  };
  std::vector<RequestId> ids = dueNow();
  if (ids.empty() && clock_) {
    // Nothing is ready: "wait" in virtual time, as a real poll would block.
    if (auto next = nextDue()) {
      clock_->advanceTo(std::min(*next, clock_->now() + maxWait));
      ids = dueNow();
    }
  }
  // Deliver in due-time order, then submission order: handlers may submit more.
  std::stable_sort(ids.begin(), ids.end(),
                   [this](RequestId a, RequestId b) { return pending_.at(a).due < pending_.at(b).due; });
  std::size_t n = 0;
  for (RequestId id : ids) {
    if (pending_.count(id) == 0) continue;  // cancelled by an earlier handler
    deliver(id);
    ++n;
  }
  return n;
}

}  // namespace cpscale::kube
