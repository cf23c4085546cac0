#include "sim/kube/api_client.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#ifndef CPSCALE_VERSION
#define CPSCALE_VERSION "dev"
#endif

namespace cpscale::kube {

std::string_view statsVerb(Verb v) {
  switch (v) {
    case Verb::kGet: return "GET";
    case Verb::kList: return "LIST";
    case Verb::kWatch: return "WATCH";
    case Verb::kCreate: return "POST";
    case Verb::kUpdate: return "PUT";
    case Verb::kPatch: return "PATCH";
    case Verb::kDelete: return "DELETE";
    case Verb::kDeleteCollection: return "DELETECOLLECTION";
  }
  return "UNKNOWN";
}

std::string_view httpMethod(Verb v) {
  switch (v) {
    case Verb::kGet:
    case Verb::kList:
    case Verb::kWatch: return "GET";
    case Verb::kCreate: return "POST";
    case Verb::kUpdate: return "PUT";
    case Verb::kPatch: return "PATCH";
    case Verb::kDelete:
    case Verb::kDeleteCollection: return "DELETE";
  }
  return "GET";
}

std::string_view contentType(PatchType t) {
  switch (t) {
    case PatchType::kMerge: return "application/merge-patch+json";
    case PatchType::kStrategicMerge: return "application/strategic-merge-patch+json";
    case PatchType::kJson: return "application/json-patch+json";
  }
  return "application/json";
}

namespace {

// The fields of metadata that Decode::kMetadata keeps (resourceVersion last).
constexpr std::array<std::string_view, 4> kMetadataFields{"name", "namespace", "uid", "resourceVersion"};

// A SAX consumer that keeps metadata's identity fields and stops at metadata's end.
class MetadataSax {
 public:
  using json = nlohmann::json;
  json out;

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool string(json::string_t& s) {
    if (depth_ == 2 && inMetadata_ && wanted(key_)) {
      out["metadata"][key_] = std::move(s);
      if (++found_ == 4) return false;  // all there is to keep
    }
    return value();
  }
  bool start_object(std::size_t) {
    ++depth_;
    if (depth_ == 2 && pendingMetadata_) {
      inMetadata_ = true;
      out["metadata"] = json::object();
    }
    pendingMetadata_ = false;
    return true;
  }
  bool end_object() {
    if (depth_ == 2 && inMetadata_) return false;  // metadata read: stop
    --depth_;
    return true;
  }
  bool start_array(std::size_t) {
    ++depth_;
    pendingMetadata_ = false;
    return true;
  }
  bool end_array() {
    --depth_;
    return true;
  }
  bool key(json::string_t& k) {
    if (depth_ == 1) pendingMetadata_ = k == "metadata";
    if (depth_ == 2 && inMetadata_) key_ = std::move(k);
    return true;
  }
  // Invalid before metadata was read to its end: nothing.
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    out = nullptr;
    return false;
  }

 private:
  static bool wanted(const std::string& k) {
    return std::find(kMetadataFields.begin(), kMetadataFields.end(), k) != kMetadataFields.end();
  }
  bool value() {
    pendingMetadata_ = false;
    return true;
  }
  int depth_ = 0;
  bool pendingMetadata_ = false;
  bool inMetadata_ = false;
  int found_ = 0;
  std::string key_;
};

// The fast path of decodeMetadata: one pass over the text up to metadata's end, with a
// grammar no looser than nlohmann's. It gives up (nullopt) on whatever it does not
// handle itself: a top level that is not an object, non-ASCII bytes, \u escapes, an
// escape in a key or a kept value, nesting past 64, or anything malformed. The SAX parse
// then decides, so what it returns is always what the SAX parse would.
class MetadataScan {
 public:
  explicit MetadataScan(std::string_view t) : p_(t.data()), e_(t.data() + t.size()) {}

  // What the scan read: whether there was a top-level metadata object and, of its
  // kept fields, the text of those present (views into the scanned text; a repeated
  // key's last value, as nlohmann keeps).
  struct Found {
    bool metadata = false;
    std::array<std::optional<std::string_view>, 4> fields;  // as kMetadataFields
  };

  std::optional<Found> run() {
    ws();
    if (!take('{')) return std::nullopt;
    ws();
    if (take('}')) return Found{};  // valid and complete: no metadata
    for (;;) {
      std::string_view key;
      if (!memberKey(key)) return std::nullopt;
      if (key == "metadata" && p_ < e_ && *p_ == '{') return metadata();
      if (!skipValue(1)) return std::nullopt;
      switch (afterMember()) {
        case Next::kMember: continue;
        case Next::kEnd: return Found{};
        case Next::kInvalid: return std::nullopt;
      }
    }
  }

 private:
  std::optional<Found> metadata() {
    ++p_;  // '{'
    Found out;
    out.metadata = true;
    int found = 0;
    ws();
    if (take('}')) return out;
    for (;;) {
      std::string_view key;
      if (!memberKey(key)) return std::nullopt;
      const auto field = std::find(kMetadataFields.begin(), kMetadataFields.end(), key);
      if (field != kMetadataFields.end() && p_ < e_ && *p_ == '"') {
        std::string_view value;
        if (!plainString(value)) return std::nullopt;
        out.fields[static_cast<std::size_t>(field - kMetadataFields.begin())] = value;
        if (++found == 4) return out;
      } else if (!skipValue(2)) {
        return std::nullopt;
      }
      switch (afterMember()) {
        case Next::kMember: continue;
        case Next::kEnd: return out;
        case Next::kInvalid: return std::nullopt;
      }
    }
  }

  // `"key" :` with the whitespace around it.
  bool memberKey(std::string_view& key) {
    if (!plainString(key)) return false;
    ws();
    if (!take(':')) return false;
    ws();
    return true;
  }
  // What follows an object's member or an array's item: another (`,`), the end
  // (`close`), or neither.
  enum class Next { kMember, kEnd, kInvalid };
  Next afterMember(char close = '}') {
    ws();
    if (take(',')) {
      ws();
      return Next::kMember;
    }
    return take(close) ? Next::kEnd : Next::kInvalid;
  }
  void ws() {
    while (p_ < e_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool take(char c) {
    if (p_ < e_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  // A string without escapes: its text.
  bool plainString(std::string_view& out) {
    if (!take('"')) return false;
    const char* begin = p_;
    while (p_ < e_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(begin, static_cast<std::size_t>(p_ - begin));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++p_;
    }
    return false;
  }
  bool skipString() {
    if (!take('"')) return false;
    while (p_ < e_) {
      const auto c = static_cast<unsigned char>(*p_++);
      if (c == '"') return true;
      if (c < 0x20 || c >= 0x80) return false;
      if (c == '\\') {
        if (p_ == e_) return false;
        const char x = *p_++;
        if (x != '"' && x != '\\' && x != '/' && x != 'b' && x != 'f' && x != 'n' && x != 'r' && x != 't') {
          return false;  // \u (surrogates are nlohmann's to judge) or invalid
        }
      }
    }
    return false;
  }
  // Integers of up to 18 digits only: a fraction, an exponent or a longer integer may
  // overflow to a float that nlohmann rejects as not finite; those are its to judge.
  bool skipNumber() {
    take('-');
    if (take('0')) return p_ == e_ || !((*p_ >= '0' && *p_ <= '9') || *p_ == '.' || *p_ == 'e' || *p_ == 'E');
    const char* b = p_;
    while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
    if (p_ == b || p_ - b > 18) return false;
    return p_ == e_ || !(*p_ == '.' || *p_ == 'e' || *p_ == 'E');
  }
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(e_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }
  bool skipValue(int depth) {
    if (p_ == e_ || depth > 64) return false;
    switch (*p_) {
      case '"': return skipString();
      case '{':
      case '[': {
        const char close = *p_++ == '{' ? '}' : ']';
        ws();
        if (take(close)) return true;
        for (;;) {
          if (close == '}') {
            // A key may hold escapes here: only those of kept values must be plain.
            if (!skipString()) return false;
            ws();
            if (!take(':')) return false;
            ws();
          }
          if (!skipValue(depth + 1)) return false;
          if (const Next n = afterMember(close); n != Next::kMember) return n == Next::kEnd;
        }
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return skipNumber();
    }
  }

  const char* p_;
  const char* e_;
};

}  // namespace

nlohmann::json decodeMetadataBySax(std::string_view text) {
  MetadataSax sax;
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json, /*strict=*/false);
  return std::move(sax.out);
}

nlohmann::json decodeMetadata(std::string_view text) {
  const auto fast = MetadataScan(text).run();
  if (!fast) return decodeMetadataBySax(text);
  if (!fast->metadata) return nullptr;
  nlohmann::json out;
  nlohmann::json& meta = out["metadata"] = nlohmann::json::object();
  for (std::size_t i = 0; i < kMetadataFields.size(); ++i) {
    if (fast->fields[i]) meta[std::string(kMetadataFields[i])] = std::string(*fast->fields[i]);
  }
  return out;
}

std::string decodeResourceVersion(std::string_view text) {
  if (const auto fast = MetadataScan(text).run()) {
    const auto& rv = fast->fields.back();
    return rv ? std::string(*rv) : std::string();
  }
  nlohmann::json slow = decodeMetadataBySax(text);
  const auto meta = slow.find("metadata");
  if (meta == slow.end()) return {};
  const auto rv = meta->find("resourceVersion");
  return rv != meta->end() && rv->is_string() ? rv->get<std::string>() : std::string();
}

std::string ApiResult::describe() const {
  std::string s = what.empty() ? std::string("request") : what;
  if (outcome != TransportOutcome::kOk) {
    s += ": ";
    s += toString(outcome);
    if (!detail.empty()) s += " (" + detail + ")";
  } else {
    s += ": " + std::to_string(status);
    if (!apiStatus.reason.empty()) s += " " + apiStatus.reason;
    if (!apiStatus.message.empty()) s += ": " + apiStatus.message;
  }
  if (attempts > 1) s += " after " + std::to_string(attempts) + " attempts";
  return s;
}

// ---- request builders ----------------------------------------------------------

namespace {

nlohmann::json deleteOptionsBody(const DeleteOptions& o) {
  nlohmann::json j = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (o.gracePeriodSeconds) j["gracePeriodSeconds"] = *o.gracePeriodSeconds;
  if (!o.propagationPolicy.empty()) j["propagationPolicy"] = o.propagationPolicy;
  if (!o.preconditionUid.empty()) j["preconditions"]["uid"] = o.preconditionUid;
  if (!o.preconditionResourceVersion.empty()) j["preconditions"]["resourceVersion"] = o.preconditionResourceVersion;
  if (o.dryRun) j["dryRun"] = nlohmann::json::array({"All"});
  return j;
}

bool isDefault(const DeleteOptions& o) {
  return !o.gracePeriodSeconds && o.propagationPolicy.empty() && o.preconditionUid.empty() &&
         o.preconditionResourceVersion.empty() && !o.dryRun;
}

}  // namespace

ApiRequest ApiRequest::get(const ResourceRef& ref, const std::string& resourceVersion) {
  ApiRequest r{Verb::kGet, ref, {}, {}, PatchType::kMerge, std::nullopt};
  if (!resourceVersion.empty()) r.query.emplace_back("resourceVersion", resourceVersion);
  return r;
}

ApiRequest ApiRequest::list(const ResourceRef& collection, const ListOptions& options) {
  return ApiRequest{Verb::kList, collection, toQuery(options, false), {}, PatchType::kMerge, std::nullopt};
}

ApiRequest ApiRequest::create(const ResourceRef& collection, const nlohmann::json& object,
                              const WriteOptions& options) {
  return ApiRequest{Verb::kCreate, collection, toQuery(options), object.dump(), PatchType::kMerge, std::nullopt};
}

ApiRequest ApiRequest::update(const ResourceRef& ref, const nlohmann::json& object, const WriteOptions& options) {
  return ApiRequest{Verb::kUpdate, ref, toQuery(options), object.dump(), PatchType::kMerge, std::nullopt};
}

ApiRequest ApiRequest::patch(const ResourceRef& ref, PatchType type, const nlohmann::json& patch,
                             const WriteOptions& options) {
  return ApiRequest{Verb::kPatch, ref, toQuery(options), patch.dump(), type, std::nullopt};
}

ApiRequest ApiRequest::remove(const ResourceRef& ref, const DeleteOptions& options) {
  ApiRequest r{Verb::kDelete, ref, {}, {}, PatchType::kMerge, std::nullopt};
  if (!isDefault(options)) r.body = deleteOptionsBody(options).dump();
  return r;
}

ApiRequest ApiRequest::deleteCollection(const ResourceRef& collection, const ListOptions& selector,
                                        const DeleteOptions& options) {
  ApiRequest r{Verb::kDeleteCollection, collection, toQuery(selector, false), {}, PatchType::kMerge, std::nullopt};
  if (!isDefault(options)) r.body = deleteOptionsBody(options).dump();
  return r;
}

// ---- client ----------------------------------------------------------------------

struct ApiClient::Call {
  CallId id = 0;
  ApiRequest request;
  ResultHandler done;
  int attempts = 0;
  engine::TimePoint started{};
  engine::TimePoint intended{};
  RequestId inTransport = 0;       // the attempt on the wire, 0 if none
  engine::EventId retryEvent = 0;  // the scheduled retry, 0 if none
  std::optional<HttpResponse> lastResponse;
  RetryDecision lastRetry;  // why and after how long the attempt on the wire was retried
};

struct ApiClient::Watch {
  CallId id = 0;
  ApiRequest request;
  WatchStreamDecoder decoder;
  WatchEventHandler onEvent;
  WatchCloseHandler onClose;
  engine::TimePoint started{};
  RequestId inTransport = 0;
  bool cancelled = false;
};

ApiClient::ApiClient(Transport& transport, engine::Clock& clock, ApiClientOptions options)
    : transport_(transport),
      clock_(clock),
      scheduler_(nullptr),
      options_(std::move(options)),
      retry_(options_.retry, options_.seed) {
  if (options_.userAgent.empty()) options_.userAgent = std::string("cpscale/") + CPSCALE_VERSION;
}

ApiClient::ApiClient(Transport& transport, engine::Clock& clock, engine::Scheduler& scheduler, ApiClientOptions options)
    : ApiClient(transport, clock, std::move(options)) {
  scheduler_ = &scheduler;
}

ApiClient::~ApiClient() {
  std::vector<CallId> ids;
  for (const auto& c : callSlots_)
    if (c->id != 0) ids.push_back(c->id);
  for (const auto& [id, _] : watches_) ids.push_back(id);
  for (CallId id : ids) cancel(id);
}

HttpRequest ApiClient::toHttp(const ApiRequest& r, std::optional<engine::TimePoint> intendedAt, int attempt,
                              const RetryDecision& retried) const {
  HttpRequest h;
  h.attempt = attempt;
  if (attempt > 1) {
    h.retryReason = retried.reason;
    h.retryWait = retried.delay;
  }
  h.method = httpMethod(r.verb);
  h.path = requestPath(r.ref, r.query);
  h.headers.reserve(3);
  h.headers.push_back({"Accept", "application/json"});
  if (!r.body.empty()) {
    h.headers.push_back(
        {"Content-Type", std::string(r.verb == Verb::kPatch ? contentType(r.patchType) : "application/json")});
  }
  h.headers.push_back({"User-Agent", options_.userAgent});
  h.body = r.body;
  h.timeout = options_.requestTimeout;
  h.statsResource = r.ref.statsName();
  h.statsVerb = statsVerb(r.verb);
  h.intendedAt = intendedAt;
  return h;
}

namespace {

std::string describeRef(const ApiRequest& r) {
  std::string s(statsVerb(r.verb));
  s += " " + r.ref.statsName();
  if (!r.ref.ns.empty() || !r.ref.name.empty()) {
    s += " ";
    if (!r.ref.ns.empty()) s += r.ref.ns + (r.ref.name.empty() ? "" : "/");
    s += r.ref.name;
  }
  return s;
}

void decodeStatus(const nlohmann::json& body, ApiStatus& out) {
  if (!body.is_object()) return;
  auto kind = body.find("kind");
  if (kind == body.end() || !kind->is_string() || kind->get_ref<const std::string&>() != "Status") return;
  if (auto it = body.find("reason"); it != body.end() && it->is_string()) out.reason = it->get<std::string>();
  if (auto it = body.find("message"); it != body.end() && it->is_string()) out.message = it->get<std::string>();
  if (auto it = body.find("code"); it != body.end() && it->is_number_integer()) out.code = it->get<int>();
}

}  // namespace

ApiResult ApiClient::toResult(const ApiRequest& r, HttpResponse&& resp, int attempts, engine::Duration latency) const {
  ApiResult res;
  res.outcome = resp.outcome;
  res.detail = std::move(resp.detail);
  res.status = resp.status;
  res.attempts = attempts;
  res.latency = latency;
  res.httpVersion = std::move(resp.httpVersion);
  const bool success = resp.outcome == TransportOutcome::kOk && resp.status >= 200 && resp.status < 300;
  if (!success) res.what = describeRef(r);
  if (success && !resp.body.empty() && r.decode != Decode::kObject) {
    if (r.decode == Decode::kMetadata)
      res.body = decodeMetadata(resp.body);
    else if (r.decode == Decode::kResourceVersion)
      res.resourceVersion = decodeResourceVersion(resp.body);
  } else if (!resp.body.empty()) {
    res.body = nlohmann::json::parse(resp.body, nullptr, /*allow_exceptions=*/false);
    if (res.body.is_discarded()) {
      res.body = nullptr;
      res.raw = std::move(resp.body);
    } else {
      decodeStatus(res.body, res.apiStatus);
    }
  }
  if (res.apiStatus.reason.empty() && res.outcome == TransportOutcome::kOk && !success) {
    // Not every error carries a Status body (proxies, some 429s); name the class.
    if (res.status == 409) res.apiStatus.reason = "Conflict";
    if (res.status == 429) res.apiStatus.reason = "TooManyRequests";
  }
  return res;
}

ApiResult ApiClient::call(ApiRequest request) {
  const engine::TimePoint started = clock_.now();
  const engine::TimePoint intended = request.intendedAt.value_or(started);
  RetryDecision retried;
  for (int attempt = 1;; ++attempt) {
    std::optional<HttpResponse> resp;
    transport_.submit(toHttp(request, attempt == 1 ? request.intendedAt : intended, attempt, retried),
                      [&resp](HttpResponse r) { resp = std::move(r); });
    while (!resp) transport_.poll(options_.pollSlice);
    AttemptOutcome a{httpMethod(request.verb),    resp->outcome, resp->status,
                     resp->header("retry-after"), attempt,       clock_.now() - started};
    RetryDecision d = retry_.decide(a);
    if (!d.retry) return toResult(request, std::move(*resp), attempt, clock_.now() - intended);
    retried = d;
    clock_.sleepFor(d.delay);
  }
}

CallId ApiClient::callAsync(ApiRequest request, ResultHandler done) {
  if (scheduler_ == nullptr) {
    throw std::logic_error("ApiClient::callAsync needs a Scheduler (use the constructor that takes one)");
  }
  std::uint32_t slot;
  if (!freeCallSlots_.empty()) {
    slot = freeCallSlots_.back();
    freeCallSlots_.pop_back();
  } else {
    if (callSlots_.size() >= kWatchSlot) throw std::length_error("ApiClient: too many calls in flight");
    slot = static_cast<std::uint32_t>(callSlots_.size());
    callSlots_.push_back(std::make_unique<Call>());
  }
  Call& c = *callSlots_[slot];
  c.id = (++nextId_ << kSlotBits) | slot;
  c.started = clock_.now();
  c.intended = request.intendedAt.value_or(c.started);
  c.request = std::move(request);
  c.done = std::move(done);
  const CallId id = c.id;
  startAttempt(c);
  return id;
}

ApiClient::Call* ApiClient::findCall(CallId id) {
  const CallId slot = id & kSlotMask;
  if (slot >= callSlots_.size()) return nullptr;
  Call* c = callSlots_[slot].get();
  return c->id == id ? c : nullptr;
}

void ApiClient::startAttempt(Call& c) {
  ++c.attempts;
  const CallId id = c.id;
  c.inTransport =
      transport_.submit(toHttp(c.request, c.attempts == 1 ? c.request.intendedAt : c.intended, c.attempts, c.lastRetry),
                        [this, id](HttpResponse r) { onAttemptDone(id, std::move(r)); });
}

void ApiClient::onAttemptDone(CallId id, HttpResponse&& resp) {
  Call* c = findCall(id);
  if (c == nullptr) return;
  c->inTransport = 0;
  AttemptOutcome a{httpMethod(c->request.verb), resp.outcome, resp.status,
                   resp.header("retry-after"),  c->attempts,  clock_.now() - c->started};
  RetryDecision d = retry_.decide(a);
  if (!d.retry) {
    finish(id, toResult(c->request, std::move(resp), c->attempts, clock_.now() - c->intended));
    return;
  }
  // Kept so a cancel during the backoff can still report what the server last said.
  c->lastResponse = std::move(resp);
  c->lastRetry = d;
  c->retryEvent = scheduler_->scheduleAfter(d.delay, [this, id] {
    Call* again = findCall(id);
    if (again == nullptr) return;
    again->retryEvent = 0;
    again->lastResponse.reset();
    startAttempt(*again);
  });
}

void ApiClient::finish(CallId id, ApiResult result) {
  Call* c = findCall(id);
  if (c == nullptr) return;
  ResultHandler done = std::move(c->done);
  // The slot is freed first: the handler may start new calls (reusing it) or cancel others.
  const std::uint32_t slot = static_cast<std::uint32_t>(id & kSlotMask);
  *c = Call{};
  freeCallSlots_.push_back(slot);
  if (done) done(std::move(result));
}

void ApiClient::cancel(CallId id) {
  if (Call* c = findCall(id)) {  // a watch's slot (kWatchSlot) is never a call's
    if (c->inTransport != 0) {
      // The transport runs our handler with kAborted, which finishes the call.
      transport_.cancel(c->inTransport);
      return;
    }
    if (c->retryEvent != 0) scheduler_->cancel(c->retryEvent);
    HttpResponse aborted;
    aborted.outcome = TransportOutcome::kAborted;
    aborted.detail = "cancelled while waiting to retry";
    finish(id, toResult(c->request, std::move(aborted), c->attempts, clock_.now() - c->intended));
    return;
  }
  if (auto it = watches_.find(id); it != watches_.end()) {
    it->second->cancelled = true;
    if (it->second->inTransport != 0) transport_.cancel(it->second->inTransport);
  }
}

// ---- sugar -----------------------------------------------------------------------

ApiResult ApiClient::create(const ResourceRef& c, const nlohmann::json& o, const WriteOptions& w) {
  return call(ApiRequest::create(c, o, w));
}
ApiResult ApiClient::get(const ResourceRef& r, const std::string& rv) { return call(ApiRequest::get(r, rv)); }
ApiResult ApiClient::update(const ResourceRef& r, const nlohmann::json& o, const WriteOptions& w) {
  return call(ApiRequest::update(r, o, w));
}
ApiResult ApiClient::patchMerge(const ResourceRef& r, const nlohmann::json& p, const WriteOptions& w) {
  return call(ApiRequest::patch(r, PatchType::kMerge, p, w));
}
ApiResult ApiClient::patchStrategic(const ResourceRef& r, const nlohmann::json& p, const WriteOptions& w) {
  return call(ApiRequest::patch(r, PatchType::kStrategicMerge, p, w));
}
ApiResult ApiClient::patchJson(const ResourceRef& r, const nlohmann::json& p, const WriteOptions& w) {
  return call(ApiRequest::patch(r, PatchType::kJson, p, w));
}
ApiResult ApiClient::remove(const ResourceRef& r, const DeleteOptions& o) { return call(ApiRequest::remove(r, o)); }
ApiResult ApiClient::list(const ResourceRef& c, const ListOptions& o) { return call(ApiRequest::list(c, o)); }
ApiResult ApiClient::deleteCollection(const ResourceRef& c, const ListOptions& s, const DeleteOptions& o) {
  return call(ApiRequest::deleteCollection(c, s, o));
}

CallId ApiClient::createAsync(const ResourceRef& c, const nlohmann::json& o, ResultHandler d, const WriteOptions& w) {
  return callAsync(ApiRequest::create(c, o, w), std::move(d));
}
CallId ApiClient::getAsync(const ResourceRef& r, ResultHandler d) {
  return callAsync(ApiRequest::get(r), std::move(d));
}
CallId ApiClient::updateAsync(const ResourceRef& r, const nlohmann::json& o, ResultHandler d, const WriteOptions& w) {
  return callAsync(ApiRequest::update(r, o, w), std::move(d));
}

// ---- watch -----------------------------------------------------------------------

CallId ApiClient::watch(const ResourceRef& collection, const ListOptions& options, WatchEventHandler onEvent,
                        WatchCloseHandler onClose, const WatchProjection& keep) {
  auto w = std::make_shared<Watch>();
  if (!keep.empty()) w->decoder = WatchStreamDecoder(keep);
  w->id = (++nextId_ << kSlotBits) | kWatchSlot;
  w->request = ApiRequest{Verb::kWatch, collection, toQuery(options, true), {}, PatchType::kMerge, std::nullopt};
  w->onEvent = std::move(onEvent);
  w->onClose = std::move(onClose);
  w->started = clock_.now();
  HttpRequest h = toHttp(w->request, std::nullopt);
  // A watch lasts as long as the server keeps it: the per-request timeout would cut it.
  h.timeout = options.timeoutSeconds ? std::chrono::seconds(*options.timeoutSeconds + 30)
                                     : std::chrono::duration_cast<engine::Duration>(std::chrono::hours(24 * 365));
  h.stream = true;  // outside the open-loop budget, on connections of its own
  h.perActor = options.perActor;
  Watch* raw = w.get();  // owned by watches_ until the close handler runs
  h.onBodyChunk = [raw](std::string_view chunk) {
    if (raw->cancelled) return false;
    return raw->decoder.feed(chunk, [raw](const WatchEvent& ev) {
      if (!raw->cancelled && raw->onEvent) raw->onEvent(ev);
    }) && !raw->cancelled;
  };
  CallId id = w->id;
  watches_.emplace(id, w);
  w->inTransport = transport_.submit(std::move(h), [this, id](HttpResponse r) { closeWatch(id, std::move(r)); });
  return id;
}

void ApiClient::closeWatch(CallId id, HttpResponse&& resp) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  std::shared_ptr<Watch> w = it->second;
  watches_.erase(it);
  bool decodeOk = w->decoder.error().empty();
  if (decodeOk && !w->cancelled && resp.outcome == TransportOutcome::kOk) {
    decodeOk = w->decoder.finish([&w](const WatchEvent& ev) {
      if (w->onEvent) w->onEvent(ev);
    });
  }
  ApiResult res = toResult(w->request, std::move(resp), 1, clock_.now() - w->started);
  if (w->decoder.nonEvent()) {
    res.body = *w->decoder.nonEvent();
    decodeStatus(res.body, res.apiStatus);
  }
  if (!decodeOk && !w->cancelled) {
    res.outcome = TransportOutcome::kProtocolError;
    res.detail = w->decoder.error();
  }
  if (w->onClose) w->onClose(res);
}

}  // namespace cpscale::kube
