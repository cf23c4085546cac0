// The benchmarks that measure a whole `cpscale` command: the built binary run as a
// child process from the source tree (so scenarios/ and profiles/ resolve as in the
// README), its result.json read back. The bench and the CLI cannot disagree: they are
// the same run.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "sim/metrics/figures.h"
#include "sim/result/result.h"

namespace cpscale::bench {

// A steady-window figure's value, or -1 when the run did not measure it.
inline double steadyFigure(const result::RunResult& r, std::string_view name, const metrics::Labels& labels = {}) {
  std::vector<metrics::Figure> steady;
  for (const auto& f : r.figures)
    if (f.window == metrics::Window::kSteady) steady.push_back(f);
  const metrics::Figure* f = metrics::findFigure(steady, name, labels);
  return f && f->available() ? *f->value : -1;
}

// Runs the cpscale binary with `args` (stdout and stderr to `log`); its exit code, or -1.
inline int runCli(const std::vector<std::string>& args, const std::filesystem::path& log) {
  std::vector<char*> argv;
  std::string bin = CPSCALE_BINARY;
  argv.push_back(bin.data());
  std::vector<std::string> copy = args;
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    if (::chdir(CPSCALE_SOURCE_DIR) != 0) ::_exit(127);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace cpscale::bench
