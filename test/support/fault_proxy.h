// A TCP proxy on 127.0.0.1 that relays connections to a server on this machine and
// breaks them on request, the way a network, a load balancer or a dying server does:
//
//   kReset  the connection is reset (RST: SO_LINGER 0, then close) once the bytes
//           before the fault have reached the client;
//   kClose  it is closed cleanly (FIN), as if the server had finished;
//   kStall  nothing more is relayed in either direction, the connection stays open
//           until the client gives up on it.
//
// A fault strikes in the server-to-client bytes of one connection: `after` bytes pass,
// the next ones do not. It is protocol-blind, so the same faults work on plain
// HTTP/1.1 (where a test places them exactly: before the response, after its headers,
// mid-body, mid-chunk, mid-event-line) and on TLS (where they show up as TLS and
// HTTP/2 errors, as real cuts do).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace cpscale::kube::testing {

enum class FaultKind { kReset, kClose, kStall };
const char* toString(FaultKind k);

struct Fault {
  FaultKind kind = FaultKind::kReset;
  // Server-to-client bytes let through, counted from the first byte the server sends
  // after the fault is taken up; 0: the client gets nothing more.
  std::size_t after = 0;
  // Taken up only by a connection whose current request contains this text (plain
  // HTTP only, e.g. "watch=true"); empty: by any connection.
  std::string when{};
};

class FaultProxy {
 public:
  // Listens on a free port of 127.0.0.1 and relays every connection to
  // 127.0.0.1:upstreamPort.
  explicit FaultProxy(int upstreamPort);
  // Ends every connection (a stalled one too) and joins its thread.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }

  // Queues a fault. The first connection with server bytes to relay and no fault of its
  // own takes up the oldest queued fault it matches: on an idle kept-alive connection,
  // that is the response to the next request; on a new connection, its first bytes (a
  // TLS server's handshake included).
  void inject(Fault f);
  // Faults injected but not yet taken up, and faults that have struck.
  std::size_t queued() const;
  int struck() const { return struck_; }

  // Connections accepted so far, and those still relayed (neither side closed).
  int accepted() const { return accepted_; }
  int relaying() const { return relaying_; }

 private:
  struct Conn;
  void acceptLoop();
  void relay(Conn& c);
  // Takes the first queued fault whose `when` matches `request`; false if none.
  bool takeFault(const std::string& request, Fault& out);

  int listenFd_ = -1;
  int port_ = 0;
  int upstreamPort_ = 0;
  int stopFd_ = -1;  // eventfd: readable once the proxy is being destroyed
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::deque<Fault> faults_;
  std::list<Conn> conns_;
  std::atomic<int> accepted_{0};
  std::atomic<int> relaying_{0};
  std::atomic<int> struck_{0};
};

}  // namespace cpscale::kube::testing
