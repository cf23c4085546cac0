// Ctrl-C and SIGTERM handling: the first signal only sets a flag, so that long
// operations (starting a plane, a run) stop at the next safe point, write what they
// have, and clean up what they created. A second signal exits at once.
#pragma once

#include <string>

namespace cpscale {

void installInterruptHandlers();
bool interrupted();
// For tests: pretend a signal arrived (or clear it).
void setInterrupted(bool value);

// While one is alive (a run deleting what it created), a signal does not stop the
// work: the first says cleanup is under way and that another Ctrl-C skips it; the
// next exits at once with exit code 3, naming `cpscale cleanup --run <runId>` for what
// is left. A signal that already stopped the load counts as the first. One at a time.
class CleanupPhase {
 public:
  explicit CleanupPhase(const std::string& runId);
  ~CleanupPhase();
  CleanupPhase(const CleanupPhase&) = delete;
  CleanupPhase& operator=(const CleanupPhase&) = delete;
};

}  // namespace cpscale
