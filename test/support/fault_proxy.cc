#include "test/support/fault_proxy.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "test/support/loopback.h"

namespace cpscale::kube::testing {

using namespace std::chrono_literals;

const char* toString(FaultKind k) {
  switch (k) {
    case FaultKind::kReset: return "reset";
    case FaultKind::kClose: return "close";
    case FaultKind::kStall: return "stall";
  }
  return "?";
}

struct FaultProxy::Conn {
  int client = -1;
  int upstream = -1;
  std::thread thread;
};

namespace {

void prepare(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

// Waits (bounded) until the peer has acknowledged everything sent on `fd`: a reset
// discards what is still queued, and the bytes before a fault must arrive.
void waitDelivered(int fd) {
  auto deadline = std::chrono::steady_clock::now() + 5s;
  int queued = 0;
  while (::ioctl(fd, SIOCOUTQ, &queued) == 0 && queued > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
}

void resetAndClose(int fd) {
  linger l{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  ::close(fd);
}

// A clean end: FIN after everything sent, then what the client still sends is read
// and dropped until it closes too (closing with unread input would send a reset).
void finishAndClose(int fd, int stopFd) {
  ::shutdown(fd, SHUT_WR);
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stopFd, POLLIN, 0}};
    if (::poll(p, 2, 100) < 0 && errno != EINTR) break;
    if (p[1].revents != 0) break;
    if (p[0].revents == 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) break;
  }
  ::close(fd);
}

}  // namespace

FaultProxy::FaultProxy(int upstreamPort) : upstreamPort_(upstreamPort) {
  listenFd_ = bindLoopback(64, port_);
  stopFd_ = ::eventfd(0, EFD_CLOEXEC);
  if (listenFd_ < 0 || stopFd_ < 0) throw std::runtime_error("fault proxy: cannot listen");
  acceptor_ = std::thread([this] { acceptLoop(); });
}

FaultProxy::~FaultProxy() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(stopFd_, &one, sizeof one);
  acceptor_.join();
  for (Conn& c : conns_) c.thread.join();
  ::close(listenFd_);
  ::close(stopFd_);
}

void FaultProxy::inject(Fault f) {
  std::lock_guard<std::mutex> l(mu_);
  faults_.push_back(std::move(f));
}

std::size_t FaultProxy::queued() const {
  std::lock_guard<std::mutex> l(mu_);
  return faults_.size();
}

bool FaultProxy::takeFault(const std::string& request, Fault& out) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->when.empty() || request.find(it->when) != std::string::npos) {
      out = std::move(*it);
      faults_.erase(it);
      return true;
    }
  }
  return false;
}

void FaultProxy::acceptLoop() {
  while (true) {
    pollfd p[2] = {{listenFd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if (p[0].revents == 0) continue;
    int c = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    ++accepted_;
    int u = connectLoopback(upstreamPort_);
    if (u < 0) {
      resetAndClose(c);
      continue;
    }
    prepare(c);
    prepare(u);
    ++relaying_;
    std::lock_guard<std::mutex> l(mu_);
    Conn& conn = conns_.emplace_back();
    conn.client = c;
    conn.upstream = u;
    conn.thread = std::thread([this, &conn] { relay(conn); });
  }
}

void FaultProxy::relay(Conn& c) {
  std::string request;  // the client's bytes since the server last sent any
  bool serverSent = false;
  bool armed = false;  // a fault is taken up by this connection
  Fault fault;
  std::size_t passed = 0;  // server bytes relayed since it was taken up
  bool stalled = false;
  enum class End { kBoth, kClient, kReset } end = End::kBoth;
  char buf[16384];
  while (true) {
    pollfd p[3] = {{c.client, POLLIN, 0}, {stalled ? -1 : c.upstream, POLLIN, 0}, {stopFd_, POLLIN, 0}};
    if (::poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[2].revents != 0) break;
    if (p[0].revents != 0) {
      ssize_t n = ::recv(c.client, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) break;  // the client closed or reset: the upstream goes too
      if (stalled) continue;
      if (serverSent) {
        request.clear();
        serverSent = false;
      }
      if (request.size() < 65536) request.append(buf, static_cast<std::size_t>(n));
      if (!sendAll(c.upstream, buf, static_cast<std::size_t>(n), stopFd_)) break;
    }
    if (p[1].revents != 0) {
      ssize_t n = ::recv(c.upstream, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        end = End::kClient;  // the server ended: so does the client, cleanly
        break;
      }
      serverSent = true;
      if (!armed && takeFault(request, fault)) {
        armed = true;
        passed = 0;
      }
      std::size_t pass = static_cast<std::size_t>(n);
      if (armed) pass = std::min(pass, fault.after - passed);
      if (!sendAll(c.client, buf, pass, stopFd_)) break;
      passed += pass;
      if (!armed || passed < fault.after) continue;
      ++struck_;
      ::close(std::exchange(c.upstream, -1));
      if (fault.kind == FaultKind::kReset) {
        end = End::kReset;
        break;
      }
      if (fault.kind == FaultKind::kClose) {
        end = End::kClient;
        break;
      }
      stalled = true;  // kStall: wait for the client to give up
      armed = false;
    }
  }
  if (c.upstream >= 0) ::close(c.upstream);
  switch (end) {
    case End::kReset:
      waitDelivered(c.client);
      resetAndClose(c.client);
      break;
    case End::kClient: finishAndClose(c.client, stopFd_); break;
    case End::kBoth: ::close(c.client); break;
  }
  c.client = c.upstream = -1;
  --relaying_;
}

}  // namespace cpscale::kube::testing
