// Child processes of the local plane. A process is identified by (pid, start time) so
// that stopping a recorded plane can never signal an unrelated process that reused
// the pid.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace cpscale::controlplane {

struct ProcessIdentity {
  pid_t pid = 0;
  // Start time in clock ticks since boot (/proc/<pid>/stat field 22).
  std::uint64_t startTicks = 0;
};

// Start time of a live process, or nullopt if there is no such process.
std::optional<std::uint64_t> processStartTicks(pid_t pid);
// True if the process exists, is not a zombie, and is the one that was recorded.
bool isRunning(const ProcessIdentity& id);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is the executable path
  std::filesystem::path logFile;  // stdout and stderr are appended here
  // Survive the parent (cpscale up). Otherwise the child gets SIGKILL when the
  // parent dies, so a crashed test or run never leaves a plane behind.
  bool detached = false;
  // The CPUs the process (and every thread it starts) may run on, set before exec as
  // `taskset -c` would; empty: wherever the scheduler likes. A Go binary sizes
  // GOMAXPROCS from this set.
  std::vector<int> cpus;
};

// Restricts the calling process's threads started from now on (and the caller) to
// `cpus`; throws ConfigError naming the CPU when the kernel refuses the set.
void pinThisThread(const std::vector<int>& cpus);

// Starts the process; throws UnavailableError if it cannot be executed.
ProcessIdentity spawn(const SpawnOptions& options);

// SIGTERM, wait up to `grace`, then SIGKILL. Reaps the child if it is ours. Returns
// false if the recorded process was not running (already gone or pid reused).
bool terminate(const ProcessIdentity& id, std::chrono::milliseconds grace);

// Non-blocking: if `id` is our child and has exited, reaps it and returns a
// description ("exited with status 1", "killed by signal 9").
std::optional<std::string> reapIfExited(const ProcessIdentity& id);

// The last `lines` lines of a log file (for crash reports).
std::string tailFile(const std::filesystem::path& path, int lines);

}  // namespace cpscale::controlplane
