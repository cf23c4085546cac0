// The live Transport: libcurl's multi interface on one thread, bound to one API
// server and one identity. HTTP/2 multiplexing when the server offers it (falls back
// to HTTP/1.1), connection reuse, TLS verification on unless the kubeconfig says
// insecure, credentials from memory (never written to disk, never logged).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/kube/kubeconfig.h"
#include "sim/kube/transport.h"

namespace cpscale::kube {

struct CurlTransportOptions {
  // Connections to the server. With HTTP/2 one connection carries many streams, so a
  // few connections are enough; with HTTP/1.1 this bounds the requests in flight.
  long maxHostConnections = 8;
  long maxConcurrentStreams = 100;  // per HTTP/2 connection
  bool http2 = true;
  engine::Duration connectTimeout = std::chrono::seconds(10);
  // Used when a request's timeout is 0.
  engine::Duration defaultTimeout = std::chrono::seconds(60);
};

// Counters for checking connection reuse and protocol, cheap enough to keep always.
struct CurlTransportStats {
  std::uint64_t completed = 0;
  std::uint64_t connectionsOpened = 0;  // new connections the requests needed
  std::uint64_t http2Responses = 0;
};

class CurlTransport final : public Transport {
 public:
  // Throws ConfigError when the credentials cannot be used (e.g. a key without a
  // certificate) and UnavailableError when libcurl cannot be initialised.
  explicit CurlTransport(const RestConfig& config, CurlTransportOptions options = {});
  // In-flight requests are dropped without running their handlers.
  ~CurlTransport() override;
  CurlTransport(const CurlTransport&) = delete;
  CurlTransport& operator=(const CurlTransport&) = delete;

  RequestId submit(HttpRequest req, ResponseHandler done) override;
  void cancel(RequestId id) override;
  std::size_t poll(engine::Duration maxWait) override;
  std::size_t inFlight() const override { return active_.size(); }
  void wakeup() override;
  const std::string& server() const override { return server_; }

  const CurlTransportStats& stats() const { return stats_; }

 private:
  struct Active;
  void* acquireEasy();  // CURL*, configured with everything that never changes
  void releaseEasy(void* easy);
  std::size_t drainCompleted();
  void complete(Active* a, int curlCode);
  void processDeferredCancels();

  RestConfig config_;
  CurlTransportOptions options_;
  std::string server_;   // for messages
  std::string baseUrl_;  // what request paths are appended to
  std::string connectTo_;  // host:port:realhost:port when tls-server-name is set
  void* multi_ = nullptr;  // CURLM*
  void* connectToList_ = nullptr;  // curl_slist*
  std::vector<void*> freeEasy_;
  std::unordered_map<RequestId, std::unique_ptr<Active>> active_;
  std::vector<RequestId> deferredCancels_;
  bool inPerform_ = false;
  RequestId nextId_ = 0;
  CurlTransportStats stats_;
};

}  // namespace cpscale::kube
