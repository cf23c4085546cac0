#include "sim/controlplane/process.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"

namespace cpscale::controlplane {
namespace {
namespace fs = std::filesystem;

fs::path logPath() { return fs::path(::testing::TempDir()) / ("proc-" + std::to_string(::getpid()) + ".log"); }

TEST(ProcessTest, SpawnRecordsIdentityAndTerminateStopsIt) {
  ProcessIdentity id = spawn({{"/bin/sleep", "60"}, logPath(), false, {}});
  ASSERT_GT(id.pid, 0);
  EXPECT_TRUE(isRunning(id));
  EXPECT_EQ(processStartTicks(id.pid), id.startTicks);
  EXPECT_TRUE(terminate(id, std::chrono::seconds(5)));
  EXPECT_FALSE(isRunning(id));
  EXPECT_EQ(::kill(id.pid, 0), -1) << "the child must have been reaped";
}

TEST(ProcessTest, ADifferentStartTimeIsNeverSignalled) {
  ProcessIdentity id = spawn({{"/bin/sleep", "60"}, logPath(), false, {}});
  ProcessIdentity impostor{id.pid, id.startTicks + 1};  // as if the pid had been reused
  EXPECT_FALSE(isRunning(impostor));
  EXPECT_FALSE(terminate(impostor, std::chrono::seconds(1)));
  EXPECT_TRUE(isRunning(id)) << "a recorded identity that does not match must not be signalled";
  terminate(id, std::chrono::seconds(5));
}

TEST(ProcessTest, OutputGoesToTheLogAndExitIsReported) {
  fs::path log = logPath();
  fs::remove(log);
  ProcessIdentity id = spawn({{"/bin/sh", "-c", "echo first; echo second; exit 3"}, log, false, {}});
  std::optional<std::string> how;
  for (int i = 0; i < 500 && !how; ++i) {
    how = reapIfExited(id);
    if (!how) ::usleep(10'000);  // a real child process: only the wall clock moves it
  }
  ASSERT_TRUE(how);
  EXPECT_EQ(*how, "exited with status 3");
  std::string tail = tailFile(log, 1);
  EXPECT_NE(tail.find("second"), std::string::npos);
  EXPECT_EQ(tail.find("first"), std::string::npos);
}

TEST(ProcessTest, MissingExecutableIsUnavailable) {
  EXPECT_THROW(spawn({{"/nonexistent/kube-apiserver"}, logPath(), false, {}}), UnavailableError);
}

}  // namespace
}  // namespace cpscale::controlplane
