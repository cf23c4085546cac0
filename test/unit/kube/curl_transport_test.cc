// CurlTransport against real loopback servers: nghttpd (TLS, HTTP/2) for protocol,
// TLS verification and connection reuse; a minimal HTTP/1.1 server for what goes on
// the wire (methods, bodies, the bearer token). Waiting here is on real sockets, so
// it is bounded by wall-clock deadlines rather than virtual time.
#include "sim/kube/curl_transport.h"
#include "test/support/loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "sim/kube/api_client.h"
#include "test/support/temp_dir.h"

extern char** environ;

namespace cpscale::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

// The loopback helpers the connection-fault tests share.
using cpscale::kube::testing::bindLoopback;
using cpscale::kube::testing::canConnect;
using cpscale::kube::testing::freePort;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool makeCert(const TempDir& dir, const std::string& name, const std::string& san) {
  std::string cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=" + name +
      " -addext subjectAltName=" + san + " -keyout " + (dir.path() / (name + ".key")).string() + " -out " +
      (dir.path() / (name + ".crt")).string() + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// Drives the transport until `n` handlers ran, or fails after a deadline.
void pollUntil(Transport& t, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "requests did not finish";
    t.poll(100ms);
  }
}

class Http2Server : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    if (!makeCert(*dir_, "server", "DNS:cpscale.test,IP:127.0.0.1") || !makeCert(*dir_, "other", "IP:127.0.0.1")) {
      skip_ = "openssl cannot create test certificates";
      return;
    }
    dir_->write("htdocs/api/v1/nodes/n1", R"({"kind":"Node","metadata":{"name":"n1"}})");
    dir_->write("htdocs/big", std::string(256 * 1024, 'x'));
    port_ = freePort();
    pid_ = spawnServer(port_);
    if (pid_ == 0) {
      skip_ = "nghttpd is not installed (Debian package nghttp2-server)";
      return;
    }
    if (!canConnect(port_)) skip_ = "nghttpd did not start";
  }
  // Starts nghttpd on `port` with the suite's documents and certificate and waits until
  // it accepts connections; 0 if it cannot be started.
  static pid_t spawnServer(int port) {
    std::string portStr = std::to_string(port);
    std::string docroot = (dir_->path() / "htdocs").string();
    std::string key = (dir_->path() / "server.key").string();
    std::string crt = (dir_->path() / "server.crt").string();
    std::vector<std::string> args{"nghttpd", "-a", "127.0.0.1", "-d", docroot, portStr, key, crt};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, "nghttpd", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return 0;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!canConnect(port) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
    return pid;
  }
  static void TearDownTestSuite() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = 0;
    }
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
  }
  static RestConfig config() {
    RestConfig rc;
    rc.server = "https://127.0.0.1:" + std::to_string(port_);
    rc.caPem = slurp((dir_->path() / "server.crt").string());
    return rc;
  }
  static HttpRequest get(std::string path) {
    HttpRequest r;
    r.method = "GET";
    r.path = std::move(path);
    return r;
  }

  static inline TempDir* dir_ = nullptr;
  static inline pid_t pid_ = 0;
  static inline int port_ = 0;
  static inline std::string skip_;
};

TEST_F(Http2Server, MultiplexesConcurrentRequestsOverOneConnection) {
  CurlTransport t(config());
  std::vector<HttpResponse> got;
  for (int batch = 0; batch < 2; ++batch) {
    for (int i = 0; i < 20; ++i)
      t.submit(get("/api/v1/nodes/n1"), [&](HttpResponse r) { got.push_back(std::move(r)); });
    EXPECT_EQ(t.inFlight(), 20u);
    pollUntil(t, [&] { return got.size() == 20u * (batch + 1); });
  }
  for (const auto& r : got) {
    ASSERT_EQ(r.outcome, TransportOutcome::kOk) << r.detail;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.httpVersion, "2");
    EXPECT_EQ(r.body, R"({"kind":"Node","metadata":{"name":"n1"}})");
  }
  EXPECT_EQ(t.stats().completed, 40u);
  EXPECT_EQ(t.stats().http2Responses, 40u);
  EXPECT_EQ(t.stats().connectionsOpened, 1u);  // reused across both batches
  EXPECT_EQ(t.inFlight(), 0u);
}

TEST_F(Http2Server, ApiClientEndToEnd) {
  CurlTransport t(config());
  engine::WallClock clock;
  ApiClient c(t, clock);
  ApiResult r = c.get(ResourceRef(gvr::kNodes).named("n1"));
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.body["metadata"]["name"], "n1");
  EXPECT_EQ(r.httpVersion, "2");
  EXPECT_TRUE(c.get(ResourceRef(gvr::kNodes).named("missing")).notFound());
}

TEST_F(Http2Server, WrongCaIsRejected) {
  RestConfig rc = config();
  rc.caPem = slurp((dir_->path() / "other.crt").string());
  CurlTransport t(rc);
  HttpResponse r = roundTrip(t, get("/api/v1/nodes/n1"));
  EXPECT_EQ(r.outcome, TransportOutcome::kTlsFailed);
  EXPECT_FALSE(r.detail.empty());
}

TEST_F(Http2Server, VerificationIsOnByDefault) {
  RestConfig rc = config();
  rc.caPem.clear();  // system roots do not know the self-signed server
  CurlTransport t(rc);
  EXPECT_EQ(roundTrip(t, get("/api/v1/nodes/n1")).outcome, TransportOutcome::kTlsFailed);
  rc.insecureSkipTlsVerify = true;
  CurlTransport insecure(rc);
  EXPECT_EQ(roundTrip(insecure, get("/api/v1/nodes/n1")).status, 200);
}

TEST_F(Http2Server, TlsServerNameIsWhatTheCertificateIsCheckedAgainst) {
  RestConfig rc = config();
  rc.tlsServerName = "cpscale.test";
  CurlTransport good(rc);
  HttpResponse r = roundTrip(good, get("/api/v1/nodes/n1"));
  EXPECT_EQ(r.status, 200) << r.detail;
  rc.tlsServerName = "wrong.test";
  CurlTransport bad(rc);
  EXPECT_EQ(roundTrip(bad, get("/api/v1/nodes/n1")).outcome, TransportOutcome::kTlsFailed);
}

TEST_F(Http2Server, StreamingBodyArrivesInChunks) {
  CurlTransport t(config());
  std::string streamed;
  int chunks = 0;
  HttpRequest req = get("/big");
  req.onBodyChunk = [&](std::string_view c) {
    streamed.append(c);
    ++chunks;
    return true;
  };
  HttpResponse r = roundTrip(t, std::move(req));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(streamed.size(), 256u * 1024);
  EXPECT_GT(chunks, 1);

  HttpRequest stop = get("/big");
  stop.onBodyChunk = [](std::string_view) { return false; };
  EXPECT_EQ(roundTrip(t, std::move(stop)).outcome, TransportOutcome::kAborted);
}

TEST_F(Http2Server, CancelRunsTheHandlerOnceWithAborted) {
  CurlTransport t(config());
  int calls = 0;
  TransportOutcome outcome = TransportOutcome::kOk;
  RequestId id = t.submit(get("/big"), [&](HttpResponse r) {
    ++calls;
    outcome = r.outcome;
  });
  t.cancel(id);
  t.poll(10ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(outcome, TransportOutcome::kAborted);
  EXPECT_EQ(t.inFlight(), 0u);
}

// Two TLS replicas of one server, verified against tls-server-name: each replica is
// reached at its own address with the certificate checked against that name, over
// HTTP/2, round-robin.
TEST_F(Http2Server, ReplicasAreEachVerifiedAgainstTheTlsServerName) {
  const int port2 = freePort();
  const pid_t second = spawnServer(port2);
  ASSERT_GT(second, 0);
  RestConfig rc = config();
  rc.tlsServerName = "cpscale.test";
  const std::string other = "https://127.0.0.1:" + std::to_string(port2);
  CurlTransport t(rc, {.servers = {rc.server, other}});
  std::vector<HttpResponse> got;
  for (int i = 0; i < 6; ++i) t.submit(get("/api/v1/nodes/n1"), [&](HttpResponse r) { got.push_back(std::move(r)); });
  pollUntil(t, [&] { return got.size() == 6u; });
  ::kill(second, SIGTERM);
  ::waitpid(second, nullptr, 0);
  for (const auto& r : got) {
    EXPECT_EQ(r.status, 200) << r.detail;
    EXPECT_EQ(r.httpVersion, "2");
  }
  EXPECT_EQ(t.stats().perServer.at(0).requests, 3u);
  EXPECT_EQ(t.stats().perServer.at(1).requests, 3u);
  EXPECT_EQ(t.stats().connectionsOpened, 2u);  // one per replica

  rc.tlsServerName = "wrong.test";
  CurlTransport bad(rc, {.servers = {rc.server}});
  EXPECT_EQ(roundTrip(bad, get("/api/v1/nodes/n1")).outcome, TransportOutcome::kTlsFailed);
}

TEST(CurlTransport, RefusedConnectionIsConnectFailed) {
  RestConfig rc;
  rc.server = "https://127.0.0.1:" + std::to_string(freePort());
  CurlTransport t(rc);
  HttpRequest req;
  req.method = "GET";
  req.path = "/api";
  HttpResponse r = roundTrip(t, req);
  EXPECT_EQ(r.outcome, TransportOutcome::kConnectFailed);
  EXPECT_THAT(r.detail, HasSubstr("127.0.0.1"));
}

// ---- what goes on the wire (plain HTTP/1.1) ---------------------------------------

// Answers every request on a kept-alive connection with 200 "{}" and records it.
class RecordingServer {
 public:
  RecordingServer() {
    fd_ = bindLoopback(16, port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~RecordingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> requests() {
    std::lock_guard<std::mutex> l(mu_);
    return requests_;
  }
  int connections() const { return connections_; }

 private:
  void serve() {
    while (true) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      std::string buf;
      char tmp[4096];
      while (true) {
        std::size_t end = buf.find("\r\n\r\n");
        if (end != std::string::npos) {
          std::size_t bodyLen = 0;
          std::string head = buf.substr(0, end);
          if (auto p = head.find("Content-Length: "); p != std::string::npos) bodyLen = std::stoul(head.substr(p + 16));
          if (buf.size() >= end + 4 + bodyLen) {
            {
              std::lock_guard<std::mutex> l(mu_);
              requests_.push_back(buf.substr(0, end + 4 + bodyLen));
            }
            buf.erase(0, end + 4 + bodyLen);
            const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
            if (::send(c, resp, sizeof resp - 1, MSG_NOSIGNAL) < 0) break;
            continue;
          }
        }
        ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
        if (n <= 0) break;
        buf.append(tmp, static_cast<std::size_t>(n));
      }
      ::close(c);
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::atomic<int> connections_{0};
};

TEST(CurlTransportWire, MethodsBodiesAndBearerTokenOverOneKeptAliveConnection) {
  RecordingServer server;
  RestConfig rc;
  rc.server = "http://127.0.0.1:" + std::to_string(server.port());
  rc.bearerToken = Secret("wire-token-123");
  CurlTransport t(rc);
  engine::WallClock clock;
  ApiClient c(t, clock);
  ResourceRef lease = ResourceRef(gvr::kLeases).in("kube-node-lease").named("n1");
  EXPECT_TRUE(c.update(lease, {{"spec", {{"holderIdentity", "n1"}}}}).ok());
  EXPECT_TRUE(c.patchStrategic(ResourceRef(gvr::kNodes).named("n1").sub("status"), {{"status", {}}}).ok());
  EXPECT_TRUE(c.remove(lease).ok());
  EXPECT_TRUE(c.create(lease.collection(), {{"metadata", {{"name", "n2"}}}}).ok());

  std::vector<std::string> reqs = server.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_THAT(reqs[0], HasSubstr("PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1 HTTP/1.1"));
  EXPECT_THAT(reqs[0], HasSubstr("Content-Type: application/json\r\n"));
  EXPECT_THAT(reqs[0], HasSubstr(R"({"spec":{"holderIdentity":"n1"}})"));
  EXPECT_THAT(reqs[1], HasSubstr("PATCH /api/v1/nodes/n1/status HTTP/1.1"));
  EXPECT_THAT(reqs[1], HasSubstr("Content-Type: application/strategic-merge-patch+json"));
  EXPECT_THAT(reqs[2], HasSubstr("DELETE /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1 HTTP/1.1"));
  EXPECT_THAT(reqs[2], Not(HasSubstr("Content-Type")));
  EXPECT_THAT(reqs[3], HasSubstr("POST /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases HTTP/1.1"));
  for (const auto& r : reqs) {
    EXPECT_THAT(r, HasSubstr("Authorization: Bearer wire-token-123\r\n"));
    EXPECT_THAT(r, HasSubstr("User-Agent: cpscale/"));
    EXPECT_THAT(r, HasSubstr("Accept: application/json\r\n"));
    EXPECT_THAT(r, Not(HasSubstr("Expect:")));
  }
  EXPECT_EQ(server.connections(), 1);
  EXPECT_EQ(t.stats().connectionsOpened, 1u);
}

TEST(CurlTransportWire, EachRequestCarriesItsOwnHeadersPastTheSharedLists) {
  // Header lists are built once per set of headers and shared, up to a bound; past it a
  // request gets its own. Either way every request must carry exactly its headers.
  RecordingServer server;
  RestConfig rc;
  rc.server = "http://127.0.0.1:" + std::to_string(server.port());
  CurlTransport t(rc);
  const int sets = 45;  // more than the transport keeps shared
  std::vector<int> order;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < sets; ++i) order.push_back(round == 0 ? i : sets - 1 - i);
  for (int i : order) {
    HttpRequest r;
    r.method = "GET";
    r.path = "/api/v1/namespaces/n" + std::to_string(i);
    r.headers.push_back({"X-Set", std::to_string(i)});
    if (i % 2 == 0) r.headers.push_back({"Accept", "application/json"});
    std::optional<HttpResponse> resp;
    t.submit(std::move(r), [&resp](HttpResponse x) { resp = std::move(x); });
    while (!resp) t.poll(std::chrono::milliseconds(50));
    ASSERT_TRUE(resp->ok());
  }
  const std::vector<std::string> reqs = server.requests();
  ASSERT_EQ(reqs.size(), order.size());
  for (std::size_t k = 0; k < reqs.size(); ++k) {
    const int i = order[k];
    EXPECT_THAT(reqs[k], HasSubstr("GET /api/v1/namespaces/n" + std::to_string(i) + " HTTP/1.1\r\n"));
    EXPECT_THAT(reqs[k], HasSubstr("\r\nX-Set: " + std::to_string(i) + "\r\n"));
    EXPECT_EQ(reqs[k].find("X-Set:"), reqs[k].rfind("X-Set:")) << "one X-Set header only";
    if (i % 2 == 0)
      EXPECT_THAT(reqs[k], HasSubstr("Accept: application/json\r\n"));
    else
      EXPECT_THAT(reqs[k], Not(HasSubstr("Accept: application/json")));
    EXPECT_THAT(reqs[k], Not(HasSubstr("Expect:")));
  }
}

// ---- streams on their own connections, replicas round-robin ---------------------

// A plain HTTP/1.1 server, one thread per connection: a request whose path has
// "watch=true" gets a chunked response with one event that never ends (until the
// server stops); any other request gets 200 "{}". Counts what each path got.
class WatchServer {
 public:
  WatchServer() {
    fd_ = bindLoopback(64, port_);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }
  ~WatchServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
    {
      std::lock_guard<std::mutex> l(mu_);
      for (int c : clients_) ::shutdown(c, SHUT_RDWR);
    }
    for (auto& t : conns_) t.join();
    for (int c : clients_) ::close(c);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int watches() const { return watches_; }
  int requests() const { return requests_; }
  int connections() const { return connections_; }

 private:
  void acceptLoop() {
    while (true) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      ++connections_;
      std::lock_guard<std::mutex> l(mu_);
      clients_.push_back(c);
      conns_.emplace_back([this, c] { serve(c); });
    }
  }
  void serve(int c) {
    std::string buf;
    char tmp[4096];
    while (true) {
      std::size_t end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buf.substr(0, end);
        buf.erase(0, end + 4);
        if (head.find("watch=true") != std::string::npos) {
          ++watches_;
          const char resp[] =
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
              "1b\r\n{\"type\":\"BOOKMARK\",\"object\"\r\n"
              "4\r\n:{}}\r\n"
              "1\r\n\n\r\n";
          ::send(c, resp, sizeof resp - 1, MSG_NOSIGNAL);
          // Held open: nothing more is read or sent on this connection.
          while (::recv(c, tmp, sizeof tmp, 0) > 0) {
          }
          return;
        }
        ++requests_;
        const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        if (::send(c, resp, sizeof resp - 1, MSG_NOSIGNAL) < 0) return;
        continue;
      }
      ssize_t n = ::recv(c, tmp, sizeof tmp, 0);
      if (n <= 0) return;
      buf.append(tmp, static_cast<std::size_t>(n));
    }
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> clients_;
  std::vector<std::thread> conns_;
  std::atomic<int> watches_{0}, requests_{0}, connections_{0};
};

HttpRequest plainGet(std::string path, bool stream = false) {
  HttpRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.stream = stream;
  return r;
}

// One request connection (HTTP/1.1: one request at a time on it) and three watches
// that never end: the watches open connections of their own, the requests still go
// through, and the watch events are delivered while the requests are served.
TEST(CurlTransportStreams, OpenStreamsNeverHoldTheRequestConnections) {
  WatchServer server;
  RestConfig rc;
  rc.server = server.url();
  CurlTransport t(rc, {.maxHostConnections = 1, .http2 = false});
  std::string events[3];
  int closed = 0;
  std::vector<RequestId> streams;
  for (int i = 0; i < 3; ++i) {
    HttpRequest w = plainGet("/api/v1/pods?watch=true", true);
    w.onBodyChunk = [&events, i](std::string_view c) {
      events[i].append(c);
      return true;
    };
    streams.push_back(t.submit(std::move(w), [&](HttpResponse) { ++closed; }));
  }
  int done = 0;
  for (int i = 0; i < 5; ++i) {
    t.submit(plainGet("/api/v1/nodes/n" + std::to_string(i)), [&](HttpResponse r) {
      EXPECT_EQ(r.status, 200) << r.detail;
      ++done;
    });
  }
  pollUntil(t, [&] {
    return done == 5 && events[0].ends_with("\n") && events[1].ends_with("\n") && events[2].ends_with("\n");
  });
  EXPECT_EQ(events[0], "{\"type\":\"BOOKMARK\",\"object\":{}}\n");
  EXPECT_EQ(t.streamsOpen(), 3u);
  EXPECT_EQ(t.inFlight(), 3u);
  EXPECT_EQ(closed, 0);
  EXPECT_EQ(server.watches(), 3);
  EXPECT_EQ(server.requests(), 5);
  EXPECT_EQ(server.connections(), 4);  // one per watch, one kept alive for the requests
  for (RequestId id : streams) t.cancel(id);
  EXPECT_EQ(closed, 3);
  EXPECT_EQ(t.streamsOpen(), 0u);
}

// Replicas behind one transport: requests round-robin, streams round-robin on their
// own, each replica on connections of its own, and the client-side counts agree.
TEST(CurlTransportReplicas, RequestsAndStreamsGoRoundRobin) {
  WatchServer a, b, c;
  RestConfig rc;
  rc.server = "http://127.0.0.1:1";  // ignored: the replicas are given
  CurlTransport t(rc, {.maxHostConnections = 1, .http2 = false, .servers = {a.url(), b.url(), c.url()}});
  EXPECT_EQ(t.server(), a.url() + ", " + b.url() + ", " + c.url());
  int done = 0;
  for (int i = 0; i < 9; ++i) t.submit(plainGet("/api"), [&](HttpResponse r) { done += r.status == 200; });
  for (int i = 0; i < 6; ++i) t.submit(plainGet("/api/v1/pods?watch=true", true), [](HttpResponse) {});
  pollUntil(t, [&] { return done == 9 && a.watches() + b.watches() + c.watches() == 6; });
  for (WatchServer* s : {&a, &b, &c}) {
    EXPECT_EQ(s->requests(), 3);
    EXPECT_EQ(s->watches(), 2);
  }
  ASSERT_EQ(t.stats().perServer.size(), 3u);
  for (const ServerCounts& sc : t.stats().perServer) {
    EXPECT_EQ(sc.requests, 3u) << sc.server;
    EXPECT_EQ(sc.streams, 2u) << sc.server;
  }
  EXPECT_EQ(t.stats().perServer[1].server, b.url());
}

// Callers that never block in poll (a loop of poll(0) with work in between) still
// see their requests and streams make progress.
TEST(CurlTransportStreams, ZeroWaitPollsMakeProgress) {
  WatchServer server;
  RestConfig rc;
  rc.server = server.url();
  CurlTransport t(rc, {.http2 = false});
  std::string events;
  HttpRequest w = plainGet("/api/v1/pods?watch=true", true);
  w.onBodyChunk = [&](std::string_view c) {
    events.append(c);
    return true;
  };
  t.submit(std::move(w), [](HttpResponse) {});
  int done = 0;
  for (int i = 0; i < 3; ++i) t.submit(plainGet("/api"), [&](HttpResponse r) { done += r.status == 200; });
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((done < 3 || !events.ends_with("\n")) && std::chrono::steady_clock::now() < deadline) {
    t.poll(0ms);
    std::this_thread::yield();
  }
  EXPECT_EQ(done, 3);
  EXPECT_EQ(events, "{\"type\":\"BOOKMARK\",\"object\":{}}\n");
}

// A wakeup from another thread ends a poll that would otherwise wait for a minute.
TEST(CurlTransportStreams, WakeupEndsAWaitingPoll) {
  WatchServer server;
  RestConfig rc;
  rc.server = server.url();
  CurlTransport t(rc, {.http2 = false});
  t.submit(plainGet("/api/v1/pods?watch=true", true), [](HttpResponse) {});
  pollUntil(t, [&] { return server.watches() == 1; });
  std::thread waker([&] {
    std::this_thread::sleep_for(50ms);
    t.wakeup();
  });
  auto started = std::chrono::steady_clock::now();
  t.poll(60s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  waker.join();
}

}  // namespace
}  // namespace cpscale::kube
