#include "workloads/churn.h"

#include <atomic>
#include <cctype>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>

#include "sim/common/error.h"
#include "sim/engine/periodic_timer.h"
#include "workloads/call_tracker.h"
#include "workloads/setup.h"

namespace cpscale::workloads {

namespace {

using engine::Duration;
using engine::TimePoint;
using nlohmann::json;

bool isKindName(const std::string& s) {
  if (s.empty() || s.size() > 63 || !std::isupper(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

ChurnTarget parseCrdTarget(const YamlField& f, const std::optional<YamlField>& kindField) {
  const std::string full = f.asString();
  const auto dot = full.find('.');
  if (dot == std::string::npos) throw f.error("expected <plural>.<group>, e.g. agentsessions.churn.cpscale.io");
  ChurnTarget t;
  t.type = ChurnTarget::Type::kCrd;
  std::string plural = full.substr(0, dot);
  std::string group = full.substr(dot + 1);
  const std::string suffix = ".cpscale.io";
  if (group.size() <= suffix.size() || group.compare(group.size() - suffix.size(), suffix.size(), suffix) != 0) {
    throw f.error("unknown CRD group '" + group +
                  "': a run installs custom resources only in a subgroup of "
                  "cpscale.io (e.g. churn.cpscale.io)");
  }
  if (!isDnsLabel(plural)) throw f.error("plural '" + plural + "' must be a lower-case DNS label");
  for (std::size_t s = 0, e; s < group.size(); s = e + 1) {
    e = group.find('.', s);
    if (e == std::string::npos) e = group.size();
    if (!isDnsLabel(std::string_view(group).substr(s, e - s))) throw f.error("group '" + group + "' is not a DNS name");
  }
  t.gvr = kube::GroupVersionResource{group, "v1", plural, true};
  t.singular = plural.size() > 1 && plural.back() == 's' ? plural.substr(0, plural.size() - 1) : plural;
  if (kindField) {
    t.kind = kindField->asString();
    if (!isKindName(t.kind)) throw kindField->error("kind must be CamelCase letters and digits");
    t.singular = t.kind;
    for (char& c : t.singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  } else if (plural == "agentsessions") {
    t.kind = "AgentSession";
  } else {
    t.kind = t.singular;
    t.kind[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t.kind[0])));
  }
  return t;
}

ChurnParams ChurnParams::read(const YamlField& e) {
  e.expectMap({"kind", "name", "sessionsPerMinute", "maxSessions", "namespaces", "createQps", "createBurst",
               "objectBytes", "statusInterval", "suspendProbability", "maxSuspends", "dwell", "targets",
               "crdTemplate"});
  ChurnParams p;
  if (auto f = e.get("name")) {
    p.name = f->asString();
    if (!isDnsLabel(p.name, 20)) throw f->error("must be 1-20 lower-case letters, digits or '-'");
  }
  if (auto f = e.get("maxSessions")) {
    p.maxSessions = f->asInt();
    if (p.maxSessions < 0) throw f->error("must not be negative, found " + std::to_string(p.maxSessions));
  }
  YamlField rate = e.require("sessionsPerMinute");
  p.sessionsPerMinute = rate.asDouble();
  if (!(p.sessionsPerMinute > 0 && p.sessionsPerMinute <= 1e7)) {
    throw rate.error("must be a rate above 0 (sessions per minute), found " + rate.asString());
  }
  if (auto f = e.get("namespaces")) p.namespaces = f->asInt(1, 10'000);
  p.create = readRateLimit(e, "createQps", "createBurst", 50);
  if (auto f = e.get("objectBytes")) p.objectBytes = Distribution::read(*f, false, 0, 1'000'000);
  if (auto f = e.get("statusInterval")) p.statusInterval = readDuration(*f, Duration{0}, std::chrono::hours(24));
  if (auto f = e.get("suspendProbability")) {
    p.suspendProbability = f->asDouble();
    if (!(p.suspendProbability >= 0 && p.suspendProbability <= 1)) throw f->error("must be in [0, 1]");
  }
  if (auto f = e.get("maxSuspends")) p.maxSuspends = f->asInt(0, 1000);
  if (auto d = e.get("dwell")) {
    d->expectMap({"running", "suspended"});
    const double lo = 1e6, hi = 86400e9;  // 1 ms .. 1 day
    if (auto f = d->get("running")) {
      p.running = f->isMap()
                      ? Distribution::read(*f, true, lo, hi)
                      : Distribution::exponential(static_cast<double>(readDuration(*f, Duration{1'000'000}).count()));
    }
    if (auto f = d->get("suspended")) {
      p.suspended = f->isMap()
                        ? Distribution::read(*f, true, lo, hi)
                        : Distribution::exponential(static_cast<double>(readDuration(*f, Duration{1'000'000}).count()));
    }
  }
  if (auto ts = e.get("targets")) {
    for (const YamlField& t : ts->items()) {
      t.expectMap({"crd", "kind", "builtin", "weight"});
      ChurnTarget target;
      auto crd = t.get("crd");
      auto builtin = t.get("builtin");
      if (crd.has_value() == builtin.has_value()) throw t.error("give exactly one of 'crd' or 'builtin'");
      if (crd) {
        target = parseCrdTarget(*crd, t.get("kind"));
      } else {
        if (t.get("kind")) throw t.get("kind")->error("'kind' goes with 'crd' only");
        std::string b = builtin->asString();
        if (b == "configmaps") {
          target.type = ChurnTarget::Type::kConfigMap;
          target.gvr = kube::gvr::kConfigMaps;
          target.kind = "ConfigMap";
        } else if (b == "events") {
          target.type = ChurnTarget::Type::kEvent;
          target.gvr = kube::gvr::kEvents;
          target.kind = "Event";
        } else {
          throw builtin->error("unknown built-in kind '" + b + "' (known: configmaps, events)");
        }
      }
      if (auto w = t.get("weight")) {
        target.weight = w->asDouble();
        if (!(target.weight > 0 && target.weight <= 1e6)) throw w->error("must be above 0");
      }
      p.targets.push_back(std::move(target));
    }
    if (p.targets.empty()) throw ts->error("needs at least one target");
  } else {
    p.targets.push_back(parseCrdTarget(YamlField(YAML::Node("agentsessions.churn.cpscale.io"), "", ""), std::nullopt));
  }
  p.crdTemplate =
      e.get("crdTemplate") ? ObjectTemplate::load(*e.get("crdTemplate")) : ObjectTemplate::load("session-crd.yaml");
  return p;
}

// A churn workload's creation bucket on each engine worker (simulator) and run, shared
// by its growths: their sessions queue behind the same client-side limit as the base's.
struct ChurnBuckets {
  std::atomic<std::uint64_t> growths{0};

  TokenBucket& acquire(const engine::Simulator& sim, const std::string& runId, double qps, double burst,
                       engine::TimePoint now) {
    std::lock_guard lock(mu_);
    Entry& e = buckets_[{&sim, runId}];
    if (!e.bucket) e.bucket = std::make_unique<TokenBucket>(qps, burst, now);
    ++e.users;
    return *e.bucket;
  }
  void release(const engine::Simulator& sim, const std::string& runId) {
    std::lock_guard lock(mu_);
    auto it = buckets_.find({&sim, runId});
    if (it != buckets_.end() && --it->second.users == 0) buckets_.erase(it);
  }

 private:
  struct Entry {
    std::unique_ptr<TokenBucket> bucket;
    int users = 0;
  };
  std::mutex mu_;
  std::map<std::pair<const engine::Simulator*, std::string>, Entry> buckets_;
};

ChurnWorkload::ChurnWorkload(ChurnParams params)
    : params_(std::move(params)), buckets_(std::make_shared<ChurnBuckets>()) {
  if (params_.targets.empty()) {
    params_.targets.push_back(
        parseCrdTarget(YamlField(YAML::Node("agentsessions.churn.cpscale.io"), "", ""), std::nullopt));
  }
  if (!params_.crdTemplate) params_.crdTemplate = ObjectTemplate::load("session-crd.yaml");
}

std::string ChurnWorkload::namespaceName(const std::string& runId, const std::string& workload, std::int64_t k) {
  return "cpscale-" + runId + "-" + workload + "-" + std::to_string(k);
}

json ChurnWorkload::crdFor(const ChurnTarget& t) const {
  return params_.crdTemplate->fill(
      {{"group", t.gvr.group}, {"plural", t.gvr.resource}, {"singular", t.singular}, {"kind", t.kind}});
}

// Idempotent: namespaces and CRDs that exist already (a growth's, made by its base) are
// fine.
void ChurnWorkload::prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) {
  validateRunId(runId);
  for (std::int64_t k = 0; k < params_.namespaces; ++k) {
    ensureNamespace(api, namespaceName(runId, params_.name, k), runId, params_.name);
  }
  for (const auto& t : params_.targets) {
    if (t.type == ChurnTarget::Type::kCrd) installCrd(api, clock, crdFor(t), runId, params_.name);
  }
}

std::unique_ptr<Workload> ChurnWorkload::growth(const std::string& field, double from, double to) const {
  if (field != "sessionsPerMinute") return nullptr;
  checkGrowth(*this, field, from, to, 1e7, false);
  // A cap on the population's total: a running base keeps starting up to its own.
  if (params_.maxSessions > 0) return nullptr;
  ChurnParams p = params_;
  p.sessionsPerMinute = to - from;
  // 2^40 ids per growth: no run starts a trillion sessions.
  p.firstSessionId = (buckets_->growths.fetch_add(1) + 1) << 40;  // shared by growths of growths
  auto g = std::make_unique<ChurnWorkload>(std::move(p));
  g->buckets_ = buckets_;
  return g;
}

std::vector<kube::GroupVersionResource> ChurnWorkload::resources() const {
  std::vector<kube::GroupVersionResource> r;
  for (const auto& t : params_.targets) {
    if (std::find(r.begin(), r.end(), t.gvr) == r.end()) r.push_back(t.gvr);
  }
  return r;
}

namespace {

enum class SessionState : std::uint8_t { kCreating, kRunning, kSuspended, kDeleting };

class ChurnInstance;

struct Session {
  Session(ChurnInstance& c, std::uint64_t id, std::uint64_t seed, Duration statusInterval);
  void onStatusTimer();

  ChurnInstance* churn;
  std::uint64_t id;
  // Every draw about this session (its kind, namespace, size, dwells, whether it
  // suspends) comes from its own stream, in its lifecycle's order: the same whichever
  // worker runs it and whatever order the server's answers arrive in.
  engine::RandomStream rng;
  std::uint32_t target = 0;
  std::uint32_t ns = 0;
  std::uint32_t step = 0;
  std::uint32_t suspends = 0;
  SessionState state = SessionState::kCreating;
  // Its writes not answered yet, retries included: its DELETE waits for them.
  std::uint32_t writesInFlight = 0;
  std::optional<engine::PeriodicTimer> status;  // periodic status while running
};

class ChurnInstance final : public WorkloadInstance {
 public:
  ChurnInstance(const ChurnParams& p, WorkloadContext ctx, std::shared_ptr<ChurnBuckets> buckets)
      : p_(p),
        ctx_(std::move(ctx)),
        calls_(ctx_.api),
        events_(ctx_.sim),
        buckets_(std::move(buckets)),
        bucket_(buckets_->acquire(ctx_.sim, ctx_.runId, ctx_.share(p.create.qps),
                                  std::max(1.0, std::ceil(ctx_.share(p.create.burst))), ctx_.sim.now())),
        // A growth draws its own arrivals, not a copy of the base's.
        rng_(ctx_.seed, "churn/" + p.name + (p.firstSessionId == 0 ? "" : "/" + std::to_string(p.firstSessionId))),
        sessionSeed_(engine::streamSeed(ctx_.seed, "churn/" + p.name + "/sessions")),
        nextId_(p.firstSessionId),
        endId_(p.maxSessions > 0 ? p.firstSessionId + static_cast<std::uint64_t>(p.maxSessions)
                                 : std::numeric_limits<std::uint64_t>::max()),
        nextArrival_(ctx_.sim.now()) {
    validateRunId(ctx_.runId);
    // Nothing to set up beyond the CRDs prepare() installed: sessions are the load. The
    // scenario's `warmup` lets the live-session population build up before measuring.
    ctx_.setupDone();
    for (const auto& t : p.targets) totalWeight_ += t.weight;
    scheduleArrival();
  }
  ~ChurnInstance() override {
    stop();
    buckets_->release(ctx_.sim, ctx_.runId);
  }

  void stop() override {
    events_.cancelAll();
    for (auto& [id, s] : sessions_) {
      if (s->status) s->status->stop();
    }
    calls_.cancelAll();
  }

  json summary() const override {
    return {{"sessionsStarted", c_.started},
            {"sessionsCreated", c_.created},
            {"createFailures", c_.createFailed},
            {"statusUpdates", c_.statusUpdates},
            {"suspends", c_.suspends},
            {"resumes", c_.resumes},
            {"deletes", c_.deletes},
            {"writeFailures", c_.writeFailed},
            {"sessionsLive", sessions_.size()},
            {"lastWriteError", lastError_}};
  }

  engine::Simulator& sim() { return ctx_.sim; }

  // Every worker draws the population's whole arrival sequence (one stream, the full
  // rate) and starts the sessions it owns, round-robin by id. So which sessions arrive
  // when is the same for any number of workers, and in the model: a live run and its
  // simulation with one seed are one realization, and their difference is the model's,
  // not sampling noise (a 60 s window's write rate moves ~8 % from seed to seed).
  // maxSessions caps the ids, so the workers' shares add up to it exactly.
  void scheduleArrival() {
    const double rate = p_.sessionsPerMinute / 60.0;
    while (nextId_ < endId_) {
      nextArrival_ += rng_.interArrival(rate);
      const std::uint64_t id = nextId_++;
      if (id % ctx_.workers() != ctx_.workerIndex()) continue;
      events_.at(nextArrival_, [this, id] {
        arrive(id);
        scheduleArrival();
      });
      return;
    }
  }

  void arrive(std::uint64_t id) {
    ++c_.started;
    auto s = std::make_unique<Session>(*this, id, engine::streamSeed(sessionSeed_, id), p_.statusInterval);
    double pick = s->rng.uniform() * totalWeight_;
    while (s->target + 1 < p_.targets.size() && pick >= p_.targets[s->target].weight) {
      pick -= p_.targets[s->target++].weight;
    }
    s->ns = static_cast<std::uint32_t>(s->rng.below(static_cast<std::uint64_t>(p_.namespaces)));
    sessions_.emplace(id, std::move(s));
    // Creation waits for the population's token; the wait is client-side throttling.
    events_.at(bucket_.reserve(ctx_.sim.now()), [this, id] { withSession(id, [this](Session& s) { create(s); }); });
  }

  template <class Fn>
  void withSession(std::uint64_t id, Fn fn) {
    if (auto it = sessions_.find(id); it != sessions_.end()) fn(*it->second);
  }

  std::string objectName(const Session& s) const { return p_.name + "-" + std::to_string(s.id); }
  kube::ResourceRef ref(const Session& s) const {
    return kube::ResourceRef(p_.targets[s.target].gvr)
        .in(ChurnWorkload::namespaceName(ctx_.runId, p_.name, s.ns))
        .named(objectName(s));
  }
  std::int64_t unixNow() const { return ctx_.epochUnixNanos + ctx_.sim.now().time_since_epoch().count(); }

  void create(Session& s) {
    const ChurnTarget& t = p_.targets[s.target];
    const std::string name = objectName(s);
    const std::string ns = ChurnWorkload::namespaceName(ctx_.runId, p_.name, s.ns);
    const auto bytes = static_cast<std::size_t>(p_.objectBytes.sample(s.rng));
    json obj = {{"apiVersion", t.apiVersion()},
                {"kind", t.kind},
                {"metadata", {{"name", name}, {"namespace", ns}, {"labels", ctx_.labels(p_.name)}}}};
    std::string payload = filler(bytes, engine::streamSeed(ctx_.seed, s.id));
    switch (t.type) {
      case ChurnTarget::Type::kCrd:
        obj["spec"] = {{"agent", "agent-" + std::to_string(s.id % 997)}, {"suspend", false}, {"payload", payload}};
        break;
      case ChurnTarget::Type::kConfigMap: obj["data"] = {{"phase", "Pending"}, {"payload", payload}}; break;
      case ChurnTarget::Type::kEvent: {
        const std::string now = rfc3339(unixNow());
        obj["involvedObject"] = {{"kind", "Pod"}, {"namespace", ns}, {"name", name}, {"apiVersion", "v1"}};
        obj["reason"] = "SessionStarted";
        obj["message"] = payload;
        obj["type"] = "Normal";
        obj["count"] = 1;
        obj["firstTimestamp"] = now;
        obj["lastTimestamp"] = now;
        obj["source"] = {{"component", "cpscale-churn"}};
        break;
      }
    }
    auto req = kube::ApiRequest::create(kube::ResourceRef(t.gvr).in(ns), obj);
    req.decode = kube::Decode::kNone;  // the object it gets back is not read
    req.intendedAt = ctx_.sim.now();
    const std::uint64_t id = s.id;
    calls_.call(std::move(req), [this, id](kube::ApiResult r) {
      withSession(id, [&](Session& s) {
        if (!r.ok()) {
          ++c_.createFailed;
          sessions_.erase(id);  // never existed: nothing to delete
          return;
        }
        ++c_.created;
        enterRunning(s);
      });
    });
  }

  void enterRunning(Session& s) {
    s.state = SessionState::kRunning;
    statusUpdate(s);
    if (s.status) s.status->startAfter(p_.statusInterval);
    const std::uint64_t id = s.id;
    events_.at(ctx_.sim.now() + p_.running.sampleDuration(s.rng), [this, id] {
      withSession(id, [this](Session& s) {
        if (s.status) s.status->stop();
        if (static_cast<std::int64_t>(s.suspends) < p_.maxSuspends && s.rng.uniform() < p_.suspendProbability) {
          suspend(s);
        } else {
          remove(s);
        }
      });
    });
  }

  // A write of the session's whose outcome only counts: the actor carries on either
  // way. None once the session is deleting (see remove()).
  void write(Session& s, kube::ApiRequest req, std::uint64_t* okCounter) {
    if (s.state == SessionState::kDeleting) return;
    ++s.writesInFlight;
    send(std::move(req), okCounter, [this, id = s.id] {
      withSession(id, [this](Session& s) {
        if (--s.writesInFlight == 0 && s.state == SessionState::kDeleting) sendDelete(s);
      });
    });
  }

  // Sends `req`, counts its outcome, then runs `answered`.
  template <class Answered>
  void send(kube::ApiRequest req, std::uint64_t* okCounter, Answered answered) {
    req.decode = kube::Decode::kNone;  // only the outcome counts
    req.intendedAt = ctx_.sim.now();
    calls_.call(std::move(req), [this, okCounter, answered](kube::ApiResult r) {
      if (r.ok()) {
        ++*okCounter;
      } else {
        ++c_.writeFailed;
        lastError_ = r.describe();
      }
      answered();
    });
  }

  void statusUpdate(Session& s) {
    const ChurnTarget& t = p_.targets[s.target];
    ++s.step;
    const std::string now = rfc3339(unixNow());
    switch (t.type) {
      case ChurnTarget::Type::kCrd:
        write(s,
              kube::ApiRequest::patch(ref(s).sub("status"), kube::PatchType::kMerge,
                                      {{"status", {{"phase", "Running"}, {"step", s.step}, {"lastUpdate", now}}}}),
              &c_.statusUpdates);
        break;
      case ChurnTarget::Type::kConfigMap:
        write(s,
              kube::ApiRequest::patch(ref(s), kube::PatchType::kMerge,
                                      {{"data", {{"phase", "Running"}, {"step", std::to_string(s.step)}}}}),
              &c_.statusUpdates);
        break;
      case ChurnTarget::Type::kEvent:
        // An event series: the count and last timestamp move.
        write(s,
              kube::ApiRequest::patch(ref(s), kube::PatchType::kMerge, {{"count", s.step + 1}, {"lastTimestamp", now}}),
              &c_.statusUpdates);
        break;
    }
  }

  json suspendPatch(const Session& s, bool suspend) const {
    const ChurnTarget& t = p_.targets[s.target];
    if (t.type == ChurnTarget::Type::kCrd) return {{"spec", {{"suspend", suspend}}}};
    return {{"metadata", {{"annotations", {{"cpscale.io/suspended", suspend ? "true" : "false"}}}}}};
  }

  void suspend(Session& s) {
    s.state = SessionState::kSuspended;
    ++s.suspends;
    write(s, kube::ApiRequest::patch(ref(s), kube::PatchType::kMerge, suspendPatch(s, true)), &c_.suspends);
    const std::uint64_t id = s.id;
    events_.at(ctx_.sim.now() + p_.suspended.sampleDuration(s.rng), [this, id] {
      withSession(id, [this](Session& s) {
        write(s, kube::ApiRequest::patch(ref(s), kube::PatchType::kMerge, suspendPatch(s, false)), &c_.resumes);
        enterRunning(s);
      });
    });
  }

  // An actor writes nothing after its DELETE: its status timer stops, no write starts
  // once it is deleting, and the DELETE itself waits until every write the session
  // sent is answered, retries included. A status PATCH still in flight (another
  // connection or replica may serve it after the DELETE) or retried after a 429 would
  // otherwise find the object gone: a 404, counted as a write failure.
  void remove(Session& s) {
    if (s.status) s.status->stop();
    s.state = SessionState::kDeleting;
    if (s.writesInFlight == 0) sendDelete(s);
  }

  void sendDelete(Session& s) {
    send(kube::ApiRequest::remove(ref(s)), &c_.deletes, [] {});
    sessions_.erase(s.id);  // the request owns what it needs; the actor is done
  }

 private:
  struct Counts {
    std::uint64_t started = 0, created = 0, createFailed = 0, statusUpdates = 0, suspends = 0, resumes = 0, deletes = 0,
                  writeFailed = 0;
  };
  const ChurnParams& p_;
  WorkloadContext ctx_;
  CallTracker calls_;
  EventTracker events_;
  std::shared_ptr<ChurnBuckets> buckets_;
  TokenBucket& bucket_;            // this worker's, shared with the entry's growths
  engine::RandomStream rng_;       // the population's arrivals
  std::uint64_t sessionSeed_;      // sessions' streams: streamSeed(sessionSeed_, id)
  std::uint64_t nextId_;           // the next arrival's id, whichever worker owns it
  std::uint64_t endId_;            // maxSessions: no id from here on
  engine::TimePoint nextArrival_;  // the next arrival's time
  double totalWeight_ = 0;
  std::unordered_map<std::uint64_t, std::unique_ptr<Session>> sessions_;
  std::string lastError_;
  Counts c_;
};

Session::Session(ChurnInstance& c, std::uint64_t i, std::uint64_t seed, Duration statusInterval)
    : churn(&c), id(i), rng(seed) {
  if (statusInterval > Duration{0}) {
    status.emplace(c.sim(), engine::PeriodicTimer::bind<&Session::onStatusTimer>(this), statusInterval);
  }
}

void Session::onStatusTimer() { churn->statusUpdate(*this); }

}  // namespace

std::unique_ptr<WorkloadInstance> ChurnWorkload::start(WorkloadContext& ctx) {
  return std::make_unique<ChurnInstance>(params_, ctx, buckets_);
}

}  // namespace cpscale::workloads
