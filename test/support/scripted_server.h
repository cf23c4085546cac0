// A plain HTTP/1.1 server on 127.0.0.1 that answers each request with what a test's
// handler returns, on kept-alive connections, one thread per connection, and records
// every request it read. A reply is rendered to bytes before it is sent (render()),
// so a test can place a fault (fault_proxy.h) at an exact byte of it: after the
// headers, inside a chunk, in the middle of a watch event's line.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cpscale::kube::testing {

struct Reply {
  int status = 200;
  // Content-Length framing unless `chunks` is set.
  std::string body{};
  // Chunked framing, one chunk each (a watch: one event per chunk, as kube-apiserver
  // flushes them).
  std::vector<std::string> chunks{};
  // Chunked: after the chunks, send the last chunk (the server ended the stream) or
  // hold the connection open, sending nothing more, until the client closes it.
  bool endStream = true;
  // Neither length nor chunks: the body ends when the connection closes (HTTP/1.0
  // style, "Connection: close"). With endStream false the connection is held open
  // after the body instead.
  bool closeDelimited = false;

  bool chunked() const { return !closeDelimited && (!chunks.empty() || !endStream); }
  std::string head() const;
  // The whole response as it goes on the wire.
  std::string render() const;
};

// A JSON object as a reply body.
Reply json(int status, const std::string& body);
// One watch event's line (with its newline): {"type": type, "object": {...}} with the
// object's name and resourceVersion.
std::string watchEvent(const std::string& type, const std::string& name, int resourceVersion);

struct ReceivedRequest {
  std::string method;
  std::string target;  // path and query
  std::string body;
};

class ScriptedServer {
 public:
  using Handler = std::function<Reply(const ReceivedRequest&)>;
  explicit ScriptedServer(Handler handler);
  // Closes every connection (held streams too) and joins the threads.
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  int port() const { return port_; }
  std::vector<ReceivedRequest> requests() const;
  // Requests read with this method whose target contains `targetPart`.
  int count(const std::string& method, const std::string& targetPart = "") const;

 private:
  void acceptLoop();
  void serve(int fd);
  Handler handler_;
  int listenFd_ = -1;
  int stopFd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<ReceivedRequest> requests_;
  std::list<std::thread> conns_;
};

}  // namespace cpscale::kube::testing
