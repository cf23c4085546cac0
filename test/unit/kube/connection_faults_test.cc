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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/random.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/retry_policy.h"
#include "sim/kube/watch.h"
#include "test/support/fault_proxy.h"
#include "test/support/loopback.h"
#include "test/support/manual_scheduler.h"
#include "test/support/scripted_server.h"
#include "test/support/temp_dir.h"
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
                              R"("items":[)" +
                                  configMap("a", 16, 9) + "," + configMap("b", 16, 10) + "]}");
  }
  if (path == kConfigMaps + "/chunked") {
    // An 8 KiB object in four chunks.
    const std::string body = configMap("chunked", 8192);
    Reply c;
    for (std::size_t at = 0; at < body.size(); at += body.size() / 4 + 1)
      c.chunks.push_back(body.substr(at, body.size() / 4 + 1));
    return c;
  }
  if (path == kConfigMaps + "/small") return testing::json(200, configMap("small", 16));
  if (path.rfind(kConfigMaps + "/", 0) == 0)
    return testing::json(200, configMap(path.substr(kConfigMaps.size() + 1), 8192));
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
      return head + chunkLine(reply.chunks[0]).size() + reply.chunks[0].size() + 2 + chunkLine(reply.chunks[1]).size() +
             reply.chunks[1].size() + 2;
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
    const TransportOutcome want =
        c.kind == FaultKind::kStall ? TransportOutcome::kTimeout : TransportOutcome::kProtocolError;
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

// ---- watch streams ---------------------------------------------------------------

const ResourceRef kConfigMapCollection = ResourceRef(gvr::kConfigMaps).in("default");

// The event line a watch from `from` carries for resourceVersion `rv`, decoded.
nlohmann::json eventObject(int from, int rv) {
  return nlohmann::json::parse(testing::watchEvent(rv == from + 1 ? "ADDED" : "MODIFIED", "w", rv))["object"];
}

// The events are exactly those of resourceVersions `want`, each whole.
void expectEvents(const std::vector<WatchEvent>& got, int from, const std::vector<int>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].type, want[i] == from + 1 ? WatchEventType::kAdded : WatchEventType::kModified);
    EXPECT_EQ(got[i].object, eventObject(from, want[i])) << "event " << i;
  }
}

enum class InStream { kAfterEvents, kMidEventLine, kMidChunkSize };

const char* toString(InStream w) {
  switch (w) {
    case InStream::kAfterEvents: return "AfterThreeEvents";
    case InStream::kMidEventLine: return "MidFourthEventLine";
    case InStream::kMidChunkSize: return "MidFourthChunkSize";
  }
  return "?";
}

// Where in watchFrom(rv)'s wire form: after three whole events, or inside the fourth.
std::size_t offsetIn(const Reply& watch, InStream w) {
  std::size_t at = watch.head().size();
  for (int i = 0; i < 3; ++i) at += chunkLine(watch.chunks[i]).size() + watch.chunks[i].size() + 2;
  if (w == InStream::kMidChunkSize) return at + 1;
  if (w == InStream::kMidEventLine) return at + chunkLine(watch.chunks[3]).size() + watch.chunks[3].size() / 2;
  return at;
}

struct WatchCase {
  FaultKind kind;
  InStream where;
};

void PrintTo(const WatchCase& c, std::ostream* os) { *os << testing::toString(c.kind) << " " << toString(c.where); }

std::string watchCaseName(const ::testing::TestParamInfo<WatchCase>& i) {
  std::string k = testing::toString(i.param.kind);
  k[0] = static_cast<char>(std::toupper(k[0]));
  return k + toString(i.param.where);
}

class WatchFault : public Http1Faults, public ::testing::WithParamInterface<WatchCase> {};

// A watch whose connection is reset or closed after three events or inside the fourth:
// the three arrive whole, the fourth never does (not even half of it), and the watch
// ends once with an error the caller sees. The transport is clean afterwards and a
// new watch on it gets every event.
TEST_P(WatchFault, DeliversTheWholeEventsBeforeTheCutThenEndsInError) {
  const WatchCase c = GetParam();
  auto t = transport();
  engine::WallClock clock;
  ApiClient api(*t, clock, clientOptions());
  proxy_->inject({c.kind, offsetIn(watchFrom(10), c.where), "watch=true"});
  std::vector<WatchEvent> events;
  std::vector<ApiResult> closes;
  ListOptions from10;
  from10.resourceVersion = "10";
  api.watch(
      kConfigMapCollection, from10, [&](const WatchEvent& e) { events.push_back(e); },
      [&](const ApiResult& r) { closes.push_back(r); });
  ASSERT_TRUE(pollUntil(*t, [&] { return !closes.empty(); }));
  t->poll(50ms);  // a second close, if any, would come now
  EXPECT_EQ(proxy_->struck(), 1);
  expectEvents(events, 10, {11, 12, 13});
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].outcome, TransportOutcome::kProtocolError) << closes[0].describe();
  EXPECT_EQ(closes[0].status, 200);
  // The transport's report, not the decoder's: no half line was ever decoded.
  EXPECT_EQ(closes[0].detail.find("watch "), std::string::npos) << closes[0].detail;
  EXPECT_EQ(api.pending(), 0u);
  EXPECT_EQ(t->inFlight(), 0u);
  EXPECT_EQ(t->streamsOpen(), 0u);
  EXPECT_TRUE(clientSocketsSettleAt(*t, proxy_->port(), 0)) << testing::clientSockets(proxy_->port());

  events.clear();
  closes.clear();
  ListOptions from20;
  from20.resourceVersion = "20";
  CallId again = api.watch(
      kConfigMapCollection, from20, [&](const WatchEvent& e) { events.push_back(e); },
      [&](const ApiResult& r) { closes.push_back(r); });
  ASSERT_TRUE(pollUntil(*t, [&] { return events.size() >= 6u; }));
  expectEvents(events, 20, {21, 22, 23, 24, 25, 26});
  api.cancel(again);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].outcome, TransportOutcome::kAborted);
  expectCleanAndReusable(*t, 0);
}

std::vector<WatchCase> watchCases() {
  std::vector<WatchCase> out;
  for (FaultKind k : {FaultKind::kReset, FaultKind::kClose}) {
    for (InStream w : {InStream::kAfterEvents, InStream::kMidEventLine, InStream::kMidChunkSize}) out.push_back({k, w});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Http1, WatchFault, ::testing::ValuesIn(watchCases()), watchCaseName);

// A watch stream that stops mid-line ends at its timeout (ApiClient gives a watch the
// server's timeout plus a margin; here the stream's own is short): the transport
// reports the timeout, the decoder delivered the three whole events and holds the
// half line back.
TEST_F(Http1Faults, AStalledWatchStreamTimesOutWithTheWholeEventsDelivered) {
  auto t = transport();
  proxy_->inject({FaultKind::kStall, offsetIn(watchFrom(10), InStream::kMidEventLine), "watch=true"});
  WatchStreamDecoder decoder;
  std::vector<WatchEvent> events;
  HttpRequest w = get(kConfigMaps + "?resourceVersion=10&watch=true", kRequestTimeout);
  w.stream = true;
  w.onBodyChunk = [&](std::string_view chunk) {
    return decoder.feed(chunk, [&](const WatchEvent& e) { events.push_back(e); });
  };
  const auto started = Clock::now();
  HttpResponse r = exchange(*t, std::move(w));
  const auto took = Clock::now() - started;
  EXPECT_EQ(r.outcome, TransportOutcome::kTimeout) << r.detail;
  EXPECT_GE(took, kRequestTimeout);
  EXPECT_LT(took, kRequestTimeout + kTimeoutSlack);
  expectEvents(events, 10, {11, 12, 13});
  EXPECT_TRUE(decoder.error().empty()) << decoder.error();
  EXPECT_GT(decoder.bufferedBytes(), 0u) << "half of the fourth event is held back";
  EXPECT_EQ(t->streamsOpen(), 0u);
  expectCleanAndReusable(*t, 0);
}

// A watch body that ends with its connection (no length, no chunks) cannot tell a cut
// from an end: the transport says kOk, and the decoder is what refuses the half line
// the cut left, so the watch still ends in error after the three whole events.
TEST_F(Http1Faults, AWatchBodyEndedByACloseMidLineIsAMalformedStream) {
  setHandler([](const ReceivedRequest& r) {
    if (r.target.find("watch=true") == std::string::npos) return routes(r);
    Reply w;
    for (const auto& e : watchFrom(10).chunks) w.body += e;
    w.closeDelimited = true;
    w.endStream = false;
    return w;
  });
  Reply wire = watchFrom(10);
  std::size_t cut = offsetIn(wire, InStream::kMidEventLine) - wire.head().size();
  for (int i = 0; i < 4; ++i) cut -= chunkLine(wire.chunks[i]).size();
  for (int i = 0; i < 3; ++i) cut -= 2;  // the chunks' CRLFs
  Reply plain;
  plain.closeDelimited = true;
  proxy_->inject({FaultKind::kClose, plain.head().size() + cut, "watch=true"});

  auto t = transport();
  engine::WallClock clock;
  ApiClient api(*t, clock, clientOptions());
  std::vector<WatchEvent> events;
  std::vector<ApiResult> closes;
  ListOptions from10;
  from10.resourceVersion = "10";
  api.watch(
      kConfigMapCollection, from10, [&](const WatchEvent& e) { events.push_back(e); },
      [&](const ApiResult& r) { closes.push_back(r); });
  ASSERT_TRUE(pollUntil(*t, [&] { return !closes.empty(); }));
  EXPECT_EQ(proxy_->struck(), 1);
  expectEvents(events, 10, {11, 12, 13});
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].outcome, TransportOutcome::kProtocolError) << closes[0].describe();
  EXPECT_NE(closes[0].detail.find("watch stream line"), std::string::npos) << closes[0].detail;
  EXPECT_EQ(t->inFlight(), 0u);
  expectCleanAndReusable(*t, 0);
}

// A reflector whose watch is reset mid-line resumes from the last whole event it got
// (never from the half one), and when that resourceVersion has expired, lists again
// and watches from the new list. Retries and backoffs run in virtual time; the
// connections are real.
TEST_F(Http1Faults, AReflectorResumesFromTheLastWholeEventAndRelistsWhenExpired) {
  std::atomic<int> lists{0};
  setHandler([&lists](const ReceivedRequest& r) {
    const bool watch = r.target.find("watch=true") != std::string::npos;
    if (!watch && r.method == "GET" && r.target.rfind(kConfigMaps + "?", 0) == 0) {
      const std::string rv = ++lists == 1 ? "10" : "20";
      return testing::json(200, R"({"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":")" + rv +
                                    R"("},"items":[)" + configMap("a", 16, 9) + "]}");
    }
    if (watch && queryValue(r.target, "resourceVersion") == "12") {
      Reply gone;
      gone.chunks.push_back(R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",)J"
                            R"J("message":"too old resource version: 12 (15)","reason":"Expired","code":410}})J"
                            "\n");
      return gone;
    }
    return routes(r);
  });
  // The first watch (from 10) is reset in the middle of its third event's line.
  const Reply first = watchFrom(10);
  std::size_t cut = first.head().size();
  for (int i = 0; i < 2; ++i) cut += chunkLine(first.chunks[i]).size() + first.chunks[i].size() + 2;
  cut += chunkLine(first.chunks[2]).size() + first.chunks[2].size() / 2;
  proxy_->inject({FaultKind::kReset, cut, "watch=true"});

  auto t = transport();
  engine::VirtualClock clock;
  testing::ManualScheduler sched(clock);
  ApiClient api(*t, clock, sched, clientOptions());
  workloads::CallTracker calls(api);
  workloads::EventTracker timers(sched);
  engine::RandomStream rng(7);
  workloads::Reflector reflector(calls, timers, sched, rng,
                                 {.collection = kConfigMapCollection,
                                  .selector = {},
                                  .pageSize = 500,
                                  .timeout = 60s,
                                  .watchList = false,
                                  .keep = {}});
  std::vector<WatchEvent> events;
  reflector.onEvent([&](const WatchEvent& e) { events.push_back(e); });
  std::vector<std::pair<engine::TimePoint, engine::TimePoint>> outages;
  reflector.onRecovered([&](engine::TimePoint lost, engine::TimePoint back) { outages.emplace_back(lost, back); });
  reflector.start();
  const auto deadline = Clock::now() + kDeadline;
  while (events.size() < 8u && Clock::now() < deadline) {
    t->poll(10ms);
    sched.runNext();  // a due backoff or retry, at once: time is virtual
  }
  ASSERT_EQ(events.size(), 8u) << reflector.lastError();
  std::vector<WatchEvent> before(events.begin(), events.begin() + 2);
  std::vector<WatchEvent> after(events.begin() + 2, events.end());
  expectEvents(before, 10, {11, 12});
  expectEvents(after, 20, {21, 22, 23, 24, 25, 26});

  std::vector<std::string> watchedFrom;
  for (const auto& r : origin_->requests()) {
    if (r.target.find("watch=true") != std::string::npos)
      watchedFrom.push_back(queryValue(r.target, "resourceVersion"));
  }
  EXPECT_EQ(watchedFrom, (std::vector<std::string>{"10", "12", "20"}));
  const workloads::ReflectorCounts& n = reflector.counts();
  EXPECT_EQ(n.lists, 2u);
  EXPECT_EQ(n.relists, 1u);
  EXPECT_EQ(n.expired, 1u);
  EXPECT_EQ(n.watches, 3u);
  EXPECT_EQ(n.errors, 1u);  // the reset watch
  EXPECT_EQ(n.events, 8u);
  EXPECT_NE(reflector.lastError().find("protocol error"), std::string::npos) << reflector.lastError();
  // One outage, from the reset to the relist's end: the backoff before the resumed
  // watch, [0.8, 1.6) s, and the doubled one before the relist it was told to make
  // (410), [1.6, 3.2) s, in virtual time.
  ASSERT_EQ(outages.size(), 1u);
  const engine::Duration out = outages[0].second - outages[0].first;
  EXPECT_GE(out, 2400ms);
  EXPECT_LT(out, 4800ms);
  EXPECT_FALSE(reflector.lostSince().has_value());

  reflector.stop();
  EXPECT_EQ(api.pending(), 0u);
  EXPECT_EQ(t->inFlight(), 0u);
  EXPECT_EQ(t->streamsOpen(), 0u);
  // The LISTs' connection stays kept alive; the watches' are gone.
  expectCleanAndReusable(*t, 1);
}

// ---- TLS, HTTP/2: the proxy in front of nghttpd -----------------------------------
//
// The proxy cannot see inside TLS, so faults are placed by byte counts large enough to
// land mid-body; what the client sees of them are TLS and HTTP/2 errors, as with real
// cuts. The same outcomes are asserted: an error and never part of a body as kOk, a
// retry where the policy allows one, whole watch events only, nothing left behind.

constexpr std::size_t kBigPayload = 256 * 1024;
constexpr int kWatchEvents = 3000;  // ~0.5 MB of watch stream in one file

class Http2Faults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    warmUpLibcurl();
    docroot_ = new testing::TempDir();
    docroot_->write("htdocs" + kConfigMaps + "/small", configMap("small", 16));
    docroot_->write("htdocs" + kConfigMaps + "/big", configMap("big", kBigPayload));
    std::string events;
    for (int rv = 1; rv <= kWatchEvents; ++rv) events += testing::watchEvent(rv == 1 ? "ADDED" : "MODIFIED", "w", rv);
    // nghttpd ignores the query: a watch of this collection gets the file.
    docroot_->write("htdocs/api/v1/namespaces/watched/configmaps", events);
    // nghttpd answers any method with the file: what a create in "posted" gets back.
    docroot_->write("htdocs/api/v1/namespaces/posted/configmaps", configMap("small", 16));
    server_ = new testing::Nghttpd(docroot_->path() / "htdocs");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete docroot_;
    docroot_ = nullptr;
  }
  void SetUp() override {
    if (!server_->ok()) GTEST_SKIP() << server_->why();
    fdsBefore_ = testing::openFds();
    proxy_ = std::make_unique<FaultProxy>(server_->port());
  }
  void TearDown() override {
    if (!server_->ok()) return;
    proxy_.reset();
    EXPECT_EQ(testing::openFds(), fdsBefore_) << "file descriptors leaked";
  }
  std::unique_ptr<CurlTransport> transport() {
    RestConfig rc;
    rc.server = "https://127.0.0.1:" + std::to_string(proxy_->port());
    rc.caPem = server_->caPem();
    CurlTransportOptions o;
    o.connectTimeout = 2s;
    o.defaultTimeout = 5s;
    return std::make_unique<CurlTransport>(rc, o);
  }
  // As Http1Faults::expectCleanAndReusable, with what HTTP/2 changes: libcurl keeps a
  // connection that died under a multiplexed transfer in its cache, its socket open,
  // until the next transfer on that multi handle looks for a connection and closes it,
  // and it may open new connections to resend the requests a reset left without an
  // answer. So the sockets are counted after a new request and, when a stream's
  // connection died, a new stream; and what is counted is that the client holds no
  // socket but those of connections the proxy still relays (none that is dead).
  void expectCleanAndReusable(CurlTransport& t, bool streamDied = false) {
    EXPECT_EQ(t.inFlight(), 0u);
    EXPECT_EQ(t.streamsOpen(), 0u);
    HttpResponse next = exchange(t, get(kConfigMaps + "/small"));
    EXPECT_EQ(next.outcome, TransportOutcome::kOk) << next.detail;
    EXPECT_EQ(next.status, 200);
    EXPECT_EQ(next.httpVersion, "2");
    EXPECT_EQ(next.body, configMap("small", 16));
    if (streamDied) {
      HttpRequest s = get(kConfigMaps + "/small");
      s.stream = true;
      HttpResponse stream = exchange(t, s);
      EXPECT_EQ(stream.outcome, TransportOutcome::kOk) << stream.detail;
      EXPECT_EQ(stream.body, configMap("small", 16));
    }
    EXPECT_EQ(t.inFlight(), 0u);
    const auto deadline = Clock::now() + kDeadline;
    while (testing::clientSockets(proxy_->port()) != proxy_->relaying() && Clock::now() < deadline) t.poll(10ms);
    EXPECT_EQ(testing::clientSockets(proxy_->port()), proxy_->relaying()) << "the client holds dead sockets";
    EXPECT_GE(proxy_->relaying(), streamDied ? 2 : 1);
  }

  static inline testing::TempDir* docroot_ = nullptr;
  static inline testing::Nghttpd* server_ = nullptr;
  std::unique_ptr<FaultProxy> proxy_;
  int fdsBefore_ = 0;
};

enum class TlsWhere {
  kHandshake,  // the first bytes of a new connection: its TLS handshake
  kMidBody     // 64 KiB into the answer to a GET of 256 KiB, on a kept-alive connection
};

struct TlsCase {
  FaultKind kind;
  TlsWhere where;
};

void PrintTo(const TlsCase& c, std::ostream* os) {
  *os << testing::toString(c.kind) << (c.where == TlsWhere::kHandshake ? " handshake" : " mid-body");
}

std::string tlsCaseName(const ::testing::TestParamInfo<TlsCase>& i) {
  std::string k = testing::toString(i.param.kind);
  k[0] = static_cast<char>(std::toupper(k[0]));
  return k + (i.param.where == TlsWhere::kHandshake ? "Handshake" : "MidBody");
}

class TlsGetFault : public Http2Faults, public ::testing::WithParamInterface<TlsCase> {};

// A cut during the handshake is a connection that could not be made (the request never
// left); a cut mid-body is a protocol error; a stall is a timeout. Never kOk with part
// of the body, and the transport is clean and usable afterwards.
TEST_P(TlsGetFault, IsReportedAndLeavesTheTransportClean) {
  const TlsCase c = GetParam();
  auto t = transport();
  if (c.where == TlsWhere::kMidBody) {
    HttpResponse warm = exchange(*t, get(kConfigMaps + "/small"));
    ASSERT_EQ(warm.status, 200) << warm.detail;
    ASSERT_EQ(warm.httpVersion, "2");
  }
  proxy_->inject({c.kind, c.where == TlsWhere::kHandshake ? std::size_t{0} : std::size_t{64 * 1024}});
  const auto started = Clock::now();
  HttpResponse r = exchange(*t, get(kConfigMaps + "/big"));
  const auto took = Clock::now() - started;
  EXPECT_EQ(proxy_->struck(), 1);
  TransportOutcome want = TransportOutcome::kProtocolError;
  if (c.kind == FaultKind::kStall) {
    want = TransportOutcome::kTimeout;
    EXPECT_GE(took, kRequestTimeout);
    EXPECT_LT(took, kRequestTimeout + kTimeoutSlack);
  } else if (c.where == TlsWhere::kHandshake) {
    want = TransportOutcome::kConnectFailed;
  }
  EXPECT_EQ(r.outcome, want) << r.detail;
  EXPECT_FALSE(r.detail.empty());
  EXPECT_LT(r.body.size(), configMap("big", kBigPayload).size());
  expectCleanAndReusable(*t);
}

INSTANTIATE_TEST_SUITE_P(Tls, TlsGetFault,
                         ::testing::Values(TlsCase{FaultKind::kReset, TlsWhere::kHandshake},
                                           TlsCase{FaultKind::kClose, TlsWhere::kHandshake},
                                           TlsCase{FaultKind::kStall, TlsWhere::kHandshake},
                                           TlsCase{FaultKind::kReset, TlsWhere::kMidBody},
                                           TlsCase{FaultKind::kClose, TlsWhere::kMidBody},
                                           TlsCase{FaultKind::kStall, TlsWhere::kMidBody}),
                         tlsCaseName);

// A new connection cut during its TLS handshake carried nothing: ApiClient sends any
// verb again, as after a refused connection.
TEST_F(Http2Faults, ApiClientRetriesAnyVerbWhoseHandshakeWasCut) {
  const ResourceRef small = ResourceRef(gvr::kConfigMaps).in("default").named("small");
  const ResourceRef posted = ResourceRef(gvr::kConfigMaps).in("posted");
  for (FaultKind k : {FaultKind::kReset, FaultKind::kClose}) {
    for (Verb v : {Verb::kGet, Verb::kCreate}) {
      SCOPED_TRACE(std::string(testing::toString(k)) + " " + std::string(statsVerb(v)));
      auto t = transport();
      engine::WallClock clock;
      ApiClient api(*t, clock, clientOptions());
      const int struck = proxy_->struck();
      proxy_->inject({k, 0});
      ApiResult r = api.call(v == Verb::kGet ? ApiRequest::get(small) : ApiRequest::create(posted, {{"a", 1}}));
      EXPECT_TRUE(r.ok()) << r.describe();
      EXPECT_EQ(r.attempts, 2);
      EXPECT_EQ(r.body, nlohmann::json::parse(configMap("small", 16)));
      EXPECT_EQ(proxy_->struck(), struck + 1);
      expectCleanAndReusable(*t);
    }
  }
}

// Over TLS and HTTP/2, ApiClient retries a GET cut mid-body; a POST or PATCH cut after
// it went out on a kept-alive connection is reported, not sent again.
TEST_F(Http2Faults, ApiClientRetriesAGetCutMidBodyButNotAPostOrPatchCutAfterSending) {
  auto t = transport();
  engine::WallClock clock;
  ApiClient api(*t, clock, clientOptions());
  const ResourceRef big = ResourceRef(gvr::kConfigMaps).in("default").named("big");
  const ResourceRef small = ResourceRef(gvr::kConfigMaps).in("default").named("small");

  // A GET cut mid-body on the kept-alive connection: sent again on a new one.
  ASSERT_TRUE(api.call(ApiRequest::get(small)).ok());
  proxy_->inject({FaultKind::kReset, 64 * 1024});
  ApiResult got = api.call(ApiRequest::get(big));
  EXPECT_TRUE(got.ok()) << got.describe();
  EXPECT_EQ(got.attempts, 2);
  EXPECT_EQ(got.body["metadata"]["name"], "big");
  EXPECT_EQ(got.body["data"]["payload"].get<std::string>().size(), kBigPayload);
  EXPECT_EQ(got.httpVersion, "2");

  // POST and PATCH reset after they went out on the kept-alive connection.
  for (Verb v : {Verb::kCreate, Verb::kPatch}) {
    const int struck = proxy_->struck();
    proxy_->inject({FaultKind::kReset, 0});
    ApiResult r =
        api.call(v == Verb::kCreate ? ApiRequest::create(ResourceRef(gvr::kConfigMaps).in("posted"), {{"a", 1}})
                                    : ApiRequest::patch(small, PatchType::kMerge, {{"a", 1}}));
    EXPECT_EQ(r.outcome, TransportOutcome::kProtocolError) << r.describe();
    EXPECT_EQ(r.attempts, 1);
    EXPECT_NE(r.detail.find("is not sent again"), std::string::npos) << r.detail;
    EXPECT_EQ(proxy_->struck(), struck + 1);
    ASSERT_TRUE(api.call(ApiRequest::get(small)).ok());  // a kept-alive connection again
  }
  EXPECT_EQ(api.pending(), 0u);
  expectCleanAndReusable(*t);
}

// Eight GETs multiplexed on one connection when it is reset: each one ends, with its
// whole body (libcurl resends on a new connection those that had no answer byte yet)
// or with an error, never kOk with part of a body, and the transport goes on.
TEST_F(Http2Faults, MultiplexedRequestsAllEndWhenTheirConnectionIsReset) {
  auto t = transport();
  ASSERT_EQ(exchange(*t, get(kConfigMaps + "/small")).httpVersion, "2");
  const std::string whole = configMap("big", kBigPayload);
  proxy_->inject({FaultKind::kReset, 512 * 1024});
  std::vector<HttpResponse> got;
  for (int i = 0; i < 8; ++i)
    t->submit(get(kConfigMaps + "/big", 5s), [&](HttpResponse r) { got.push_back(std::move(r)); });
  ASSERT_TRUE(pollUntil(*t, [&] { return got.size() == 8u; }));
  EXPECT_EQ(proxy_->struck(), 1);
  for (const auto& r : got) {
    if (r.ok()) {
      EXPECT_EQ(r.body, whole) << "kOk with part of a body";
    } else {
      // Rarely, a request libcurl had queued for the dead connection ends only at its
      // own timeout: bounded, and reported.
      EXPECT_TRUE(r.outcome == TransportOutcome::kProtocolError || r.outcome == TransportOutcome::kTimeout)
          << toString(r.outcome) << ": " << r.detail;
      EXPECT_LT(r.body.size(), whole.size());
    }
  }
  expectCleanAndReusable(*t);
}

// The events of a watch whose TLS connection is cut (somewhere in its 0.5 MB) arrive
// whole and in order up to the cut, and the watch ends once, in error.
TEST_F(Http2Faults, AWatchCutMidStreamDeliversOnlyWholeEvents) {
  const ResourceRef watched = ResourceRef(gvr::kConfigMaps).in("watched");
  for (FaultKind k : {FaultKind::kReset, FaultKind::kClose}) {
    SCOPED_TRACE(testing::toString(k));
    auto t = transport();
    engine::WallClock clock;
    ApiClient api(*t, clock, clientOptions());
    proxy_->inject({k, 200 * 1024});
    std::vector<WatchEvent> events;
    std::vector<ApiResult> closes;
    api.watch(
        watched, {}, [&](const WatchEvent& e) { events.push_back(e); },
        [&](const ApiResult& r) { closes.push_back(r); });
    ASSERT_TRUE(pollUntil(*t, [&] { return !closes.empty(); }));
    ASSERT_EQ(closes.size(), 1u);
    EXPECT_EQ(closes[0].outcome, TransportOutcome::kProtocolError) << closes[0].describe();
    EXPECT_EQ(closes[0].detail.find("watch "), std::string::npos) << closes[0].detail;
    ASSERT_GT(events.size(), 0u);
    ASSERT_LT(events.size(), static_cast<std::size_t>(kWatchEvents));
    std::vector<int> want;
    for (int rv = 1; rv <= static_cast<int>(events.size()); ++rv) want.push_back(rv);
    expectEvents(events, 0, want);
    EXPECT_EQ(t->streamsOpen(), 0u);
    expectCleanAndReusable(*t, true);
  }
}

// A watch stream over TLS that stalls ends at its timeout with whole events only.
TEST_F(Http2Faults, AStalledWatchStreamTimesOutWithWholeEventsOnly) {
  auto t = transport();
  proxy_->inject({FaultKind::kStall, 200 * 1024});
  WatchStreamDecoder decoder;
  std::vector<WatchEvent> events;
  HttpRequest w = get("/api/v1/namespaces/watched/configmaps?watch=true", kRequestTimeout);
  w.stream = true;
  w.onBodyChunk = [&](std::string_view chunk) {
    return decoder.feed(chunk, [&](const WatchEvent& e) { events.push_back(e); });
  };
  const auto started = Clock::now();
  HttpResponse r = exchange(*t, std::move(w));
  const auto took = Clock::now() - started;
  EXPECT_EQ(r.outcome, TransportOutcome::kTimeout) << r.detail;
  EXPECT_GE(took, kRequestTimeout);
  EXPECT_LT(took, kRequestTimeout + kTimeoutSlack);
  EXPECT_TRUE(decoder.error().empty()) << decoder.error();
  ASSERT_GT(events.size(), 0u);
  ASSERT_LT(events.size(), static_cast<std::size_t>(kWatchEvents));
  std::vector<int> want;
  for (int rv = 1; rv <= static_cast<int>(events.size()); ++rv) want.push_back(rv);
  expectEvents(events, 0, want);
  expectCleanAndReusable(*t, true);
}

}  // namespace
}  // namespace cpscale::kube
