#include "sim/controlplane/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <sstream>
#include <thread>

#include "sim/common/error.h"

namespace cpscale::controlplane {

std::optional<std::uint64_t> processStartTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  // Field 2 (comm) is parenthesised and may contain spaces: parse after the last ')'.
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  char state = '?';
  rest >> state;
  if (state == 'Z' || state == 'X') return std::nullopt;
  // After state (field 3) come fields 4..22; starttime is field 22.
  for (int i = 4; i <= 22; ++i) rest >> field;
  try {
    return std::stoull(field);
  } catch (...) {
    return std::nullopt;
  }
}

bool isRunning(const ProcessIdentity& id) {
  if (id.pid <= 0) return false;
  auto ticks = processStartTicks(id.pid);
  return ticks && *ticks == id.startTicks;
}

ProcessIdentity spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  const std::string& exe = options.argv[0];
  if (::access(exe.c_str(), X_OK) != 0) throw UnavailableError("cannot execute " + exe + ": " + std::strerror(errno));

  int logFd = ::open(options.logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (logFd < 0) throw UnavailableError("cannot open log " + options.logFile.string() + ": " + std::strerror(errno));

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Built before the fork: the child only hands it to the kernel.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : options.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  const bool pin = !options.cpus.empty();

  // A pipe whose write end closes on exec tells the parent whether exec succeeded.
  int execPipe[2];
  if (::pipe2(execPipe, O_CLOEXEC) != 0) {
    ::close(logFd);
    throw UnavailableError(std::string("pipe: ") + std::strerror(errno));
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(logFd);
    throw UnavailableError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(execPipe[0]);
    // Own process group: a Ctrl-C at the terminal reaches cpscale, which then stops
    // the plane in order, instead of killing etcd under a running apiserver.
    ::setpgid(0, 0);
    if (!options.detached) {
      // SIGKILL, not SIGTERM: the parent died without stopping the plane in order, so
      // etcd may already be gone, and a kube-apiserver told to shut down gracefully
      // then waits on it forever.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
    } else {
      ::setsid();
    }
    if (pin && ::sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
      int err = errno;
      [[maybe_unused]] auto w = ::write(execPipe[1], &err, sizeof err);
      ::_exit(127);
    }
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(logFd, STDOUT_FILENO);
    ::dup2(logFd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    int err = errno;
    [[maybe_unused]] auto n = ::write(execPipe[1], &err, sizeof err);
    ::_exit(127);
  }
  ::close(logFd);
  ::close(execPipe[1]);
  int childErr = 0;
  ssize_t n = ::read(execPipe[0], &childErr, sizeof childErr);
  ::close(execPipe[0]);
  if (n == sizeof childErr) {
    ::waitpid(pid, nullptr, 0);
    throw UnavailableError("cannot execute " + exe + ": " + std::strerror(childErr));
  }
  ProcessIdentity id{pid, processStartTicks(pid).value_or(0)};
  return id;
}

void pinThisThread(const std::vector<int>& list) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : list) {
    if (c < 0 || c >= CPU_SETSIZE)
      throw ConfigError("command line", "--pin", "CPU " + std::to_string(c) + " does not exist");
    CPU_SET(c, &cpus);
  }
  if (::sched_setaffinity(0, sizeof cpus, &cpus) != 0)
    throw ConfigError("command line", "--pin", std::string("the kernel refused the CPU set: ") + std::strerror(errno));
}

std::optional<std::string> reapIfExited(const ProcessIdentity& id) {
  int status = 0;
  pid_t r = ::waitpid(id.pid, &status, WNOHANG);
  if (r == id.pid) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
    return "exited";
  }
  if (r < 0 && errno == ECHILD && !isRunning(id)) return "exited";
  return std::nullopt;
}

bool terminate(const ProcessIdentity& id, std::chrono::milliseconds grace) {
  if (!isRunning(id)) {
    reapIfExited(id);
    return false;
  }
  ::kill(id.pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (reapIfExited(id) || !isRunning(id)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (isRunning(id)) ::kill(id.pid, SIGKILL);
  for (int i = 0; i < 100 && isRunning(id); ++i) {
    reapIfExited(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reapIfExited(id);
  return true;
}

std::string tailFile(const std::filesystem::path& path, int lines) {
  std::ifstream in(path);
  if (!in) return "(no log at " + path.string() + ")";
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    last.push_back(std::move(line));
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "  | " + l + "\n";
  return out;
}

}  // namespace cpscale::controlplane
