// Pinning the plane's members and the generator to CPUs: the --pin syntax, the
// isolated default, and a spawned child that really runs on the set it was given.
#include "sim/controlplane/placement.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/common/error.h"
#include "sim/controlplane/process.h"

namespace cpscale::controlplane {
namespace {

TEST(Placement, CpuListsReadAsTasksetWritesThem) {
  EXPECT_EQ(parseCpuList("0", 4, "w", "f"), (std::vector<int>{0}));
  EXPECT_EQ(parseCpuList("3,1-2", 4, "w", "f"), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(cpuListText({0, 2, 3, 5}), "0,2-3,5");
  EXPECT_EQ(cpuListText({1}), "1");
  for (const char* bad : {"", "x", "1-", "-1", "2-1", "0,,1"}) {
    EXPECT_THROW(parseCpuList(bad, 4, "w", "f"), ConfigError) << bad;
  }
  try {
    parseCpuList("4", 4, "command line", "--pin");
    ADD_FAILURE() << "CPU 4 of 4 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "--pin");
    EXPECT_NE(std::string(e.what()).find("CPU 4 is not online (this machine has 4: 0-3)"), std::string::npos)
        << e.what();
  }
}

TEST(Placement, PinEntriesNameRolesOnce) {
  Placement p = parsePlacement({"kube-apiserver=1", "etcd=0", "generator=0"}, 2);
  EXPECT_EQ(p.text(), "kube-apiserver=1 etcd=0 generator=0");
  ASSERT_NE(p.of("etcd"), nullptr);
  EXPECT_EQ(*p.of("etcd"), std::vector<int>{0});
  EXPECT_EQ(p.of("kube-scheduler"), nullptr);
  EXPECT_THROW(parsePlacement({"kube-apiserver=1", "kube-apiserver=0"}, 2), ConfigError);
  EXPECT_THROW(parsePlacement({"apiserver=1"}, 2), ConfigError);
  EXPECT_THROW(parsePlacement({"etcd"}, 2), ConfigError);
  EXPECT_THROW(parsePlacement({"isolated", "etcd=0"}, 2), ConfigError);
  EXPECT_THROW(parsePlacement({"isolated"}, 1), ConfigError);
}

TEST(Placement, IsolatedGivesTheApiserverACpuOfItsOwn) {
  EXPECT_EQ(parsePlacement({"isolated"}, 2).text(),
            "kube-apiserver=1 etcd=0 kube-controller-manager=0 kube-scheduler=0 generator=0");
  EXPECT_EQ(isolatedPlacement(4).text(),
            "kube-apiserver=3 etcd=2 kube-controller-manager=0 kube-scheduler=0 generator=0");
  EXPECT_TRUE(isolatedPlacement(1).empty());
}

TEST(Placement, ASpawnedChildRunsOnItsCpus) {
  // The child reports the CPUs the kernel lets it run on, as taskset would see them.
  const std::filesystem::path log =
      std::filesystem::path(::testing::TempDir()) / ("pin-" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(log);
  const int last = cpusOnline() - 1;
  ProcessIdentity id = spawn({{"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"}, log, false, {last}});
  std::optional<std::string> how;
  for (int i = 0; i < 500 && !how; ++i) {
    how = reapIfExited(id);
    if (!how) ::usleep(10'000);  // a real child process: only the wall clock moves it
  }
  ASSERT_TRUE(how);
  EXPECT_EQ(*how, "exited with status 0");
  EXPECT_NE(tailFile(log, 1).find("Cpus_allowed_list:\t" + std::to_string(last)), std::string::npos)
      << tailFile(log, 1);
}

}  // namespace
}  // namespace cpscale::controlplane
