#include "sim/common/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace cpscale {
namespace {

std::atomic<bool> g_interrupted{false};

void onSignal(int sig) {
  if (g_interrupted.exchange(true)) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  static const char msg[] = "\ncpscale: interrupted; stopping and cleaning up (again to force)\n";
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
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

}  // namespace cpscale
