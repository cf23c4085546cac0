#include "sim/run/faults.h"

#include <algorithm>
#include <cstdio>

#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/run/supervisor.h"  // secondsAt

namespace cpscale::run {

namespace {

std::string seconds(engine::Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

void MemberFaults::restartThen(const std::string& member, std::function<void()>) {
  throw std::logic_error("restarting " + member + ": its plane runs on the wall clock (restart())");
}

void validateFaults(const std::vector<scenario::FaultSpec>& faults, const std::vector<std::string>& members) {
  for (const auto& f : faults) {
    if (std::find(members.begin(), members.end(), f.member) != members.end()) continue;
    std::string known;
    for (const auto& m : members) known += (known.empty() ? "" : ", ") + m;
    throw ConfigError(f.where, f.path + "." + std::string(scenario::toString(f.action)),
                      "the plane has no member '" + f.member + "' (it has " + known + ")");
  }
}

FaultInjector::FaultInjector(MemberFaults& members, std::vector<scenario::FaultSpec> faults, const engine::Clock& clock)
    : members_(members), faults_(std::move(faults)), clock_(clock) {}

FaultInjector::FaultInjector(MemberFaults& members, std::vector<scenario::FaultSpec> faults, engine::Simulator& engine)
    : members_(members), faults_(std::move(faults)), clock_(engine.clock()), engine_(&engine) {}

FaultInjector::~FaultInjector() { finish(); }

void FaultInjector::start(engine::TimePoint steadyStart) {
  for (std::size_t i = 0; i < faults_.size(); ++i) {
    if (engine_)
      events_.push_back(engine_->scheduleAt(steadyStart + faults_[i].at, [this, i] { strikeAt(i); }));
    else
      threads_.emplace_back([this, i, steadyStart] { carryOut(i, steadyStart); });
  }
}

bool FaultInjector::waitUntil(engine::TimePoint t) {
  std::unique_lock lock(mu_);
  // The run's clock is the wall clock from the run's origin: wait in short slices on it.
  while (!done_) {
    const auto now = clock_.now();
    if (now >= t) return true;
    cv_.wait_for(lock, std::min<engine::Duration>(t - now, std::chrono::milliseconds(50)));
  }
  return false;
}

std::size_t FaultInjector::strike(std::size_t index, engine::TimePoint struck) {
  const scenario::FaultSpec& f = faults_[index];
  std::lock_guard lock(mu_);
  if (done_) return kNone;
  Record rec;
  rec.member = f.member;
  rec.kind = std::string(scenario::toString(f.action));
  // Live, a signal; in virtual time, the model's member.
  const std::string kill = engine_ ? "killed" : "SIGKILL", stop = engine_ ? "frozen" : "SIGSTOP";
  rec.detail = f.action == scenario::FaultSpec::Action::kKill
                   ? kill + " at " + formatDuration(f.at) + " into the steady window" +
                         (f.restartAfter ? ", restart after " + formatDuration(*f.restartAfter) : ", not restarted")
                   : stop + " at " + formatDuration(f.at) + " into the steady window for " + formatDuration(f.stopFor);
  rec.struck = struck;
  rec.comesBack = f.action == scenario::FaultSpec::Action::kStop || f.restartAfter.has_value();
  records_.push_back(std::move(rec));
  if (f.action == scenario::FaultSpec::Action::kStop) paused_.push_back(f.member);
  return records_.size() - 1;
}

void FaultInjector::carryOut(std::size_t index, engine::TimePoint steadyStart) {
  const scenario::FaultSpec& f = faults_[index];
  if (!waitUntil(steadyStart + f.at)) return;
  const engine::TimePoint struck = clock_.now();
  const std::size_t r = strike(index, struck);
  if (r == kNone) return;
  try {
    if (f.action == scenario::FaultSpec::Action::kKill) {
      members_.kill(f.member);
      if (!f.restartAfter) return;
      if (!waitUntil(struck + *f.restartAfter)) return;
      restartInto(r);
    } else {
      members_.pause(f.member);
      // finish() resumes what is still frozen when the run ends first.
      if (!waitUntil(struck + f.stopFor)) return;
      resumeInto(r);
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    records_[r].failure = e.what();
  }
}

void FaultInjector::strikeAt(std::size_t index) {
  const scenario::FaultSpec& f = faults_[index];
  const engine::TimePoint struck = clock_.now();
  const std::size_t r = strike(index, struck);
  if (r == kNone) return;
  try {
    if (f.action == scenario::FaultSpec::Action::kKill) {
      members_.kill(f.member);
      if (f.restartAfter)
        events_.push_back(engine_->scheduleAt(struck + *f.restartAfter, [this, r] { restartInto(r); }));
    } else {
      members_.pause(f.member);
      events_.push_back(engine_->scheduleAt(struck + f.stopFor, [this, r] { resumeInto(r); }));
    }
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    records_[r].failure = e.what();
  }
}

void FaultInjector::resumeInto(std::size_t r) {
  std::lock_guard lock(mu_);
  if (done_) return;  // finish() resumes it
  const std::string member = records_[r].member;
  paused_.erase(std::find(paused_.begin(), paused_.end(), member));
  try {
    members_.resume(member);
    records_[r].ready = clock_.now();
  } catch (const std::exception& e) {
    records_[r].failure = e.what();
  }
}

void FaultInjector::restartInto(std::size_t r) {
  std::string member;
  {
    std::lock_guard lock(mu_);
    records_[r].restartAsked = clock_.now();
    member = records_[r].member;
  }
  if (engine_) {
    // Ready is the member's own event; after finish() it is not this run's.
    try {
      members_.restartThen(member, [this, r, alive = std::weak_ptr<const bool>(alive_)] {
        if (alive.expired()) return;
        std::lock_guard lock(mu_);
        if (!done_) records_[r].ready = clock_.now();
      });
    } catch (const std::exception& e) {
      std::lock_guard lock(mu_);
      records_[r].failure = e.what();
    }
    return;
  }
  try {
    members_.restart(member, [this] {
      std::lock_guard lock(mu_);
      return done_;
    });
    std::lock_guard lock(mu_);
    records_[r].ready = clock_.now();
  } catch (const std::exception& e) {
    std::lock_guard lock(mu_);
    records_[r].failure = e.what();
  }
}

void FaultInjector::recover(const std::string& member, const std::string& how) {
  members_.markDown(member);
  std::size_t r;
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    Record rec;
    rec.member = member;
    rec.kind = "exited";
    rec.detail = how.substr(0, how.find(';'));
    rec.struck = clock_.now();
    r = records_.size();
    records_.push_back(std::move(rec));
    if (!engine_) {
      threads_.emplace_back([this, r] { restartInto(r); });
      return;
    }
  }
  restartInto(r);
}

void FaultInjector::finish() {
  std::vector<std::thread> threads;
  std::vector<engine::EventId> events;
  {
    std::lock_guard lock(mu_);
    if (done_ && threads_.empty() && events_.empty()) return;
    done_ = true;
    threads.swap(threads_);
    events.swap(events_);
  }
  // What has not struck (or been asked for) by now does not happen.
  for (engine::EventId e : events) engine_->cancel(e);
  cv_.notify_all();
  for (auto& t : threads) t.join();
  std::lock_guard lock(mu_);
  for (const auto& m : paused_) {
    try {
      members_.resume(m);
    } catch (const std::exception&) {
    }
  }
  paused_.clear();
}

std::string FaultInjector::downAtEnd() const {
  std::lock_guard lock(mu_);
  for (const auto& r : records_)
    if (r.kind != "stop" && !r.ready) return r.member;
  return "";
}

std::vector<result::Incident> FaultInjector::incidents(engine::TimePoint end) const {
  std::lock_guard lock(mu_);
  std::vector<result::Incident> out;
  for (const auto& r : records_) {
    result::Incident i;
    i.kind = r.kind == "exited" ? "member-exited" : "fault";
    i.member = r.member;
    i.atSeconds = secondsAt(*r.struck);
    i.untilSeconds = secondsAt(r.ready.value_or(end));
    std::string what = r.kind == "exited" ? r.detail : r.kind + ": " + r.detail;
    if (r.ready)
      what += r.kind == "stop" ? "; resumed after " + seconds(*r.ready - *r.struck)
                               : "; ready again " + seconds(*r.ready - *r.struck) + " after it went down";
    else if (!r.failure.empty())
      what += std::string(r.restartAsked ? "; restart failed: " : "; failed: ") + r.failure;
    else if (r.restartAsked || r.kind == "stop")
      what += "; still " + std::string(r.kind == "stop" ? "frozen" : "starting") + " when the run ended";
    else if (!r.comesBack)
      what += "; down until the run ended";
    else
      what += "; the run ended before its restart";
    i.detail = what;
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<metrics::Figure> FaultInjector::figures() const {
  std::lock_guard lock(mu_);
  std::vector<metrics::Figure> out;
  for (std::size_t k = 0; k < records_.size(); ++k) {
    const Record& r = records_[k];
    metrics::Labels l{{"fault", std::to_string(k)}, {"member", r.member}, {"action", r.kind}};
    const std::string why = !r.failure.empty() ? "it did not come back: " + r.failure
                            : r.kind == "stop" ? "it was still frozen when the run ended"
                            : r.restartAsked   ? "it was still starting when the run ended"
                                               : "it was not started again before the run ended";
    if (r.ready)
      out.push_back(metrics::Figure::measured("fault_downtime_seconds", l,
                                              std::chrono::duration<double>(*r.ready - *r.struck).count(), "s",
                                              metrics::Source::kClient));
    else
      out.push_back(metrics::Figure::unavailable("fault_downtime_seconds", l, "s", metrics::Source::kClient, why));
    if (r.kind == "stop") continue;
    if (r.ready && r.restartAsked)
      out.push_back(metrics::Figure::measured("fault_restart_seconds", l,
                                              std::chrono::duration<double>(*r.ready - *r.restartAsked).count(), "s",
                                              metrics::Source::kClient));
    else
      out.push_back(metrics::Figure::unavailable("fault_restart_seconds", l, "s", metrics::Source::kClient, why));
  }
  return out;
}

}  // namespace cpscale::run
