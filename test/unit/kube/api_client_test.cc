#include "sim/kube/api_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test/support/fake_transport.h"
#include "test/support/manual_scheduler.h"

namespace cpscale::kube {
namespace {

using namespace std::chrono_literals;
using engine::Duration;
using engine::TimePoint;
using ::testing::HasSubstr;
using testing::ManualScheduler;
using ::testing::StartsWith;

std::string headerOf(const HttpRequest& r, std::string_view name) {
  for (const auto& h : r.headers) {
    if (h.name == name) return h.value;
  }
  return "<absent>";
}

HttpResponse status(int code, std::string body = {}, std::vector<Header> headers = {}) {
  HttpResponse r;
  r.status = code;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

HttpResponse failure(TransportOutcome o) {
  HttpResponse r;
  r.outcome = o;
  r.detail = "injected";
  return r;
}

const std::string kConflictBody =
    R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Operation cannot be fulfilled on leases.coordination.k8s.io \"n1\": the object has been modified","reason":"Conflict","code":409})";

const ResourceRef kLease = ResourceRef(gvr::kLeases).in("kube-node-lease").named("n1");

RetryConfig noJitter() {
  RetryConfig c;
  c.jitter = 0;
  c.initialBackoff = 100ms;
  c.maxBackoff = 1s;
  c.maxAttempts = 4;
  return c;
}

// ---- request building -----------------------------------------------------------

TEST(ApiClientRequest, CreateSendsJsonToTheCollection) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(201, R"({"metadata":{"name":"n1","resourceVersion":"7"}})");
  ApiClient c(t, clock);
  ApiResult r = c.create(kLease.collection(), {{"metadata", {{"name", "n1"}}}}, WriteOptions{"cpscale", false});
  ASSERT_TRUE(r.ok()) << r.describe();
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body["metadata"]["resourceVersion"], "7");
  ASSERT_EQ(t.requests().size(), 1u);
  const HttpRequest& req = t.requests()[0].request;
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?fieldManager=cpscale");
  EXPECT_EQ(headerOf(req, "Content-Type"), "application/json");
  EXPECT_EQ(headerOf(req, "Accept"), "application/json");
  EXPECT_THAT(headerOf(req, "User-Agent"), StartsWith("cpscale/"));
  EXPECT_EQ(nlohmann::json::parse(req.body)["metadata"]["name"], "n1");
  EXPECT_EQ(req.statsResource, "leases");
  EXPECT_EQ(req.statsVerb, "POST");
}

TEST(ApiClientRequest, VerbsMethodsAndStatsLabels) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.setHandler([](const HttpRequest&) { return status(200, "{}"); });
  ApiClient c(t, clock);
  ResourceRef node = ResourceRef(gvr::kNodes).named("n1");
  c.get(node, "0");
  c.update(kLease, {{"spec", {}}});
  c.patchMerge(node.sub("status"), {{"status", {}}});
  c.patchStrategic(node, {{"spec", {}}});
  c.patchJson(node, nlohmann::json::array({{{"op", "add"}, {"path", "/x"}, {"value", 1}}}));
  c.remove(node);
  c.list(ResourceRef(gvr::kPods), ListOptions{.labelSelector = "a=b"});
  c.deleteCollection(ResourceRef(gvr::kPods).in("ns"), ListOptions{.labelSelector = "cpscale.io/run=r1"});

  struct Want {
    std::string method, path, verb, resource, contentType;
  };
  std::vector<Want> want{
      {"GET", "/api/v1/nodes/n1?resourceVersion=0", "GET", "nodes", "<absent>"},
      {"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "PUT", "leases", "application/json"},
      {"PATCH", "/api/v1/nodes/n1/status", "PATCH", "nodes/status", "application/merge-patch+json"},
      {"PATCH", "/api/v1/nodes/n1", "PATCH", "nodes", "application/strategic-merge-patch+json"},
      {"PATCH", "/api/v1/nodes/n1", "PATCH", "nodes", "application/json-patch+json"},
      {"DELETE", "/api/v1/nodes/n1", "DELETE", "nodes", "<absent>"},
      {"GET", "/api/v1/pods?labelSelector=a%3Db", "LIST", "pods", "<absent>"},
      {"DELETE", "/api/v1/namespaces/ns/pods?labelSelector=cpscale.io%2Frun%3Dr1", "DELETECOLLECTION", "pods",
       "<absent>"},
  };
  ASSERT_EQ(t.requests().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const HttpRequest& r = t.requests()[i].request;
    EXPECT_EQ(r.method, want[i].method) << i;
    EXPECT_EQ(r.path, want[i].path) << i;
    EXPECT_EQ(r.statsVerb, want[i].verb) << i;
    EXPECT_EQ(r.statsResource, want[i].resource) << i;
    EXPECT_EQ(headerOf(r, "Content-Type"), want[i].contentType) << i;
  }
}

TEST(ApiClientRequest, DeleteOptionsGoInTheBody) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(200, "{}");
  ApiClient c(t, clock);
  DeleteOptions o;
  o.gracePeriodSeconds = 0;
  o.propagationPolicy = "Background";
  o.preconditionResourceVersion = "42";
  c.remove(ResourceRef(gvr::kPods).in("ns").named("p"), o);
  const HttpRequest& r = t.requests().at(0).request;
  EXPECT_EQ(r.method, "DELETE");
  auto body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["kind"], "DeleteOptions");
  EXPECT_EQ(body["gracePeriodSeconds"], 0);
  EXPECT_EQ(body["propagationPolicy"], "Background");
  EXPECT_EQ(body["preconditions"]["resourceVersion"], "42");
  EXPECT_EQ(headerOf(r, "Content-Type"), "application/json");
}

// ---- results ----------------------------------------------------------------------

TEST(ApiClientResult, ConflictIsReturnedNotRetried) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.setHandler([](const HttpRequest&) { return status(409, kConflictBody); });
  ApiClient c(t, clock, ApiClientOptions{.retry = noJitter()});
  ApiResult r = c.update(kLease, {{"metadata", {{"resourceVersion", "1"}}}});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.conflict());
  EXPECT_FALSE(r.alreadyExists());
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(t.requests().size(), 1u);
  EXPECT_EQ(r.apiStatus.reason, "Conflict");
  EXPECT_THAT(r.apiStatus.message, HasSubstr("the object has been modified"));
  EXPECT_THAT(r.describe(), HasSubstr("PUT leases kube-node-lease/n1: 409 Conflict"));
  EXPECT_EQ(clock.now(), TimePoint{});
}

TEST(ApiClientResult, AlreadyExistsIsNotAConflict) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(409, R"({"kind":"Status","reason":"AlreadyExists","code":409})");
  ApiClient c(t, clock);
  ApiResult r = c.create(ResourceRef(gvr::kNamespaces), {{"metadata", {{"name", "x"}}}});
  EXPECT_TRUE(r.alreadyExists());
  EXPECT_FALSE(r.conflict());
}

TEST(ApiClientResult, NonJsonBodyIsKeptRaw) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(404, "404 page not found");
  ApiClient c(t, clock);
  ApiResult r = c.get(ResourceRef(gvr::kNodes).named("n"));
  EXPECT_TRUE(r.notFound());
  EXPECT_TRUE(r.body.is_null());
  EXPECT_EQ(r.raw, "404 page not found");
}

TEST(ApiClientResult, ACallCanLeaveItsSuccessBodyUndecoded) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(200, R"({"a":1})");
  t.enqueue(409, kConflictBody);
  ApiClient c(t, clock);
  ApiRequest get = ApiRequest::get(kLease);
  get.decode = Decode::kNone;
  ApiResult ok = c.call(get);
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(ok.body.is_null());
  EXPECT_TRUE(ok.what.empty());  // nothing to explain
  ApiResult conflict = c.call(get);
  EXPECT_EQ(conflict.apiStatus.reason, "Conflict");  // errors are always decoded
  EXPECT_EQ(conflict.what, "GET leases kube-node-lease/n1");
}

TEST(ApiClientResult, MetadataDecodingKeepsTheIdentityAndStopsAtMetadatasEnd) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  // What follows metadata is not even JSON: the decoder never reads that far.
  t.enqueue(200, R"({"kind":"Lease","metadata":{"name":"node-1","namespace":"kube-node-lease","uid":"u-1",)"
                 R"("resourceVersion":"42","labels":{"resourceVersion":"no"},"managedFields":[{"manager":"kubelet"}]},)"
                 R"("spec":{"renewTime": this is never parsed)");
  ApiClient c(t, clock);
  ApiRequest put = ApiRequest::update(kLease, {{"spec", {}}});
  put.decode = Decode::kMetadata;
  ApiResult r = c.call(put);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.body,
            nlohmann::json::parse(
                R"({"metadata":{"name":"node-1","namespace":"kube-node-lease","uid":"u-1","resourceVersion":"42"}})"));
}

TEST(ApiClientDecode, ResourceVersionOnlyFillsTheFieldAndLeavesTheBodyNull) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(200, R"({"kind":"Lease","metadata":{"name":"node-1","namespace":"kube-node-lease","uid":"u-1",)"
                 R"("resourceVersion":"42","labels":{"resourceVersion":"no"}},"spec":{"renewTime": never parsed)");
  t.enqueue(200, R"({"kind":"Lease","metadata":{"name":"node-1"}})");
  ApiClient c(t, clock);
  ApiRequest put = ApiRequest::update(kLease, {{"spec", {}}});
  put.decode = Decode::kResourceVersion;
  ApiResult r = c.call(put);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.resourceVersion, "42");
  EXPECT_TRUE(r.body.is_null());
  r = c.call(put);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.resourceVersion, "");  // none in the answer
}

TEST(DecodeMetadata, OnlyTheTopLevelMetadataCounts) {
  // A nested "metadata" (a list item's, a template's) is not the object's.
  EXPECT_EQ(decodeMetadata(R"({"spec":{"template":{"metadata":{"name":"inner"}}},"metadata":{"name":"outer"}})"),
            nlohmann::json::parse(R"({"metadata":{"name":"outer"}})"));
  EXPECT_EQ(decodeMetadata(R"({"metadata":{"name":"n","generation":3,"resourceVersion":"7"}})"),
            nlohmann::json::parse(R"({"metadata":{"name":"n","resourceVersion":"7"}})"));
  EXPECT_TRUE(decodeMetadata(R"({"kind":"Status"})").is_null());
  EXPECT_TRUE(decodeMetadata(R"({"metadata":{"name":"cut short)").is_null());
  EXPECT_TRUE(decodeMetadata("404 page not found").is_null());
}

TEST(DecodeMetadata, EscapesAndNonAsciiAreDecodedAsJson) {
  // The one-pass scan leaves these to the SAX parse: the values come back unescaped.
  EXPECT_EQ(decodeMetadata(R"({"metadata":{"name":"n\u00e9","namespace":"a\"b","uid":"é"}})"),
            nlohmann::json::parse(R"({"metadata":{"name":"n\u00e9","namespace":"a\"b","uid":"é"}})"));
  // A value nlohmann rejects before metadata's end makes the whole body unreadable.
  EXPECT_TRUE(decodeMetadata(R"({"size":1e999,"metadata":{"name":"n"}})").is_null());
  EXPECT_TRUE(decodeMetadata(R"({"bad":tru,"metadata":{"name":"n"}})").is_null());
  EXPECT_TRUE(decodeMetadata(R"({"bad":01,"metadata":{"name":"n"}})").is_null());
  // What follows the four identity fields is never read, even when malformed.
  EXPECT_EQ(decodeMetadata(R"({"metadata":{"name":"n","namespace":"s","uid":"u","resourceVersion":"1",oops)"),
            nlohmann::json::parse(R"({"metadata":{"name":"n","namespace":"s","uid":"u","resourceVersion":"1"}})"));
}

// What a caller of Decode::kMetadata would read as the resourceVersion.
std::string resourceVersionOf(const nlohmann::json& decoded) {
  const nlohmann::json::json_pointer at("/metadata/resourceVersion");
  return decoded.contains(at) && decoded[at].is_string() ? decoded[at].get<std::string>() : std::string();
}

TEST(DecodeMetadata, TheScanAgreesWithTheSaxParseOnEveryPrefixAndEdit) {
  // The scan is only a fast path: on every input it must give what nlohmann's SAX parse
  // gives (test/fuzz/fuzz_metadata.cc checks the same on arbitrary bytes).
  const std::vector<std::string> bodies = {
      R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"node-1",)"
      R"("namespace":"kube-node-lease","uid":"6f1c","resourceVersion":"1234567","creationTimestamp":)"
      R"("2026-12-04T19:00:00Z","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"node-1"}],)"
      R"("managedFields":[{"fieldsV1":{"k:{\"uid\":\"0\"}":{}}}]},"spec":{"leaseDurationSeconds":40}})",
      R"( { "a" : [ 1 , -2 , 0 , true , false , null , { } , [ ] , "s\n\/\t" ] , "metadata" : { "generation" : 12 ,)"
      R"( "labels" : { "x" : "y" } , "name" : "n" } , "status" : { } } )",
      R"({"metadata":{"name":"n\u00e9","resourceVersion":"2"},"x":1.5})",
      R"({"x":1.5,"y":-0.5e3,"z":123456789012345678901,"metadata":{"uid":"u"}})",
      R"({"metadata":null,"metadata":{"name":"second"}})",
      R"({"spec":{"metadata":{"name":"inner"}}})",
      R"([{"metadata":{"name":"in an array"}}])",
  };
  for (const std::string& body : bodies) {
    for (std::size_t n = 0; n <= body.size(); ++n) {
      const std::string_view prefix(body.data(), n);
      ASSERT_EQ(decodeMetadata(prefix), decodeMetadataBySax(prefix)) << "prefix of " << n << " bytes of " << body;
      ASSERT_EQ(decodeResourceVersion(prefix), resourceVersionOf(decodeMetadataBySax(prefix))) << prefix;
    }
    // Every single byte replaced by a character that matters to the grammar.
    for (std::size_t i = 0; i < body.size(); ++i) {
      for (char c : std::string_view("\"{}[]:,\\ 0-e.tx\x01\x80", 17)) {
        std::string edited = body;
        edited[i] = c;
        ASSERT_EQ(decodeMetadata(edited), decodeMetadataBySax(edited)) << edited;
        ASSERT_EQ(decodeResourceVersion(edited), resourceVersionOf(decodeMetadataBySax(edited))) << edited;
      }
    }
  }
}

// ---- synchronous retries in virtual time -----------------------------------------

TEST(ApiClientSync, TooManyRequestsWaitsRetryAfterInVirtualTime) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(status(429, R"({"kind":"Status","reason":"TooManyRequests","code":429})", {{"retry-after", "2"}}));
  t.enqueue(200, "{}");
  ApiClient c(t, clock, ApiClientOptions{.retry = noJitter()});
  ApiResult r = c.update(kLease, {});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 2);
  ASSERT_EQ(t.requests().size(), 2u);
  EXPECT_EQ(t.requests()[1].submittedAt - t.requests()[0].submittedAt, Duration(2s));
  EXPECT_EQ(clock.now(), TimePoint(2s));
  EXPECT_EQ(r.latency, Duration(2s));
  // The retry says what it is, and keeps the call's scheduled time.
  const HttpRequest& first = t.requests()[0].request;
  const HttpRequest& retry = t.requests()[1].request;
  EXPECT_EQ(first.attempt, 1);
  EXPECT_TRUE(first.retryReason.empty());
  EXPECT_EQ(retry.attempt, 2);
  EXPECT_EQ(retry.retryReason, "429");
  EXPECT_EQ(retry.retryWait, Duration(2s));
  EXPECT_EQ(retry.intendedAt, TimePoint(0s));
}

TEST(ApiClientSync, ServerErrorsBackOffExponentiallyThenGiveUp) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.setLatency(10ms);
  t.setHandler([](const HttpRequest&) { return status(503); });
  ApiClient c(t, clock, ApiClientOptions{.retry = noJitter()});
  ApiResult r = c.get(kLease);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.attempts, 4);
  ASSERT_EQ(t.requests().size(), 4u);
  // Each attempt takes 10ms; the waits in between are 100, 200, 400 ms.
  EXPECT_EQ(t.requests()[1].submittedAt, TimePoint(110ms));
  EXPECT_EQ(t.requests()[2].submittedAt, TimePoint(320ms));
  EXPECT_EQ(t.requests()[3].submittedAt, TimePoint(730ms));
  EXPECT_EQ(clock.now(), TimePoint(740ms));
  EXPECT_THAT(r.describe(), HasSubstr("after 4 attempts"));
}

TEST(ApiClientSync, CreateIsNotRetriedAfterATimeoutButIsAfterConnectFailure) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(failure(TransportOutcome::kTimeout));
  ApiClient c(t, clock, ApiClientOptions{.retry = noJitter()});
  ApiResult r = c.create(kLease.collection(), {});
  EXPECT_EQ(r.outcome, TransportOutcome::kTimeout);
  EXPECT_EQ(r.attempts, 1);

  t.clearRequests();
  t.enqueue(failure(TransportOutcome::kConnectFailed));
  t.enqueue(201, "{}");
  r = c.create(kLease.collection(), {});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(t.requests().size(), 2u);
}

TEST(ApiClientSync, FaultInjectorEveryAttemptFails) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.setFault([](const HttpRequest&) { return TransportOutcome::kConnectFailed; });
  ApiClient c(t, clock, ApiClientOptions{.retry = noJitter()});
  ApiResult r = c.list(ResourceRef(gvr::kNodes));
  EXPECT_EQ(r.outcome, TransportOutcome::kConnectFailed);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_THAT(r.describe(), HasSubstr("connect failed"));
}

TEST(ApiClientSync, LatencyIsMeasuredFromTheIntendedTime) {
  engine::VirtualClock clock(TimePoint(10s));
  FakeTransport t(clock);
  t.setLatency(30ms);
  t.enqueue(200, "{}");
  ApiClient c(t, clock);
  ApiRequest req = ApiRequest::get(kLease);
  req.intendedAt = TimePoint(9s);  // the actor was already 1s late
  ApiResult r = c.call(req);
  EXPECT_EQ(r.latency, Duration(1030ms));
  EXPECT_EQ(t.requests()[0].request.intendedAt, TimePoint(9s));
}

// ---- asynchronous calls on a scheduler -------------------------------------------

struct AsyncFixture : ::testing::Test {
  engine::VirtualClock clock;
  ManualScheduler sched{clock};
  FakeTransport t{sched};
};

TEST_F(AsyncFixture, RetriesAreScheduledNotSlept) {
  t.setLatency(5ms);
  t.enqueue(status(429, {}, {{"Retry-After", "1"}}));
  t.enqueue(200, R"({"ok":true})");
  ApiClient c(t, clock, sched, ApiClientOptions{.retry = noJitter()});
  std::vector<ApiResult> results;
  TimePoint doneAt{};
  c.updateAsync(kLease, {}, [&](ApiResult r) {
    doneAt = clock.now();
    results.push_back(std::move(r));
  });
  EXPECT_TRUE(results.empty());  // never from inside the call
  sched.runAll();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[0].attempts, 2);
  EXPECT_EQ(results[0].body["ok"], true);
  EXPECT_EQ(doneAt, TimePoint(1010ms));  // 5ms + Retry-After 1s + 5ms
  EXPECT_EQ(c.pending(), 0u);
  ASSERT_EQ(t.requests().size(), 2u);
  EXPECT_EQ(t.requests()[1].request.attempt, 2);
  EXPECT_EQ(t.requests()[1].request.retryReason, "429");
  EXPECT_EQ(t.requests()[1].request.retryWait, Duration(1s));
  EXPECT_EQ(t.requests()[1].request.intendedAt, TimePoint(0s));
}

TEST_F(AsyncFixture, ManyConcurrentCallsEachFinishOnce) {
  t.setLatency(1ms);
  int served = 0;
  t.setHandler([&](const HttpRequest&) { return status(++served % 3 == 0 ? 500 : 200, "{}"); });
  RetryConfig retry = noJitter();
  retry.maxAttempts = 10;  // a retried call can land on another 500
  ApiClient c(t, clock, sched, ApiClientOptions{.retry = retry});
  int done = 0, ok = 0;
  for (int i = 0; i < 30; ++i) {
    c.getAsync(ResourceRef(gvr::kNodes).named("n" + std::to_string(i)), [&](ApiResult r) {
      ++done;
      ok += r.ok();
    });
  }
  sched.runAll();
  EXPECT_EQ(done, 30);
  EXPECT_EQ(ok, 30);  // every 500 was retried into a 200
  EXPECT_GT(t.requests().size(), 30u);
}

TEST_F(AsyncFixture, ConflictGoesBackToTheCaller) {
  t.setLatency(2ms);
  t.enqueue(409, kConflictBody);
  ApiClient c(t, clock, sched);
  std::optional<ApiResult> got;
  c.updateAsync(kLease, {}, [&](ApiResult r) { got = std::move(r); });
  sched.runAll();
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->conflict());
  EXPECT_EQ(t.requests().size(), 1u);
}

TEST_F(AsyncFixture, CancelDuringBackoffStopsTheRetry) {
  t.setLatency(1ms);
  t.setHandler([](const HttpRequest&) { return status(503); });
  ApiClient c(t, clock, sched, ApiClientOptions{.retry = noJitter()});
  std::optional<ApiResult> got;
  CallId id = c.getAsync(kLease, [&](ApiResult r) { got = std::move(r); });
  sched.runNext();  // first response arrives, retry scheduled
  ASSERT_FALSE(got);
  ASSERT_EQ(sched.pending(), 1u);
  c.cancel(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->outcome, TransportOutcome::kAborted);
  EXPECT_EQ(sched.pending(), 0u);
  sched.runAll();
  EXPECT_EQ(t.requests().size(), 1u);
}

TEST_F(AsyncFixture, CancelInFlight) {
  t.setLatency(1s);
  ApiClient c(t, clock, sched);
  int calls = 0;
  std::optional<ApiResult> got;
  CallId id = c.getAsync(kLease, [&](ApiResult r) {
    ++calls;
    got = std::move(r);
  });
  c.cancel(id);
  sched.runAll();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got->outcome, TransportOutcome::kAborted);
  EXPECT_EQ(t.cancelled(), 1u);
  c.cancel(id);  // unknown now: ignored
  EXPECT_EQ(calls, 1);
}

// Calls reuse the slot of a finished one: a finished call's id stays dead (cancelling
// it leaves the call now in its slot alone), ids never repeat, and a watch's id is
// never a call's.
TEST_F(AsyncFixture, AFinishedCallsIdNeverReachesTheCallThatReusesItsSlot) {
  t.setLatency(1s);
  t.setHandler([](const HttpRequest&) { return status(200, "{}"); });
  ApiClient c(t, clock, sched);
  std::optional<ApiResult> first, second;
  const CallId a = c.getAsync(kLease, [&](ApiResult r) { first = std::move(r); });
  sched.runAll();
  ASSERT_TRUE(first && first->ok());
  const CallId b = c.getAsync(kLease, [&](ApiResult r) { second = std::move(r); });
  EXPECT_NE(a, b);
  const CallId w = c.watch(
      ResourceRef(gvr::kLeases).in("kube-node-lease"), {}, [](const WatchEvent&) {}, [](const ApiResult&) {});
  EXPECT_NE(w, a);
  EXPECT_NE(w, b);
  EXPECT_EQ(c.pending(), 2u);
  c.cancel(a);  // finished: ignored, even though b has its slot
  EXPECT_FALSE(second);
  EXPECT_EQ(c.pending(), 2u);
  c.cancel(w);
  sched.runAll();
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->ok()) << second->describe();
  EXPECT_EQ(c.pending(), 0u);
}

TEST(ApiClientAsync, NeedsAScheduler) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  ApiClient c(t, clock);
  EXPECT_THROW(c.getAsync(kLease, [](ApiResult) {}), std::logic_error);
}

// ---- watch ------------------------------------------------------------------------

std::string event(const char* type, int rv) {
  return std::string(R"({"type":")") + type + R"(","object":{"metadata":{"name":"n","resourceVersion":")" +
         std::to_string(rv) + "\"}}}\n";
}

TEST(ApiClientWatch, EventsSplitAcrossChunksArriveInOrder) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  std::string stream = event("ADDED", 1) + event("MODIFIED", 2) + event("BOOKMARK", 3) + event("DELETED", 4);
  t.enqueue(200, stream);
  // Chunks of 7 bytes: every event straddles several chunks.
  t.setChunker([](const HttpRequest&, const HttpResponse& r) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < r.body.size(); i += 7) out.push_back(r.body.substr(i, 7));
    return out;
  });
  ApiClient c(t, clock);
  std::vector<std::string> seen;
  std::optional<ApiResult> closed;
  ListOptions o;
  o.resourceVersion = "0";
  o.allowWatchBookmarks = true;
  o.timeoutSeconds = 60;
  c.watch(
      ResourceRef(gvr::kLeases).in("kube-node-lease"), o,
      [&](const WatchEvent& e) {
        seen.push_back(std::string(toString(e.type)) + e.object["metadata"]["resourceVersion"].get<std::string>());
      },
      [&](const ApiResult& r) { closed = r; });
  const HttpRequest& req = t.requests().at(0).request;
  EXPECT_EQ(req.path,
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
            "?resourceVersion=0&watch=true&allowWatchBookmarks=true&timeoutSeconds=60");
  EXPECT_EQ(req.statsVerb, "WATCH");
  EXPECT_TRUE(req.stream);                // outside the open-loop budget, on stream connections
  EXPECT_GT(req.timeout, Duration(60s));  // outlives the server-side timeout
  while (!closed) t.poll(1s);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED1", "MODIFIED2", "BOOKMARK3", "DELETED4"}));
  EXPECT_EQ(closed->outcome, TransportOutcome::kOk);
  EXPECT_EQ(closed->status, 200);
  EXPECT_EQ(c.pending(), 0u);
}

TEST(ApiClientWatch, RefusedWatchReportsTheStatus) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(410, R"x({"kind":"Status","reason":"Expired","message":"too old resource version: 1 (5)","code":410})x"
                 "\n");
  ApiClient c(t, clock);
  int events = 0;
  std::optional<ApiResult> closed;
  c.watch(
      ResourceRef(gvr::kPods), {}, [&](const WatchEvent&) { ++events; }, [&](const ApiResult& r) { closed = r; });
  while (!closed) t.poll(1s);
  EXPECT_EQ(events, 0);
  EXPECT_TRUE(closed->gone());
  EXPECT_EQ(closed->apiStatus.reason, "Expired");
}

TEST(ApiClientWatch, MalformedStreamClosesWithProtocolError) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(200, event("ADDED", 1) + "garbage\n" + event("ADDED", 2));
  ApiClient c(t, clock);
  int events = 0;
  std::optional<ApiResult> closed;
  c.watch(
      ResourceRef(gvr::kPods), {}, [&](const WatchEvent&) { ++events; }, [&](const ApiResult& r) { closed = r; });
  while (!closed) t.poll(1s);
  EXPECT_EQ(events, 1);
  EXPECT_EQ(closed->outcome, TransportOutcome::kProtocolError);
}

TEST(ApiClientWatch, CancelFromAnEventHandlerStopsDelivery) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.enqueue(200, event("ADDED", 1) + event("ADDED", 2) + event("ADDED", 3));
  ApiClient c(t, clock);
  int events = 0;
  std::optional<ApiResult> closed;
  CallId id = 0;
  id = c.watch(
      ResourceRef(gvr::kPods), {},
      [&](const WatchEvent&) {
        if (++events == 2) c.cancel(id);
      },
      [&](const ApiResult& r) { closed = r; });
  while (!closed) t.poll(1s);
  EXPECT_EQ(events, 2);
  EXPECT_EQ(closed->outcome, TransportOutcome::kAborted);
}

TEST(ApiClientWatch, CancelWhileWaitingClosesOnce) {
  engine::VirtualClock clock;
  ManualScheduler sched(clock);
  FakeTransport t(sched);
  t.setLatency(1h);
  t.enqueue(200, event("ADDED", 1));
  ApiClient c(t, clock, sched);
  int closes = 0;
  CallId id = c.watch(
      ResourceRef(gvr::kPods), {}, [](const WatchEvent&) {},
      [&](const ApiResult& r) {
        ++closes;
        EXPECT_EQ(r.outcome, TransportOutcome::kAborted);
      });
  c.cancel(id);
  sched.runAll();
  EXPECT_EQ(closes, 1);
}

// ---- fake transport contract ------------------------------------------------------

TEST(FakeTransport, HandlersNeverRunInsideSubmit) {
  FakeTransport t;
  t.enqueue(200);
  bool ran = false;
  t.submit(HttpRequest{}, [&](HttpResponse) { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_EQ(t.inFlight(), 1u);
  EXPECT_EQ(t.poll(0s), 1u);
  EXPECT_TRUE(ran);
}

TEST(FakeTransport, PollWaitsAtMostMaxWaitInVirtualTime) {
  engine::VirtualClock clock;
  FakeTransport t(clock);
  t.setLatency(250ms);
  t.enqueue(200);
  bool ran = false;
  t.submit(HttpRequest{}, [&](HttpResponse) { ran = true; });
  EXPECT_EQ(t.poll(100ms), 0u);
  EXPECT_EQ(clock.now(), TimePoint(100ms));
  EXPECT_EQ(t.poll(1s), 1u);
  EXPECT_EQ(clock.now(), TimePoint(250ms));
  EXPECT_TRUE(ran);
}

TEST(FakeTransport, HeldStreamTakesPushedEventsUntilEnded) {
  engine::VirtualClock clock;
  ManualScheduler sched(clock);
  FakeTransport t(sched);
  t.setLatency(1ms);
  t.setStreamHandler([](const HttpRequest& r) -> std::optional<HttpResponse> {
    if (r.path.find("/pods") != std::string::npos) return std::nullopt;  // hold it open
    return status(403);
  });
  ApiClient c(t, clock, sched);
  std::vector<std::string> seen;
  std::optional<ApiResult> podsClosed, nodesClosed;
  c.watch(
      ResourceRef(gvr::kPods), {}, [&](const WatchEvent& e) { seen.push_back(std::string(toString(e.type))); },
      [&](const ApiResult& r) { podsClosed = r; });
  c.watch(
      ResourceRef(gvr::kNodes), {}, [](const WatchEvent&) {}, [&](const ApiResult& r) { nodesClosed = r; });
  sched.runAll();
  ASSERT_TRUE(nodesClosed);  // not held: answered after its latency
  EXPECT_EQ(nodesClosed->status, 403);
  EXPECT_FALSE(podsClosed);
  EXPECT_EQ(t.heldStreams(), 1u);
  EXPECT_EQ(t.pushToStreams("/pods", event("ADDED", 1)), 1u);
  EXPECT_EQ(t.pushToStreams("/nodes", event("ADDED", 2)), 0u);
  EXPECT_EQ(t.pushToStreams("/pods", event("MODIFIED", 3)), 1u);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED", "MODIFIED"}));
  EXPECT_FALSE(podsClosed);
  EXPECT_EQ(t.endStreams("/pods", status(200, event("DELETED", 4))), 1u);
  ASSERT_TRUE(podsClosed);
  EXPECT_EQ(podsClosed->status, 200);
  EXPECT_EQ(seen.back(), "DELETED");
  EXPECT_EQ(t.heldStreams(), 0u);
}

TEST(TransportHelpers, HeaderLookupIsCaseInsensitiveAndRoundTripWorks) {
  HttpResponse r = status(200, "", {{"retry-after", "3"}});
  EXPECT_EQ(r.header("Retry-After"), "3");
  EXPECT_FALSE(r.header("x-missing").has_value());
  FakeTransport t;
  t.enqueue(204);
  EXPECT_EQ(roundTrip(t, HttpRequest{}).status, 204);
  EXPECT_EQ(toString(TransportOutcome::kTlsFailed), "TLS failed");
}

}  // namespace
}  // namespace cpscale::kube
