// A scenario's faults (scenario.h, `faults:`) carried out on the target's members while
// the run goes on, at their times after the steady window started. Live, each fault on
// a thread of its own, so a restart that waits for readiness holds up nothing else; in
// virtual time, each step an event on the run's engine, at its exact time. What happened
// is recorded as incidents with their windows (kill to ready again) and as figures
// measured here, the same either way.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/engine/simulator.h"
#include "sim/metrics/figures.h"
#include "sim/result/result.h"
#include "sim/scenario/scenario.h"

namespace cpscale::run {

// The members a fault can act on: a local plane's (controlplane::LocalPlane) or the
// model's (model::ModelPlane).
class MemberFaults {
 public:
  virtual ~MemberFaults() = default;
  // Every member's name, known before the target is opened (checked against the
  // scenario before anything starts).
  virtual std::vector<std::string> members() const = 0;
  virtual void kill(const std::string& member) = 0;
  // Returns once the member is ready again; throws UnavailableError if it is not, or
  // once `abandon` says the run no longer waits for it.
  virtual void restart(const std::string& member, const std::function<bool()>& abandon) = 0;
  // In virtual time: starts the member again and returns at once; `ready` runs on the
  // engine once the member is ready again. Members on the wall clock have only restart().
  virtual void restartThen(const std::string& member, std::function<void()> ready);
  virtual void pause(const std::string& member) = 0;
  virtual void resume(const std::string& member) = 0;
  // A member that exited on its own (crashed() said so) is down: restart() may follow.
  virtual void markDown(const std::string& member) = 0;
};

// ConfigError naming the fault's file:line and field for a member the target does not
// have.
void validateFaults(const std::vector<scenario::FaultSpec>& faults, const std::vector<std::string>& members);

class FaultInjector {
 public:
  // `clock`: the run's clock (t = 0 at the run's origin), as phases and incidents use.
  FaultInjector(MemberFaults& members, std::vector<scenario::FaultSpec> faults, const engine::Clock& clock);
  // In virtual time, on the run's engine (its clock is the run's): every fault strikes,
  // and every restart and resume is asked for, as an event at its exact time.
  FaultInjector(MemberFaults& members, std::vector<scenario::FaultSpec> faults, engine::Simulator& engine);
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // Starts each fault's thread (or schedules its event); fault i acts at
  // steadyStart + faults[i].at.
  void start(engine::TimePoint steadyStart);
  // A member that exited during the run (a consequence of a fault, e.g. a
  // controller-manager that lost its leader Lease while its apiserver was down) is
  // started again as its kubelet would start a static pod, and the run goes on.
  void recover(const std::string& member, const std::string& how);
  // The run is over: what has not happened is not done (a member killed for good, or
  // whose restart is still due, stays down), a frozen member is resumed, threads joined.
  void finish();

  // A member a fault (or an exit) left down when the run ended, or "".
  std::string downAtEnd() const;
  // "fault" incidents (one per fault, from when it struck to when the member was ready
  // again, or to the run's end) and "member-exited" ones for recovered members.
  std::vector<result::Incident> incidents(engine::TimePoint end) const;
  // fault_downtime_seconds{member, fault}: from the kill (or exit) to ready again, and
  // fault_restart_seconds{member, fault}: the restart alone; unavailable for a member
  // that never came back, saying why.
  std::vector<metrics::Figure> figures() const;

 private:
  struct Record {
    std::string member;
    std::string kind;       // "kill", "stop", "exited"
    std::string detail;     // what the scenario asked (or how the member exited)
    bool comesBack = true;  // a restart (or resume) is due; false for a kill without restartAfter
    std::optional<engine::TimePoint> struck, restartAsked, ready;
    std::string failure;  // the restart failed: why
  };
  // Waits until `t` on the run's clock; false when the run ended first.
  bool waitUntil(engine::TimePoint t);
  void carryOut(std::size_t index, engine::TimePoint steadyStart);
  // The record of fault `index` striking at `struck`; kNone once the run is over.
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t strike(std::size_t index, engine::TimePoint struck);
  // Virtual time: fault `index` strikes now; what follows is scheduled.
  void strikeAt(std::size_t index);
  void restartInto(std::size_t record);
  void resumeInto(std::size_t record);

  MemberFaults& members_;
  std::vector<scenario::FaultSpec> faults_;
  const engine::Clock& clock_;
  engine::Simulator* engine_ = nullptr;  // virtual time: the run's engine
  std::vector<engine::EventId> events_;  // virtual time: what is still due
  // Virtual time: a member's readiness arrives as the target's event, which may come
  // after this injector is gone.
  std::shared_ptr<const bool> alive_ = std::make_shared<const bool>(true);
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<Record> records_;
  std::vector<std::string> paused_;
  std::vector<std::thread> threads_;
};

}  // namespace cpscale::run
