// Loopback plumbing shared by the tests that run CurlTransport against real sockets:
// free ports on 127.0.0.1, what the process holds open (for leak checks), and nghttpd
// (Debian package nghttp2-server) as a TLS HTTP/2 server with throwaway certificates.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "test/support/temp_dir.h"

namespace cpscale::kube::testing {

// A TCP socket bound to a free port on 127.0.0.1 (listening when backlog > 0); its port.
int bindLoopback(int backlog, int& port);
int freePort();
bool canConnect(int port);
// Sends all of [data, data + n) on a non-blocking socket unless the peer goes away or
// `stopFd` becomes readable (a server shutting down).
bool sendAll(int fd, const char* data, std::size_t n, int stopFd);
// Connects to 127.0.0.1:port; -1 on failure.
int connectLoopback(int port);

// File descriptors open in this process (/proc/self/fd).
int openFds();
// The process's TCP sockets that are a client's side of a connection to
// 127.0.0.1:port, plus those whose connection is gone (reset or closed) but whose
// descriptor is still open: what a client that leaks connections would pile up.
// Listening sockets and the servers' accepted sockets are not counted.
int clientSockets(int port);

// nghttpd serving `docroot` over TLS (HTTP/2 only) on 127.0.0.1 with a self-signed
// certificate for 127.0.0.1 and cpscale.test.
class Nghttpd {
 public:
  // Starts it; check ok() (false when openssl or nghttpd is missing: why() says which).
  explicit Nghttpd(const std::filesystem::path& docroot);
  ~Nghttpd();
  Nghttpd(const Nghttpd&) = delete;
  Nghttpd& operator=(const Nghttpd&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  // The certificate, as a kubeconfig's certificate-authority-data would carry it.
  std::string caPem() const;

 private:
  TempDir certs_;
  std::string why_;
  int port_ = 0;
  pid_t pid_ = 0;
};

std::string slurp(const std::filesystem::path& path);

}  // namespace cpscale::kube::testing
