// The network seam: an asynchronous HTTP transport to an API server (or its replicas). The libcurl
// implementation (curl_transport.h) is used live; tests plug in a fake behind the same
// interface. A Transport is bound to its server(s) and one set of credentials at
// construction, so requests carry only a path and never credentials.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine/clock.h"

namespace cpscale::kube {

struct Header {
  std::string name;  // lower-case in responses
  std::string value;
};

struct HttpRequest {
  std::string method;  // GET, POST, PUT, PATCH, DELETE
  std::string path;    // absolute path with query, e.g. /api/v1/namespaces/ns/pods?limit=500
  std::vector<Header> headers;
  std::string body;
  // 0 means the transport's default. Streams (watch) usually set a long timeout.
  engine::Duration timeout{0};
  // When set, the body is handed over chunk by chunk as it arrives (watch streams)
  // instead of being accumulated in HttpResponse::body. Return false to abort.
  std::function<bool(std::string_view chunk)> onBodyChunk;
  // A long-lived stream (a watch) that may stay open for the whole run. It must not
  // take a slot that requests need: the open-loop driver does not count it against its
  // in-flight bound, and CurlTransport carries it on connections of its own.
  bool stream = false;
  // Not sent: the request is one actor's own (a node's watch, not a workload's shared
  // one). On the model a sampled run's actor stands for `weight` real ones, and so does
  // such a watch; a real server never sees it.
  bool perActor = false;
  // What the request is, for statistics: e.g. {"leases", "PUT"}. Set by ApiClient.
  std::string statsResource;
  std::string statsVerb;
  // When the request was meant to be sent (the actor's scheduled event time). The
  // open-loop driver measures latency from here as well as from the actual send, so
  // a generator that falls behind cannot hide server stalls. Unset: "now". A retried
  // attempt keeps its first attempt's: its latency from the schedule covers the stall.
  std::optional<engine::TimePoint> intendedAt;
  // Which attempt of the call this is (1: the first). A later one says why the client
  // retried (RetryDecision::reason, a static string) and how long it waited first.
  int attempt = 1;
  std::string_view retryReason;
  engine::Duration retryWait{0};
};

// Whether the exchange happened at all; HTTP-level failures are in `status`.
enum class TransportOutcome {
  kOk,             // a response was received (any HTTP status)
  kConnectFailed,  // could not connect (refused, unreachable, DNS)
  kTlsFailed,      // handshake or certificate verification failed
  kTimeout,
  kAborted,        // cancelled by the caller or by onBodyChunk returning false
  kProtocolError,  // malformed response, connection reset mid-exchange
};

std::string_view toString(TransportOutcome o);

struct HttpResponse {
  TransportOutcome outcome = TransportOutcome::kOk;
  // Human-readable detail for non-kOk outcomes. Never contains credentials.
  std::string detail;
  int status = 0;
  std::vector<Header> headers;
  std::string body;
  // "2" or "1.1": which protocol the exchange used.
  std::string httpVersion;

  bool ok() const { return outcome == TransportOutcome::kOk; }
  // Case-insensitive header lookup.
  std::optional<std::string_view> header(std::string_view name) const;
};

using RequestId = std::uint64_t;
using ResponseHandler = std::function<void(HttpResponse)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Starts the request without blocking on the network. `done` runs exactly once,
  // from inside poll() (or from cancel()).
  virtual RequestId submit(HttpRequest req, ResponseHandler done) = 0;
  // Aborts a request in flight; its handler runs with TransportOutcome::kAborted.
  virtual void cancel(RequestId id) = 0;
  // Drives I/O and runs the handlers of finished requests, waiting at most `maxWait`
  // for network activity. Returns the number of handlers run.
  virtual std::size_t poll(engine::Duration maxWait) = 0;
  virtual std::size_t inFlight() const = 0;
  // Makes a poll() that is blocked in another thread return early.
  virtual void wakeup() = 0;
  // The server this transport talks to (scheme://host:port; replicas separated by
  // ", "), for messages.
  virtual const std::string& server() const = 0;
};

using TransportPtr = std::unique_ptr<Transport>;

// Submits one request and polls until it completes. For setup and CLI steps, not for
// the load path.
HttpResponse roundTrip(Transport& transport, HttpRequest req);

}  // namespace cpscale::kube
