// Typed Kubernetes API verbs over a Transport: request building, retries (429 with
// Retry-After, 5xx and connection failures with bounded backoff), status decoding and
// watch streams. The same client runs live (CurlTransport) and in virtual time (a fake
// or model Transport), so retry behaviour is identical in both.
//
// Outcomes are values: a 404, a 409 or an unreachable server comes back as an
// ApiResult, never as an exception. Single-threaded: call it from the thread that
// polls the transport (the engine's thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/clock.h"
#include "sim/engine/scheduler.h"
#include "sim/kube/resource.h"
#include "sim/kube/retry_policy.h"
#include "sim/kube/transport.h"
#include "sim/kube/watch.h"

namespace cpscale::kube {

enum class Verb { kGet, kList, kWatch, kCreate, kUpdate, kPatch, kDelete, kDeleteCollection };
// As kube-apiserver labels it in apiserver_request_total: GET, LIST, POST, ...
std::string_view statsVerb(Verb v);
std::string_view httpMethod(Verb v);

enum class PatchType { kMerge, kStrategicMerge, kJson };
std::string_view contentType(PatchType t);

// The fields of a metav1.Status body (error responses, some deletes, watch ERROR).
struct ApiStatus {
  std::string reason;   // "Conflict", "AlreadyExists", "NotFound", "Expired", ...
  std::string message;  // the server's explanation
  int code = 0;
};

struct ApiResult {
  TransportOutcome outcome = TransportOutcome::kOk;
  std::string detail;   // transport detail for non-kOk outcomes; never credentials
  int status = 0;       // HTTP status of the last attempt, 0 if none arrived
  nlohmann::json body;  // the decoded JSON body (null if empty or not JSON)
  std::string raw;      // the body when it was not JSON
  ApiStatus apiStatus;  // filled when the body is a metav1.Status
  int attempts = 0;
  // From the intended send time (or the first attempt) to the final answer,
  // retries included: what the calling component experienced.
  engine::Duration latency{0};
  std::string httpVersion;
  // Decode::kResourceVersion: the answer's metadata.resourceVersion, empty if it had none.
  std::string resourceVersion;
  // "PUT leases kube-node-lease/node-1", for messages: set when the call did not
  // succeed (a success has nothing to explain, and a hot path should not build it).
  std::string what;

  bool ok() const { return outcome == TransportOutcome::kOk && status >= 200 && status < 300; }
  bool notFound() const { return outcome == TransportOutcome::kOk && status == 404; }
  // 409 from an update/patch: the object changed since it was read.
  bool conflict() const {
    return outcome == TransportOutcome::kOk && status == 409 && apiStatus.reason != "AlreadyExists";
  }
  // 409 from a create.
  bool alreadyExists() const {
    return outcome == TransportOutcome::kOk && status == 409 && apiStatus.reason == "AlreadyExists";
  }
  bool tooManyRequests() const { return outcome == TransportOutcome::kOk && status == 429; }
  // 410: the resourceVersion is too old (relist).
  bool gone() const { return outcome == TransportOutcome::kOk && status == 410; }
  // One line: what, then the status and server message, or the transport failure.
  std::string describe() const;
};

// The {"metadata": {name, namespace, uid, resourceVersion}} of a JSON object text
// (those present as strings), reading no further than the end of its metadata
// (Decode::kMetadata). Null when the text ends or stops being valid JSON before its
// top-level metadata object has ended. A one-pass scan handles the common case; what it
// does not handle goes to nlohmann's SAX parser (decodeMetadataBySax), whose result it
// always equals.
nlohmann::json decodeMetadata(std::string_view text);
nlohmann::json decodeMetadataBySax(std::string_view text);
// The metadata.resourceVersion that decodeMetadata gives (empty when it gives none),
// without building a document: the only thing a renewal keeps (Decode::kResourceVersion).
std::string decodeResourceVersion(std::string_view text);

struct DeleteOptions {
  std::optional<std::int64_t> gracePeriodSeconds{};
  std::string propagationPolicy{};  // "Foreground", "Background", "Orphan"
  // Preconditions: the delete fails with 409 unless the object still matches.
  std::string preconditionUid{};
  std::string preconditionResourceVersion{};
  bool dryRun = false;
};

// How much of a successful answer's body the caller needs. Error bodies are always
// decoded in full (for the Status reason).
enum class Decode : std::uint8_t {
  kObject,  // ApiResult::body is the whole object
  // ApiResult::body is {"metadata": {...}} with only metadata's name, namespace, uid
  // and resourceVersion (those present); parsing stops once metadata has been read, so
  // a Node's status or a Lease's managedFields are never decoded.
  kMetadata,
  // ApiResult::resourceVersion is metadata's resourceVersion as kMetadata reads it;
  // the body stays null.
  kResourceVersion,
  kNone,  // the body is dropped undecoded: the caller needs the status only
};

// One API call, before it becomes HTTP. Build with the static helpers; the body may be
// replaced with pre-serialised JSON on hot paths.
struct ApiRequest {
  Verb verb = Verb::kGet;
  ResourceRef ref;
  QueryParams query;
  std::string body;
  PatchType patchType = PatchType::kMerge;
  // The actor's scheduled time, for latency measured without coordinated omission.
  std::optional<engine::TimePoint> intendedAt;
  Decode decode = Decode::kObject;

  static ApiRequest get(const ResourceRef& ref, const std::string& resourceVersion = "");
  static ApiRequest list(const ResourceRef& collection, const ListOptions& options = {});
  static ApiRequest create(const ResourceRef& collection, const nlohmann::json& object,
                           const WriteOptions& options = {});
  static ApiRequest update(const ResourceRef& ref, const nlohmann::json& object, const WriteOptions& options = {});
  static ApiRequest patch(const ResourceRef& ref, PatchType type, const nlohmann::json& patch,
                          const WriteOptions& options = {});
  static ApiRequest remove(const ResourceRef& ref, const DeleteOptions& options = {});
  static ApiRequest deleteCollection(const ResourceRef& collection, const ListOptions& selector = {},
                                     const DeleteOptions& options = {});
};

struct ApiClientOptions {
  RetryConfig retry{};
  std::uint64_t seed = 1;              // jitter RNG seed: same seed, same retry schedule
  std::string userAgent{};             // default "cpscale/<version>"
  engine::Duration requestTimeout{0};  // per attempt; 0: the transport's default
  // How long one transport poll may block in a synchronous call.
  engine::Duration pollSlice = std::chrono::milliseconds(50);
};

using CallId = std::uint64_t;
using ResultHandler = std::function<void(ApiResult)>;
using WatchEventHandler = std::function<void(const WatchEvent&)>;
// Runs once when the stream ends: server timeout (status 200, outcome kOk), refusal
// (e.g. 410 with apiStatus), transport failure, cancel (kAborted) or a malformed
// stream (kProtocolError).
using WatchCloseHandler = std::function<void(const ApiResult&)>;

class ApiClient {
 public:
  // Synchronous calls only; retry waits use clock.sleepFor (jumps in virtual time).
  ApiClient(Transport& transport, engine::Clock& clock, ApiClientOptions options = {});
  // Synchronous and asynchronous calls; asynchronous retries are scheduled on
  // `scheduler`, whose time should be `clock`'s.
  ApiClient(Transport& transport, engine::Clock& clock, engine::Scheduler& scheduler, ApiClientOptions options = {});
  // Cancels what is still in flight; its handlers run with kAborted.
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  // Blocks (polling the transport) until the call, retries included, is finished.
  ApiResult call(ApiRequest request);
  // Returns at once; `done` runs exactly once, from the transport's poll, a scheduler
  // event or cancel(). Throws std::logic_error if the client has no Scheduler.
  CallId callAsync(ApiRequest request, ResultHandler done);
  // Ends a call or watch; its handler runs with kAborted. Unknown ids are ignored.
  void cancel(CallId id);
  std::size_t pending() const { return callSlots_.size() - freeCallSlots_.size() + watches_.size(); }

  ApiResult create(const ResourceRef& collection, const nlohmann::json& object, const WriteOptions& o = {});
  ApiResult get(const ResourceRef& ref, const std::string& resourceVersion = "");
  ApiResult update(const ResourceRef& ref, const nlohmann::json& object, const WriteOptions& o = {});
  ApiResult patchMerge(const ResourceRef& ref, const nlohmann::json& patch, const WriteOptions& o = {});
  ApiResult patchStrategic(const ResourceRef& ref, const nlohmann::json& patch, const WriteOptions& o = {});
  ApiResult patchJson(const ResourceRef& ref, const nlohmann::json& operations, const WriteOptions& o = {});
  ApiResult remove(const ResourceRef& ref, const DeleteOptions& o = {});
  ApiResult list(const ResourceRef& collection, const ListOptions& o = {});
  ApiResult deleteCollection(const ResourceRef& collection, const ListOptions& selector = {},
                             const DeleteOptions& o = {});

  CallId createAsync(const ResourceRef& collection, const nlohmann::json& object, ResultHandler done,
                     const WriteOptions& o = {});
  CallId getAsync(const ResourceRef& ref, ResultHandler done);
  CallId updateAsync(const ResourceRef& ref, const nlohmann::json& object, ResultHandler done,
                     const WriteOptions& o = {});

  // Opens a watch on a collection. Not retried: like a reflector, the caller decides
  // whether to re-watch from the last resourceVersion or relist. `options.timeoutSeconds`
  // asks the server to end the stream; without it the stream stays open until cancel.
  // `keep`: the parts of each object the handler reads (WatchProjection); empty: all.
  CallId watch(const ResourceRef& collection, const ListOptions& options, WatchEventHandler onEvent,
               WatchCloseHandler onClose, const WatchProjection& keep = {});

 private:
  struct Call;
  struct Watch;
  HttpRequest toHttp(const ApiRequest& r, std::optional<engine::TimePoint> intendedAt, int attempt = 1,
                     const RetryDecision& retried = {}) const;
  ApiResult toResult(const ApiRequest& r, HttpResponse&& resp, int attempts, engine::Duration latency) const;
  void startAttempt(Call& call);
  // The call `id` names while it is unfinished, else null.
  Call* findCall(CallId id);
  void onAttemptDone(CallId id, HttpResponse&& resp);
  void finish(CallId id, ApiResult result);
  void closeWatch(CallId id, HttpResponse&& resp);

  Transport& transport_;
  engine::Clock& clock_;
  engine::Scheduler* scheduler_;
  ApiClientOptions options_;
  RetryPolicy retry_;
  CallId nextId_ = 0;
  // Unfinished calls in reusable slots, so that a call allocates no bookkeeping: a
  // call's id is its sequence number above kSlotBits and its slot below; a watch's has
  // kWatchSlot there, so the two never collide.
  static constexpr unsigned kSlotBits = 24;
  static constexpr CallId kSlotMask = (CallId{1} << kSlotBits) - 1;
  static constexpr CallId kWatchSlot = kSlotMask;
  std::vector<std::unique_ptr<Call>> callSlots_;
  std::vector<std::uint32_t> freeCallSlots_;
  std::unordered_map<CallId, std::shared_ptr<Watch>> watches_;
};

}  // namespace cpscale::kube
