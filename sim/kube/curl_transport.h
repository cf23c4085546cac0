// The live Transport: libcurl's multi interface on one thread, bound to one identity
// and to one API server or to several replicas of it. HTTP/2 multiplexing when the
// server offers it (falls back to HTTP/1.1), connection reuse, TLS verification on
// unless the kubeconfig says insecure, credentials from memory (never written to disk,
// never logged).
//
// Replicas are used as a load balancer in front of them would: requests go round-robin
// over the replicas, each replica with its own connections, so even one connection per
// replica reaches them all. Streams (HttpRequest::stream, i.e. watches) live in a
// multi handle of their own, with their own connections, so a stream that stays open
// for the whole run never holds a connection or HTTP/2 stream slot that requests need;
// both multi handles are driven by one epoll set, so neither waits on the other.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/kube/kubeconfig.h"
#include "sim/kube/transport.h"

namespace cpscale::kube {

struct CurlTransportOptions {
  // Connections to each server (replica) for requests. With HTTP/2 one connection
  // carries many streams, so a few connections are enough; with HTTP/1.1 this bounds
  // the requests in flight.
  long maxHostConnections = 8;
  long maxConcurrentStreams = 100;  // per HTTP/2 request connection
  bool http2 = true;
  engine::Duration connectTimeout = std::chrono::seconds(10);
  // Used when a request's timeout is 0.
  engine::Duration defaultTimeout = std::chrono::seconds(60);
  // Streams (watches) per HTTP/2 stream connection; more streams open more stream
  // connections, never a request connection. 0 for the stream connections' count
  // means no limit, so a stream never waits for another one to end.
  long streamsPerConnection = 100;
  long maxStreamConnections = 0;
  // The replicas of the API server (scheme://host:port) to spread requests and streams
  // over, all reached with the RestConfig's credentials, CA and tls-server-name; the
  // RestConfig's own server is not used then. Empty: the RestConfig's server alone.
  std::vector<std::string> servers{};
};

// What went to one server (replica), client-side.
struct ServerCounts {
  std::string server;
  std::uint64_t requests = 0;  // submitted, streams excepted
  std::uint64_t streams = 0;   // streams opened
};

// Counters for checking connection reuse, protocol and the spread over replicas,
// cheap enough to keep always.
struct CurlTransportStats {
  std::uint64_t completed = 0;
  std::uint64_t connectionsOpened = 0;  // new connections the requests needed
  std::uint64_t http2Responses = 0;
  std::vector<ServerCounts> perServer;  // in the order the servers were given
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
  // Thread-safe.
  void wakeup() override;
  const std::string& server() const override { return server_; }

  const CurlTransportStats& stats() const { return stats_; }
  // Streams open now (part of inFlight()).
  std::size_t streamsOpen() const { return streamsOpen_; }

 private:
  struct Active;
  struct Replica {
    std::string server;
    std::string baseUrl;        // what request paths are appended to
    void* connectTo = nullptr;  // curl_slist*: host:port:realhost:port when tls-server-name is set
  };
  // One libcurl multi handle and the timer it asked for; its sockets are in epollFd_.
  struct Multi {
    CurlTransport* owner = nullptr;
    void* handle = nullptr;  // CURLM*
    std::uint32_t index = 0;
    std::optional<std::chrono::steady_clock::time_point> timerAt;
  };
  static int onSocket(void* easy, int fd, int what, void* multi, void* socketp);
  static int onTimer(void* handle, long timeoutMs, void* multi);

  void initMulti(Multi& m, std::uint32_t index, long maxHostConnections, long maxStreams);
  void* acquireEasy();  // CURL*, configured with everything that never changes
  void releaseEasy(void* easy);
  std::size_t drainCompleted(Multi& m);
  void complete(Active* a, int curlCode);
  void processDeferredCancels();
  // Runs the multi handles whose timers are due; returns how soon the next one is.
  std::optional<engine::Duration> runTimers();
  void action(Multi& m, int fd, int events);
  // After a transfer timed out: shuts down the connection it leaves in libcurl's cache
  // when nothing arrived on it for half the timeout (a stalled HTTP/2 connection).
  void shutDownIfStalled(void* easy, engine::Duration requestTimeout);

  RestConfig config_;
  CurlTransportOptions options_;
  std::string server_;  // for messages
  std::vector<Replica> replicas_;
  std::size_t nextRequestReplica_ = 0;
  std::size_t nextStreamReplica_ = 0;
  Multi requests_;
  Multi streams_;
  int epollFd_ = -1;
  int wakeFd_ = -1;  // eventfd: wakeup() from any thread
  std::vector<void*> freeEasy_;
  std::unordered_map<RequestId, std::unique_ptr<Active>> active_;
  std::vector<RequestId> deferredCancels_;
  // The header lists libcurl sends, built once for each set of request headers (nearly
  // every request carries one of a few sets): a list per request cost a dozen
  // allocations. Once kMaxHeaderLists sets are here, a new one gets a list of its own.
  struct HeaderList {
    std::vector<Header> headers;
    void* list = nullptr;  // curl_slist*
  };
  static constexpr std::size_t kMaxHeaderLists = 32;
  // The list for `headers`; `owned` says whether the caller must free it.
  void* headerList(const std::vector<Header>& headers, bool& owned);
  std::vector<HeaderList> headerLists_;
  // When each socket last had input, for telling a stalled connection from a slow stream.
  std::unordered_map<int, std::chrono::steady_clock::time_point> lastInput_;
  bool inPerform_ = false;
  RequestId nextId_ = 0;
  std::size_t streamsOpen_ = 0;
  CurlTransportStats stats_;
};

}  // namespace cpscale::kube
