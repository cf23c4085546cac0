// A scenario's faults (scenario.h, `faults:`) carried out on the target's members while
// the run goes on: each fault on a thread of its own, at its time after the steady
// window started, so a restart that waits for readiness holds up nothing else. What
// happened is recorded as incidents with their windows (kill to ready again) and as
// figures measured here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/metrics/figures.h"
#include "sim/result/result.h"
#include "sim/scenario/scenario.h"

namespace cpscale::cli {

// The members a fault can act on: a local plane's (controlplane::LocalPlane).
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
  ~FaultInjector();
  FaultInjector(const FaultInjector&) = delete;
  FaultInjector& operator=(const FaultInjector&) = delete;

  // Starts each fault's thread; fault i acts at steadyStart + faults[i].at.
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
  std::vector<reports::Incident> incidents(engine::TimePoint end) const;
  // fault_downtime_seconds{member, fault}: from the kill (or exit) to ready again, and
  // fault_restart_seconds{member, fault}: the restart alone; unavailable for a member
  // that never came back, saying why.
  std::vector<metrics::Figure> figures() const;

 private:
  struct Record {
    std::string member;
    std::string kind;    // "kill", "stop", "exited"
    std::string detail;  // what the scenario asked (or how the member exited)
    bool comesBack = true;  // a restart (or resume) is due; false for a kill without restartAfter
    std::optional<engine::TimePoint> struck, restartAsked, ready;
    std::string failure;  // the restart failed: why
  };
  // Waits until `t` on the run's clock; false when the run ended first.
  bool waitUntil(engine::TimePoint t);
  void carryOut(std::size_t index, engine::TimePoint steadyStart);
  void restartInto(std::size_t record);

  MemberFaults& members_;
  std::vector<scenario::FaultSpec> faults_;
  const engine::Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<Record> records_;
  std::vector<std::string> paused_;
  std::vector<std::thread> threads_;
};

}  // namespace cpscale::cli
