#include "sim/common/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "sim/common/error.h"

namespace cpscale {
namespace {

std::atomic<bool> g_interrupted{false};
std::atomic<bool> g_cleaning{false};
// Written before g_cleaning is set, read only by the handler while it is: formatted
// ahead because a handler may not allocate.
char g_abandonMessage[256];

void say(const char* msg, std::size_t n) { [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, n); }

void onSignal(int sig) {
  if (g_cleaning.load()) {
    if (g_interrupted.exchange(true)) {
      say(g_abandonMessage, std::strlen(g_abandonMessage));
      ::_exit(static_cast<int>(ExitCode::kUnavailable));
    }
    static const char msg[] =
        "\ncpscale: cleaning up what the run created; press Ctrl-C again to exit without cleaning up\n";
    say(msg, sizeof msg - 1);
    return;
  }
  if (g_interrupted.exchange(true)) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  static const char msg[] = "\ncpscale: interrupted; stopping and cleaning up (again to force)\n";
  say(msg, sizeof msg - 1);
}

}  // namespace

void installInterruptHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }
void setInterrupted(bool value) { g_interrupted.store(value); }

CleanupPhase::CleanupPhase(const std::string& runId) {
  std::string msg = "\ncpscale: exiting without cleaning up; remove what is left with `cpscale cleanup --run " +
                    runId.substr(0, 64) + "`\n";
  std::strncpy(g_abandonMessage, msg.c_str(), sizeof g_abandonMessage - 1);
  g_abandonMessage[sizeof g_abandonMessage - 1] = '\0';
  g_cleaning.store(true);
}

CleanupPhase::~CleanupPhase() { g_cleaning.store(false); }

}  // namespace cpscale
