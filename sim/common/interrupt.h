// Ctrl-C and SIGTERM handling: the first signal only sets a flag, so that long
// operations (starting a plane, a run) stop at the next safe point, write what they
// have, and clean up what they created. A second signal exits at once.
#pragma once

namespace cpscale {

void installInterruptHandlers();
bool interrupted();
// For tests: pretend a signal arrived (or clear it).
void setInterrupted(bool value);

}  // namespace cpscale
