// Where the local plane's members and the load generator run: each role pinned to a
// set of CPUs (as `taskset -c` would), so that a measurement of one member's cost per
// request is not inflated by the others competing for its cores. A calibration records
// the placement its probes ran with, and the model queues each member's work at the
// cores of its own set.
//
//   cpscale calibrate --pin isolated                      kube-apiserver alone on the last CPU
//   cpscale run ... --pin kube-apiserver=1 --pin etcd=0 --pin generator=0
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cpscale::controlplane {

// The roles a placement names: the plane's members by role, and the generator (the
// cpscale process itself).
inline constexpr std::string_view kPlacementRoles[] = {"kube-apiserver", "etcd", "kube-controller-manager",
                                                       "kube-scheduler", "generator"};

struct Placement {
  // role -> CPU ids, ascending. A role not named runs anywhere.
  std::map<std::string, std::vector<int>> cpus;

  bool empty() const { return cpus.empty(); }
  const std::vector<int>* of(std::string_view role) const;
  // "kube-apiserver=1 etcd=0 ...", in kPlacementRoles order; "" when empty.
  std::string text() const;
  bool operator==(const Placement&) const = default;
};

// A `taskset -c` list: "0", "1-3", "0,2-3". Throws ConfigError(where, field) when it is
// not one, or names a CPU at or past `cpusOnline`.
std::vector<int> parseCpuList(std::string_view text, int cpusOnline, const std::string& where,
                              const std::string& field);
std::string cpuListText(const std::vector<int>& cpus);  // "0,2-3"

// The --pin values: each "ROLE=CPUS", or the one word "isolated". Throws ConfigError
// naming --pin for an unknown role, a role given twice, or a CPU that is not online.
Placement parsePlacement(const std::vector<std::string>& entries, int cpusOnline);

// kube-apiserver alone on the last CPU; etcd alone on the one before when there are
// at least three; everything else (etcd on two CPUs, the controllers, the generator)
// on CPU 0. On one CPU: empty (nothing to isolate).
Placement isolatedPlacement(int cpusOnline);

// The CPUs this machine has online.
int cpusOnline();

}  // namespace cpscale::controlplane
