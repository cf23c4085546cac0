// Ctrl-C while a run cleans up: the first one is acknowledged and the cleanup goes
// on; the next exits at once with exit code 3 and says how to finish the cleanup.
// Each case runs in a forked child (death test): the handlers are process-wide.
#include "sim/common/interrupt.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace cpscale {
namespace {

using ::testing::ExitedWithCode;
using ::testing::KilledBySignal;

class InterruptDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(InterruptDeathTest, FirstCtrlCDuringCleanupIsAcknowledgedAndTheSecondExitsWithThree) {
  EXPECT_EXIT(
      {
        installInterruptHandlers();
        setInterrupted(false);
        CleanupPhase cleaning("r1234567");
        ::raise(SIGINT);
        // Still running: the cleanup goes on; the run loop sees the interruption.
        if (!interrupted()) ::_exit(10);
        ::raise(SIGINT);
        ::_exit(11);  // not reached
      },
      ExitedWithCode(3),
      "press Ctrl-C again to exit without cleaning up.*\n.*exiting without cleaning up; remove what is left with "
      "`cpscale cleanup --run r1234567`");
}

TEST_F(InterruptDeathTest, ACtrlCThatStoppedTheLoadCountsAsTheFirst) {
  EXPECT_EXIT(
      {
        installInterruptHandlers();
        setInterrupted(false);
        ::raise(SIGINT);  // stops the load
        if (!interrupted()) ::_exit(10);
        CleanupPhase cleaning("r1");
        ::raise(SIGTERM);
        ::_exit(11);
      },
      ExitedWithCode(3), "interrupted; stopping and cleaning up.*\n.*exiting without cleaning up");
}

TEST_F(InterruptDeathTest, OneCtrlCDuringCleanupLetsItFinish) {
  EXPECT_EXIT(
      {
        installInterruptHandlers();
        setInterrupted(false);
        {
          CleanupPhase cleaning("r1");
          ::raise(SIGINT);
        }
        ::_exit(interrupted() ? 0 : 10);
      },
      ExitedWithCode(0), "press Ctrl-C again");
}

TEST_F(InterruptDeathTest, OutsideCleanupTheSecondSignalStillKills) {
  EXPECT_EXIT(
      {
        installInterruptHandlers();
        setInterrupted(false);
        { CleanupPhase cleaning("r1"); }
        ::raise(SIGINT);
        ::raise(SIGINT);
        ::_exit(11);
      },
      KilledBySignal(SIGINT), "interrupted; stopping");
}

}  // namespace
}  // namespace cpscale
