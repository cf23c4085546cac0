// Connections that break mid-exchange, against the real CurlTransport: a fault proxy
// (fault_proxy.h) in front of a scripted HTTP/1.1 server or of nghttpd (TLS, HTTP/2)
// resets a connection, closes it early or stalls it before a response, after its
// headers, mid-body, mid-chunk, and in the middle of a watch stream. Each case checks
// what the caller is told (the transport's outcome, never kOk with part of a body),
// what ApiClient does about it (a retry exactly where the retry policy allows one),
// what a watch delivers (the events before the cut, never half of one), and that
// nothing is left behind: no request in flight, no socket or descriptor kept, and the
// transport serves the next request. Waiting is on real sockets, bounded by deadlines.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/random.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/retry_policy.h"
#include "sim/kube/watch.h"
#include "test/unit/kube/fault_proxy.h"
#include "test/unit/kube/loopback.h"
#include "test/unit/kube/manual_scheduler.h"
#include "test/unit/kube/scripted_server.h"
#include "test/unit/kube/temp_dir.h"
#include "workloads/call_tracker.h"
#include "workloads/reflector.h"

namespace cpscale::kube {

// Outcomes by name in failure messages.
void PrintTo(TransportOutcome o, std::ostream* os) { *os << toString(o); }

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::Fault;
using testing::FaultKind;
using testing::FaultProxy;
using testing::ReceivedRequest;
using testing::Reply;
using testing::ScriptedServer;

// "Eventually" on a loaded two-core machine; outcomes themselves are asserted exactly.
constexpr auto kDeadline = 15s;
// The per-request timeout the stall cases run into, and how late past it the
// transport may notice.
constexpr auto kRequestTimeout = 500ms;
constexpr auto kTimeoutSlack = 3s;

const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";

std::string configMap(const std::string& name, std::size_t payload, int resourceVersion = 7) {
  return R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + std::to_string(resourceVersion) +
         R"("},"data":{"payload":")" + std::string(payload, 'p') + R"("}})";
}

std::string queryValue(const std::string& target, const std::string& key) {
  auto p = target.find(key + "=");
  if (p == std::string::npos) return "";
  p += key.size() + 1;
  return target.substr(p, target.find('&', p) - p);
}

// A watch from resourceVersion `rv`: six events, rv+1 .. rv+6, one per chunk, then
// the stream is held open (the server's timeout is far away).
Reply watchFrom(int rv) {
  Reply r;
  for (int i = 1; i <= 6; ++i) r.chunks.push_back(testing::watchEvent(i == 1 ? "ADDED" : "MODIFIED", "w", rv + i));
  r.endStream = false;
  return r;
}

// What the scripted server answers unless a test says otherwise.
Reply routes(const ReceivedRequest& r) {
  const std::string path = r.target.substr(0, r.target.find('?'));
  if (r.target.find("watch=true") != std::string::npos) {
    const std::string rv = queryValue(r.target, "resourceVersion");
    return watchFrom(rv.empty() ? 0 : std::stoi(rv));
  }
  if (path == kConfigMaps) {
    if (r.method == "POST") return testing::json(201, configMap("created", 8192));
    return testing::json(200, R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},)"
                              R"("items":[)" + configMap("a", 16, 9) + "," + configMap("b", 16, 10) + "]}");
  }
  if (path == kConfigMaps + "/chunked") {
    // An 8 KiB object in four chunks.
    const std::string body = configMap("chunked", 8192);
    Reply c;
    for (std::size_t at = 0; at < body.size(); at += body.size() / 4 + 1) c.chunks.push_back(body.substr(at, body.size() / 4 + 1));
    return c;
  }
  if (path == kConfigMaps + "/small") return testing::json(200, configMap("small", 16));
  if (path.rfind(kConfigMaps + "/", 0) == 0) return testing::json(200, configMap(path.substr(kConfigMaps.size() + 1), 8192));
  return testing::json(404, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404})");
}

// Creates a libcurl handle once, so what libcurl and OpenSSL keep open for the whole
// process is open before any test counts descriptors.
void warmUpLibcurl() {
  RestConfig rc;
  rc.server = "http://127.0.0.1:1";
  CurlTransport t(rc);
  HttpRequest r;
  r.method = "GET";
  r.path = "/";
  roundTrip(t, r);
}

HttpRequest get(std::string path, engine::Duration timeout = kRequestTimeout) {
  HttpRequest r;
  r.method = "GET";
  r.path = std::move(path);
  r.timeout = timeout;
  return r;
}

// Polls until `done` holds; false (and a failure) when the deadline passes first.
bool pollUntil(Transport& t, const std::function<bool()>& done, Clock::duration limit = kDeadline) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > deadline) {
      ADD_FAILURE() << "no outcome within " << std::chrono::duration<double>(limit).count() << " s";
      return false;
    }
    t.poll(20ms);
  }
  return true;
}

// One exchange, however it ends; a hang fails the test (and is cancelled).
HttpResponse exchange(Transport& t, HttpRequest req) {
  std::optional<HttpResponse> got;
  RequestId id = t.submit(std::move(req), [&](HttpResponse r) { got = std::move(r); });
  if (!pollUntil(t, [&] { return got.has_value(); })) t.cancel(id);
  return std::move(*got);
}

// Polls until the client holds exactly `n` sockets to `port` (the process's dead ones
// included) and says whether it got there: a leaked connection never goes away.
bool clientSocketsSettleAt(Transport& t, int port, int n) {
  const auto deadline = Clock::now() + kDeadline;
  while (testing::clientSockets(port) != n) {
    if (Clock::now() > deadline) return false;
    t.poll(10ms);
  }
  return true;
}

// ---- plain HTTP/1.1: a scripted server behind the proxy ----------------------------

class Http1Faults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { warmUpLibcurl(); }
  void SetUp() override {
    fdsBefore_ = testing::openFds();
    origin_ = std::make_unique<ScriptedServer>([this](const ReceivedRequest& r) {
      std::lock_guard<std::mutex> l(mu_);
      return handler_(r);
    });
    proxy_ = std::make_unique<FaultProxy>(origin_->port());
  }
  void TearDown() override {
    proxy_.reset();
    origin_.reset();
    // Every transport is gone by now, and so is every server socket: nothing the
    // test opened may still be open.
    EXPECT_EQ(testing::openFds(), fdsBefore_) << "file descriptors leaked";
  }
  void setHandler(ScriptedServer::Handler h) {
    std::lock_guard<std::mutex> l(mu_);
    handler_ = std::move(h);
  }
  std::unique_ptr<CurlTransport> transport(CurlTransportOptions o = {}) {
    RestConfig rc;
    rc.server = "http://127.0.0.1:" + std::to_string(proxy_->port());
    o.http2 = false;
    o.connectTimeout = 2s;
    o.defaultTimeout = 5s;
    return std::make_unique<CurlTransport>(rc, o);
  }
  // The transport has nothing in flight, keeps `keptAlive` connections and no dead
  // socket, and still works: a request after the fault gets its whole answer.
  void expectCleanAndReusable(CurlTransport& t, int keptAliveBefore) {
    EXPECT_EQ(t.inFlight(), 0u);
    EXPECT_EQ(t.streamsOpen(), 0u);
    EXPECT_TRUE(clientSocketsSettleAt(t, proxy_->port(), keptAliveBefore))
        << testing::clientSockets(proxy_->port()) << " client sockets, want " << keptAliveBefore;
    HttpResponse next = exchange(t, get(kConfigMaps + "/small"));
    EXPECT_EQ(next.outcome, TransportOutcome::kOk) << next.detail;
    EXPECT_EQ(next.status, 200);
    EXPECT_EQ(next.body, configMap("small", 16));
    EXPECT_EQ(t.inFlight(), 0u);
    EXPECT_TRUE(clientSocketsSettleAt(t, proxy_->port(), 1)) << "the next request's connection is kept alive alone";
  }

  std::mutex mu_;
  ScriptedServer::Handler handler_ = routes;
  std::unique_ptr<ScriptedServer> origin_;
  std::unique_ptr<FaultProxy> proxy_;
  int fdsBefore_ = 0;
};

// Where in a response a fault strikes.
enum class Where {
  kBeforeResponse,  // the request was sent; not a byte of the answer arrives
  kAfterHeaders,
  kMidBody,         // Content-Length framing
  kMidChunkSize,    // chunked framing: inside the first chunk's size line
  kMidChunkData,    // inside the first chunk's data
  kBetweenChunks,   // after two whole chunks
  kBeforeLastChunk  // the whole body, but not the last chunk that ends it
};

const char* toString(Where w) {
  switch (w) {
    case Where::kBeforeResponse: return "BeforeResponse";
    case Where::kAfterHeaders: return "AfterHeaders";
    case Where::kMidBody: return "MidBody";
    case Where::kMidChunkSize: return "MidChunkSize";
    case Where::kMidChunkData: return "MidChunkData";
    case Where::kBetweenChunks: return "BetweenChunks";
    case Where::kBeforeLastChunk: return "BeforeLastChunk";
  }
  return "?";
}

bool chunkedCase(Where w) { return w >= Where::kMidChunkSize; }

std::string chunkLine(const std::string& chunk) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  return size;
}

// The byte of `reply`'s wire form at which the fault strikes.
std::size_t offsetIn(const Reply& reply, Where w) {
  const std::size_t head = reply.head().size();
  switch (w) {
    case Where::kBeforeResponse: return 0;
    case Where::kAfterHeaders: return head;
    case Where::kMidBody: return head + reply.body.size() / 2;
    case Where::kMidChunkSize: return head + 1;
    case Where::kMidChunkData: return head + chunkLine(reply.chunks[0]).size() + reply.chunks[0].size() / 2;
    case Where::kBetweenChunks:
      return head + chunkLine(reply.chunks[0]).size() + reply.chunks[0].size() + 2 +
             chunkLine(reply.chunks[1]).size() + reply.chunks[1].size() + 2;
    case Where::kBeforeLastChunk: return reply.render().size() - std::string("0\r\n\r\n").size();
  }
  return 0;
}

struct GetCase {
  FaultKind kind;
  Where where;
  bool reused;  // on a kept-alive connection that already carried a request
};

std::string caseName(const ::testing::TestParamInfo<GetCase>& i) {
  std::string k = testing::toString(i.param.kind);
  k[0] = static_cast<char>(std::toupper(k[0]));
  return k + toString(i.param.where) + (i.param.reused ? "Reused" : "Fresh");
}

void PrintTo(const GetCase& c, std::ostream* os) {
  *os << testing::toString(c.kind) << " " << toString(c.where) << (c.reused ? " reused" : " fresh");
}

class GetFault : public Http1Faults, public ::testing::WithParamInterface<GetCase> {};

// A GET whose answer is reset, cut short or stalled: the transport reports it, never
// as kOk with part of the body; libcurl resends it by itself only when nothing of the
// answer arrived on a connection that had been idle (it may have been closed while
// idle), and then the answer is whole.
TEST_P(GetFault, IsReportedAndLeavesTheTransportClean) {
  const GetCase c = GetParam();
  const std::string path = kConfigMaps + (chunkedCase(c.where) ? "/chunked" : "/cm");
  const Reply reply = routes({"GET", path, ""});
  auto t = transport();
  if (c.reused) {
    ASSERT_EQ(exchange(*t, get(kConfigMaps + "/small")).status, 200);
  }
  proxy_->inject({c.kind, offsetIn(reply, c.where)});
  const auto started = Clock::now();
  HttpResponse r = exchange(*t, get(path));
  const auto took = Clock::now() - started;
  EXPECT_EQ(proxy_->struck(), 1);

  const bool resent = c.reused && c.where == Where::kBeforeResponse && c.kind != FaultKind::kStall;
  if (resent) {
    EXPECT_EQ(r.outcome, TransportOutcome::kOk) << r.detail;
    EXPECT_EQ(r.body, reply.chunked() ? configMap("chunked", 8192) : reply.body);
    EXPECT_EQ(origin_->count("GET", path), 2);
  } else {
    const TransportOutcome want = c.kind == FaultKind::kStall ? TransportOutcome::kTimeout : TransportOutcome::kProtocolError;
    EXPECT_EQ(r.outcome, want) << r.detail;
    EXPECT_FALSE(r.detail.empty());
    EXPECT_EQ(origin_->count("GET", path), 1);
  }
  if (c.kind == FaultKind::kStall) {
    EXPECT_GE(took, kRequestTimeout);
    EXPECT_LT(took, kRequestTimeout + kTimeoutSlack);
  }
  // The faulted connection is gone; the warm-up's was the one faulted, so none is left.
  expectCleanAndReusable(*t, resent ? 1 : 0);
}

std::vector<GetCase> getCases() {
  std::vector<GetCase> out;
  for (FaultKind k : {FaultKind::kReset, FaultKind::kClose, FaultKind::kStall}) {
    for (Where w : {Where::kBeforeResponse, Where::kAfterHeaders, Where::kMidBody, Where::kMidChunkSize,
                    Where::kMidChunkData, Where::kBetweenChunks, Where::kBeforeLastChunk}) {
      for (bool reused : {false, true}) out.push_back({k, w, reused});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Http1, GetFault, ::testing::ValuesIn(getCases()), caseName);

// ---- ApiClient: a retry exactly where the retry policy allows one ------------------

ApiClientOptions clientOptions(int maxAttempts = 3) {
  ApiClientOptions o;
  o.retry.maxAttempts = maxAttempts;
  o.retry.initialBackoff = 10ms;
  o.retry.maxBackoff = 50ms;
  o.requestTimeout = kRequestTimeout;
  o.pollSlice = 20ms;
  return o;
}

ApiRequest requestFor(Verb v) {
  const ResourceRef cm = ResourceRef(gvr::kConfigMaps).in("default").named("cm");
  const nlohmann::json obj = nlohmann::json::parse(configMap("cm", 16));
  switch (v) {
    case Verb::kGet: return ApiRequest::get(cm);
    case Verb::kCreate: return ApiRequest::create(cm.collection(), obj);
    case Verb::kUpdate: return ApiRequest::update(cm, obj);
    case Verb::kPatch: return ApiRequest::patch(cm, PatchType::kMerge, {{"data", {{"k", "v"}}}});
    case Verb::kDelete: return ApiRequest::remove(cm, DeleteOptions{.gracePeriodSeconds = 0});
    default: return ApiRequest::get(cm);
  }
}

enum class Cut { kBeforeResponse, kResetMidBody, kCloseAfterHeaders, kStallMidBody };

const char* toString(Cut c) {
  switch (c) {
    case Cut::kBeforeResponse: return "ResetBeforeResponse";
    case Cut::kResetMidBody: return "ResetMidBody";
    case Cut::kCloseAfterHeaders: return "CloseAfterHeaders";
    case Cut::kStallMidBody: return "StallMidBody";
  }
  return "?";
}

struct RetryCase {
  Verb verb;
  Cut cut;
};

std::string retryCaseName(const ::testing::TestParamInfo<RetryCase>& i) {
  std::string v(statsVerb(i.param.verb));
  for (std::size_t k = 1; k < v.size(); ++k) v[k] = static_cast<char>(std::tolower(v[k]));
  return v + toString(i.param.cut);
}

void PrintTo(const RetryCase& c, std::ostream* os) { *os << statsVerb(c.verb) << " " << toString(c.cut); }

class RetryOnFault : public Http1Faults, public ::testing::WithParamInterface<RetryCase> {};

// Each verb on a kept-alive connection whose answer breaks once. An idempotent verb
// (GET, PUT, DELETE) is sent again and succeeds; POST and PATCH may have taken effect,
// so they are sent exactly once and the failure is reported. Before any answer byte
// the resend of an idempotent verb is libcurl's (one attempt as ApiClient counts, two
// at the server); a non-idempotent one must not be resent by anybody.
TEST_P(RetryOnFault, RetriesExactlyWhereThePolicyAllows) {
  const RetryCase c = GetParam();
  const ApiRequest req = requestFor(c.verb);
  const std::string method(httpMethod(c.verb));
  const std::string path = requestPath(req.ref, {});
  const Reply reply = routes({method, path, ""});
  auto t = transport();
  engine::WallClock clock;
  ApiClient api(*t, clock, clientOptions());
  ASSERT_TRUE(api.get(ResourceRef(gvr::kConfigMaps).in("default").named("small")).ok());

  Fault f{FaultKind::kReset, 0};
  if (c.cut == Cut::kResetMidBody) f = {FaultKind::kReset, reply.head().size() + reply.body.size() / 2};
  if (c.cut == Cut::kCloseAfterHeaders) f = {FaultKind::kClose, reply.head().size()};
  if (c.cut == Cut::kStallMidBody) f = {FaultKind::kStall, reply.head().size() + reply.body.size() / 2};
  proxy_->inject(f);
  const auto started = Clock::now();
  ApiResult r = api.call(req);
  const auto took = Clock::now() - started;
  EXPECT_EQ(proxy_->struck(), 1);

  if (RetryPolicy::idempotent(method)) {
    EXPECT_TRUE(r.ok()) << r.describe();
    EXPECT_EQ(r.status, reply.status);
    EXPECT_EQ(r.body, nlohmann::json::parse(reply.body));
    EXPECT_EQ(origin_->count(method, path), 2) << "sent once more";
    EXPECT_EQ(r.attempts, c.cut == Cut::kBeforeResponse ? 1 : 2);
  } else {
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.outcome, c.cut == Cut::kStallMidBody ? TransportOutcome::kTimeout : TransportOutcome::kProtocolError)
        << r.describe();
    EXPECT_EQ(r.attempts, 1);
    EXPECT_EQ(origin_->count(method, path), 1) << "a request that may have taken effect was sent again";
  }
  if (c.cut == Cut::kStallMidBody) {
    EXPECT_GE(took, kRequestTimeout);
    EXPECT_LT(took, kRequestTimeout + kTimeoutSlack);
  }
  EXPECT_EQ(api.pending(), 0u);
  // The same call again, unharmed, succeeds on the same transport.
  EXPECT_TRUE(api.call(req).ok());
  expectCleanAndReusable(*t, 1);
}

std::vector<RetryCase> retryCases() {
  std::vector<RetryCase> out;
  for (Verb v : {Verb::kGet, Verb::kUpdate, Verb::kDelete, Verb::kCreate, Verb::kPatch}) {
    for (Cut c : {Cut::kBeforeResponse, Cut::kResetMidBody, Cut::kCloseAfterHeaders, Cut::kStallMidBody}) {
      out.push_back({v, c});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Http1, RetryOnFault, ::testing::ValuesIn(retryCases()), retryCaseName);

// Every attempt breaks: the client gives up after its attempts and says why.
TEST_F(Http1Faults, AGetThatKeepsBreakingFailsAfterItsAttempts) {
  const Reply reply = routes({"GET", kConfigMaps + "/cm", ""});
  auto t = transport();
  engine::WallClock clock;
  ApiClient api(*t, clock, clientOptions(3));
  for (int i = 0; i < 3; ++i) proxy_->inject({FaultKind::kReset, reply.head().size() + 100});
  ApiResult r = api.get(ResourceRef(gvr::kConfigMaps).in("default").named("cm"));
  EXPECT_EQ(r.outcome, TransportOutcome::kProtocolError) << r.describe();
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.status, 200);  // the headers of the last attempt had arrived
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(origin_->count("GET", kConfigMaps + "/cm"), 3);
  EXPECT_EQ(proxy_->struck(), 3);
  expectCleanAndReusable(*t, 0);
}

}  // namespace
}  // namespace cpscale::kube
