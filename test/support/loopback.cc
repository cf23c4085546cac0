#include "test/support/loopback.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

extern char** environ;

namespace cpscale::kube::testing {

using namespace std::chrono_literals;

int bindLoopback(int backlog, int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  if (backlog > 0) ::listen(fd, backlog);
  return fd;
}

int freePort() {
  int port = 0;
  ::close(bindLoopback(0, port));
  return port;
}

int connectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool canConnect(int port) {
  int fd = connectLoopback(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool sendAll(int fd, const char* data, std::size_t n, int stopFd) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w > 0) {
      data += w;
      n -= static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) return false;
    pollfd p[2] = {{fd, POLLOUT, 0}, {stopFd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return false;
    if (p[1].revents != 0) return false;
  }
  return true;
}

namespace {

std::vector<int> fdsOpen() {
  std::vector<int> fds;
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return fds;
  const int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = std::atoi(e->d_name);
    if (fd != own) fds.push_back(fd);
  }
  ::closedir(d);
  return fds;
}

}  // namespace

int openFds() { return static_cast<int>(fdsOpen().size()); }

int clientSockets(int port) {
  int n = 0;
  for (int fd : fdsOpen()) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0, type = 0, listening = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_INET) continue;
    len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) continue;
    sockaddr_in peer{};
    len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) {
      if (errno == ENOTCONN) ++n;  // its connection is gone, the descriptor is not
      continue;
    }
    if (ntohs(peer.sin_port) == port && peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK)) ++n;
  }
  return n;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Nghttpd::Nghttpd(const std::filesystem::path& docroot) {
  const std::string key = (certs_.path() / "server.key").string();
  const std::string crt = (certs_.path() / "server.crt").string();
  std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=server"
      " -addext subjectAltName=DNS:cpscale.test,IP:127.0.0.1 -keyout " +
      key + " -out " + crt + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    why_ = "openssl cannot create test certificates";
    return;
  }
  port_ = freePort();
  std::vector<std::string> args{"nghttpd", "-a", "127.0.0.1", "-d", docroot.string(), std::to_string(port_), key, crt};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawnp(&pid_, "nghttpd", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = 0;
    why_ = "nghttpd is not installed (Debian package nghttp2-server)";
    return;
  }
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!canConnect(port_)) {
    const bool exited = ::waitpid(pid_, nullptr, WNOHANG) == pid_;
    if (exited || std::chrono::steady_clock::now() > deadline) {
      if (exited) pid_ = 0;
      why_ = "nghttpd did not start";
      return;
    }
    std::this_thread::sleep_for(20ms);
  }
}

Nghttpd::~Nghttpd() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::string Nghttpd::caPem() const { return slurp(certs_.path() / "server.crt"); }

}  // namespace cpscale::kube::testing
