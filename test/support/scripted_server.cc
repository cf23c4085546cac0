#include "test/support/scripted_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <stdexcept>

#include "test/support/loopback.h"

namespace cpscale::kube::testing {

namespace {

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 500: return "Internal Server Error";
    default: return "Status";
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::string Reply::head() const {
  std::string h =
      "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\nContent-Type: application/json\r\n";
  if (closeDelimited) {
    h += "Connection: close\r\n";
  } else if (chunked()) {
    h += "Transfer-Encoding: chunked\r\n";
  } else {
    h += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return h + "\r\n";
}

std::string Reply::render() const {
  std::string out = head();
  if (!chunked()) return out + body;
  char size[32];
  for (const auto& c : chunks) {
    std::snprintf(size, sizeof size, "%zx\r\n", c.size());
    out += size + c + "\r\n";
  }
  if (endStream) out += "0\r\n\r\n";
  return out;
}

Reply json(int status, const std::string& body) { return Reply{status, body, {}, true, false}; }

std::string watchEvent(const std::string& type, const std::string& name, int resourceVersion) {
  return R"({"type":")" + type + R"(","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + std::to_string(resourceVersion) +
         R"("},"data":{"payload":"event )" + std::to_string(resourceVersion) + R"("}}})" + "\n";
}

ScriptedServer::ScriptedServer(Handler handler) : handler_(std::move(handler)) {
  listenFd_ = bindLoopback(64, port_);
  stopFd_ = ::eventfd(0, EFD_CLOEXEC);
  if (listenFd_ < 0 || stopFd_ < 0) throw std::runtime_error("scripted server: cannot listen");
  acceptor_ = std::thread([this] { acceptLoop(); });
}

ScriptedServer::~ScriptedServer() {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto w = ::write(stopFd_, &one, sizeof one);
  acceptor_.join();
  for (auto& t : conns_) t.join();
  ::close(listenFd_);
  ::close(stopFd_);
}

std::vector<ReceivedRequest> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_;
}

int ScriptedServer::count(const std::string& method, const std::string& targetPart) const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<int>(std::count_if(requests_.begin(), requests_.end(), [&](const ReceivedRequest& r) {
    return r.method == method && r.target.find(targetPart) != std::string::npos;
  }));
}

void ScriptedServer::acceptLoop() {
  while (true) {
    pollfd p[2] = {{listenFd_, POLLIN, 0}, {stopFd_, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if (p[0].revents == 0) continue;
    int c = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) continue;
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> l(mu_);
    conns_.emplace_back([this, c] { serve(c); });
  }
}

void ScriptedServer::serve(int fd) {
  std::string buf;
  char tmp[16384];
  // Reads more of the connection; false once the client is gone or the server stops.
  auto readMore = [&]() {
    while (true) {
      pollfd p[2] = {{fd, POLLIN, 0}, {stopFd_, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return false;
      if (p[1].revents != 0) return false;
      if (p[0].revents == 0) continue;
      ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  };
  while (true) {
    std::size_t end = buf.find("\r\n\r\n");
    if (end == std::string::npos) {
      if (!readMore()) break;
      continue;
    }
    const std::string head = buf.substr(0, end);
    std::size_t length = 0;
    const std::string h = lower(head);
    if (auto p = h.find("\r\ncontent-length:"); p != std::string::npos) length = std::stoul(h.substr(p + 17));
    bool complete = true;
    while (buf.size() < end + 4 + length) {
      if (!readMore()) {
        complete = false;
        break;
      }
    }
    if (!complete) break;
    ReceivedRequest req;
    const std::size_t sp1 = head.find(' ');
    const std::size_t sp2 = head.find(' ', sp1 + 1);
    req.method = head.substr(0, sp1);
    req.target = head.substr(sp1 + 1, sp2 - sp1 - 1);
    req.body = buf.substr(end + 4, length);
    buf.erase(0, end + 4 + length);
    {
      std::lock_guard<std::mutex> l(mu_);
      requests_.push_back(req);
    }
    const Reply reply = handler_(req);
    const std::string bytes = reply.render();
    if (!sendAll(fd, bytes.data(), bytes.size(), stopFd_)) break;
    if (reply.closeDelimited && reply.endStream) break;
    if (!reply.endStream) {
      // A held stream: nothing more is sent; wait for the client (or the proxy) to go.
      while (readMore()) buf.clear();
      break;
    }
  }
  ::close(fd);
}

}  // namespace cpscale::kube::testing
