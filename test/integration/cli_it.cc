// `cpscale up/down/status` as a user runs them: exit codes, messages, and what is left
// running (exactly nothing, after down or after a failure).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/controlplane/local_plane.h"
#include "sim/controlplane/pki.h"
#include "sim/controlplane/process.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string cpscale(const std::string& args) { return std::string(CPSCALE_BINARY) + " " + args; }

// Processes whose command line mentions `dir` (the plane's own data/log paths).
std::string processesUsing(const fs::path& dir) {
  return runCommand("pgrep -af -- '" + dir.string() + "' | grep -v pgrep || true").output;
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override { dir = makeTempDir("cli"); }
  void TearDown() override {
    runCommand(cpscale("down --state-dir " + dir.string()));
    EXPECT_EQ(processesUsing(dir), "") << "a test left processes running";
    fs::remove_all(dir);
  }
  std::string stateArgs() const { return "--state-dir " + dir.string() + " --name cli-it"; }
  fs::path dir;
};

TEST_F(CliTest, UpStatusDownLifecycle) {
  auto up = runCommand(cpscale("up " + stateArgs()));
  ASSERT_EQ(up.exitCode, 0) << up.output;
  EXPECT_NE(up.output.find("export KUBECONFIG=" + (dir / "kubeconfig").string()), std::string::npos) << up.output;
  EXPECT_NE(up.output.find("Kubernetes " CPSCALE_KUBERNETES_VERSION), std::string::npos) << up.output;

  auto record = controlplane::readRecord(dir);
  ASSERT_TRUE(record);
  // etcd, kube-apiserver, and the controllers beside them.
  ASSERT_EQ(record->components.size(), 4u);
  std::set<std::string> roles;
  for (const auto& c : record->components) roles.insert(c.role);
  EXPECT_EQ(roles, (std::set<std::string>{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}));
  EXPECT_NE(up.output.find("kube-controller-manager"), std::string::npos) << up.output;
  for (const auto& c : record->components) EXPECT_TRUE(controlplane::isRunning(c.process)) << c.name;

  // The plane outlives `up`, and stock kubectl can use it.
  auto kubectl =
      runCommand("kubectl --kubeconfig " + (dir / "kubeconfig").string() + " get ns kube-node-lease -o name");
  EXPECT_EQ(kubectl.exitCode, 0) << kubectl.output;
  EXPECT_EQ(kubectl.output, "namespace/kube-node-lease\n");

  // `check` reaches it with the written kubeconfig, over HTTP/2.
  auto check = runCommand(cpscale("check --kubeconfig " + (dir / "kubeconfig").string()));
  EXPECT_EQ(check.exitCode, 0) << check.output;
  EXPECT_NE(check.output.find("version     " CPSCALE_KUBERNETES_VERSION), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("protocol    HTTP/2"), std::string::npos) << check.output;
  EXPECT_NE(check.output.find("readyz      ok"), std::string::npos) << check.output;

  // A second `up` refuses and shows the running plane.
  auto again = runCommand(cpscale("up " + stateArgs()));
  EXPECT_EQ(again.exitCode, 2) << again.output;
  EXPECT_NE(again.output.find("already running"), std::string::npos) << again.output;
  auto still = controlplane::readRecord(dir);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->components.size(), 4u) << "the refused up must not have started anything";

  EXPECT_EQ(runCommand(cpscale("status --state-dir " + dir.string())).exitCode, 0);

  auto down = runCommand(cpscale("down --state-dir " + dir.string()));
  EXPECT_EQ(down.exitCode, 0) << down.output;
  EXPECT_NE(down.output.find("Stopped 4 processes"), std::string::npos) << down.output;
  for (const auto& c : record->components) EXPECT_FALSE(controlplane::isRunning(c.process)) << c.name;
  EXPECT_FALSE(fs::exists(dir / "plane.json"));
  EXPECT_EQ(runCommand(cpscale("status --state-dir " + dir.string())).exitCode, 3);
}

TEST_F(CliTest, DownNeverSignalsAProcessThatReusedARecordedPid) {
  controlplane::ProcessIdentity bystander = controlplane::spawn({{"/bin/sleep", "60"}, dir / "sleep.log", false, {}});
  json rec = {{"name", "x"},
              {"stateDir", dir.string()},
              {"kubeconfig", (dir / "kubeconfig").string()},
              {"components",
               {{{"role", "etcd"},
                 {"name", "etcd-main"},
                 {"url", "http://127.0.0.1:1"},
                 {"log", "x"},
                 {"pid", bystander.pid},
                 {"startTicks", bystander.startTicks - 1}}}}};
  std::ofstream(dir / "plane.json") << rec.dump();
  auto down = runCommand(cpscale("down --state-dir " + dir.string()));
  EXPECT_EQ(down.exitCode, 0) << down.output;
  EXPECT_TRUE(controlplane::isRunning(bystander)) << "down signalled a process it did not start";
  controlplane::terminate(bystander, std::chrono::seconds(5));
}

TEST_F(CliTest, MissingBinaryFailsWithExitThreeAndStartsNothing) {
  auto up = runCommand(cpscale("up " + stateArgs() + " --bin-dir " + (dir / "nowhere").string()));
  EXPECT_EQ(up.exitCode, 3) << up.output;
  EXPECT_NE(up.output.find("missing binary " + (dir / "nowhere/kube-apiserver").string()), std::string::npos)
      << up.output;
  EXPECT_FALSE(fs::exists(dir / "plane.json"));
}

TEST_F(CliTest, PortInUseFailsWithExitThreeAndStartsNothing) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);

  auto up = runCommand(cpscale("up " + stateArgs() + " --port " + std::to_string(port)));
  ::close(fd);
  EXPECT_EQ(up.exitCode, 3) << up.output;
  EXPECT_NE(up.output.find("127.0.0.1:" + std::to_string(port) + " is already in use"), std::string::npos) << up.output;
  EXPECT_FALSE(fs::exists(dir / "plane.json"));
}

TEST_F(CliTest, BadProfileFailsWithExitTwoNamingFileLineAndField) {
  fs::path profile = dir / "bad.yaml";
  std::ofstream(profile) << "name: bad\napiservers: 1\netcds:\n  - name: main\n    resource: [x]\n";
  auto up = runCommand(cpscale("up " + stateArgs() + " --profile " + profile.string()));
  EXPECT_EQ(up.exitCode, 2) << up.output;
  EXPECT_NE(up.output.find(profile.string() + ":5: field 'etcds[0].resource': unknown field"), std::string::npos)
      << up.output;
  EXPECT_FALSE(fs::exists(dir / "plane.json"));
}

TEST_F(CliTest, CrashedApiserverIsReportedWithItsLogAndEtcdIsStopped) {
  fs::path profile = dir / "crash.yaml";
  std::ofstream(profile) << "name: crash\napiserverArgs: [\"--no-such-flag=1\"]\n";
  auto up = runCommand(cpscale("up " + stateArgs() + " --profile " + profile.string()));
  EXPECT_EQ(up.exitCode, 3) << up.output;
  EXPECT_NE(up.output.find("kube-apiserver-0 exited with status"), std::string::npos) << up.output;
  EXPECT_NE(up.output.find("unknown flag: --no-such-flag"), std::string::npos) << up.output;
  EXPECT_FALSE(fs::exists(dir / "plane.json"));
  // TearDown checks that etcd is not left running.
}

TEST_F(CliTest, HaProfileStartsThreeApiserversEachReachableByContext) {
  auto up = runCommand(cpscale("up " + stateArgs() + " --profile " CPSCALE_SOURCE_DIR "/profiles/classic-ha.yaml"));
  ASSERT_EQ(up.exitCode, 0) << up.output;
  auto record = controlplane::readRecord(dir);
  ASSERT_TRUE(record);
  EXPECT_EQ(record->urls("kube-apiserver").size(), 3u);
  EXPECT_EQ(record->urls("etcd").size(), 1u);
  for (const std::string ctx : {"cpscale-cli-it", "cpscale-cli-it-apiserver-1", "cpscale-cli-it-apiserver-2"}) {
    auto r = runCommand("kubectl --kubeconfig " + (dir / "kubeconfig").string() + " --context " + ctx +
                        " get --raw /readyz");
    EXPECT_EQ(r.output, "ok") << ctx;
  }
  EXPECT_EQ(runCommand(cpscale("down --state-dir " + dir.string())).exitCode, 0);
}

// classify reads the live plane (two scrape rounds 5 s apart, GETs only) and reports a
// measured pressure on each axis.
TEST_F(CliTest, ClassifyReadsTheLivePlanesThreeAxes) {
  ASSERT_EQ(runCommand(cpscale("up " + stateArgs())).exitCode, 0);
  auto c = runCommand(cpscale("classify --kubeconfig " + (dir / "kubeconfig").string() + " --window 5s --json"));
  ASSERT_EQ(c.exitCode, 0) << c.output;
  json doc = json::parse(c.output, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << c.output;
  ASSERT_EQ(doc["axes"].size(), 3u) << c.output;
  for (const auto& axis : doc["axes"]) EXPECT_TRUE(axis["pressure"].is_number()) << axis.dump();
  EXPECT_EQ(doc["recipe"]["name"], "classic") << c.output;  // guessed from its one replica
}

// A short capacity search on the real plane, with a breaking point known in advance: a
// fleet renewing every 10 s writes nodes/10 Lease PUTs a second, so a hold gate of 12
// writes/s holds 50 and 100 nodes and breaks at 200. The fleet grows in place (one
// plane, every node of every step renewing), each step is judged from the server's
// own counters, the CI gate reads the capacity figure, and nothing is left behind.
TEST(CliCapacityTest, ASearchOnTheRealPlaneStopsAtTheKnownStepAndGatesOnCapacity) {
  fs::path dir = makeTempDir("capacity");
  fs::path scenario = dir / "capacity.yaml";
  std::ofstream(scenario) << R"(apiVersion: cpscale.io/v1alpha1
kind: Scenario
name: capacity-it
duration: 10s
scrapeInterval: 2s
workloads:
  - kind: kubelets
    name: fleet
    count: 50
    registrationQps: 100
capacity:
  knob: workloads.fleet.count
  start: 50
  factor: 2
  max: 400
  hold: 10s
  settle: 20s
  gates:
    - write_qps{resource=leases,verb=PUT} <= 12
gates:
  - capacity{axis=node} >= 100
)";
  auto c =
      runCommand(cpscale("capacity " + scenario.string() + " --quiet --run-id capit --out " + (dir / "out").string()));
  ASSERT_EQ(c.exitCode, 0) << c.output;
  std::ifstream in(dir / "out" / "capacity-it-classic" / "result.json");
  json r = json::parse(in, nullptr, false);
  ASSERT_FALSE(r.is_discarded()) << c.output;
  const json& cap = r["capacity"];
  EXPECT_EQ(cap["held"], 100.0) << cap.dump().substr(0, 2000);
  EXPECT_EQ(cap["limit"], "server");
  EXPECT_NE(cap["brokeBy"].get<std::string>().find("write_qps"), std::string::npos) << cap["brokeBy"];
  ASSERT_EQ(cap["steps"].size(), 3u);
  std::vector<double> leasePuts;
  for (const auto& st : cap["steps"]) {
    for (const auto& f : st["figures"])
      if (f["name"] == "write_qps" && f["labels"].value("resource", "") == "leases" &&
          f["labels"].value("verb", "") == "PUT")
        leasePuts.push_back(f["value"].get<double>());
  }
  // Every node of every step renews: the rate doubles with the fleet (+-25 %: jitter,
  // the controllers' own leader Leases).
  ASSERT_EQ(leasePuts.size(), 3u);
  EXPECT_NEAR(leasePuts[0], 5, 1.25);
  EXPECT_NEAR(leasePuts[1], 10, 2.5);
  EXPECT_NEAR(leasePuts[2], 20, 5);
  std::vector<std::string> phases;
  for (const auto& p : r["phases"]) phases.push_back(p["name"]);
  for (const char* want : {"step/50", "grow/100", "step/100", "grow/200", "step/200"})
    EXPECT_NE(std::find(phases.begin(), phases.end(), want), phases.end()) << want;
  // The CI gate over the capacity figure.
  ASSERT_EQ(r["gates"].size(), 1u);
  EXPECT_TRUE(r["gates"][0]["passed"].get<bool>()) << r["gates"].dump();
  // The index beside it, as classify reads it.
  std::ifstream idx(dir / "out" / "capacity.json");
  json index = json::parse(idx, nullptr, false);
  ASSERT_FALSE(index.is_discarded());
  EXPECT_EQ(index["searches"][0]["held"], 100.0);
  // The run stopped its plane and deleted its data (with what the run created), no
  // cleanup object by object first, and says so.
  EXPECT_NE(r["workloads"].back()["summary"].value("skipped", "").find("the local plane is stopped"), std::string::npos)
      << r["workloads"].back().dump();
  EXPECT_EQ(processesUsing(dir), "");

  // The same search held to more than it holds: the CI gate fails it (exit 1).
  std::ofstream(dir / "strict.yaml") << R"(apiVersion: cpscale.io/v1alpha1
kind: Scenario
name: capacity-strict
duration: 5s
scrapeInterval: 2s
workloads:
  - kind: kubelets
    name: fleet
    count: 50
    registrationQps: 100
capacity:
  knob: workloads.fleet.count
  start: 50
  factor: 2
  max: 100
  hold: 5s
  settle: 10s
  gates:
    - write_qps{resource=leases,verb=PUT} <= 7
gates:
  - capacity{axis=node} >= 100
)";
  auto strict = runCommand(cpscale("capacity " + (dir / "strict.yaml").string() + " --quiet --run-id capit2 --out " +
                                   (dir / "out2").string()));
  EXPECT_EQ(strict.exitCode, 1) << strict.output;
  EXPECT_EQ(processesUsing(dir), "");
  fs::remove_all(dir);
}

TEST(CliCheckTest, KubeconfigProblemsAreBadInputAndAnUnreachableServerIsUnavailable) {
  fs::path dir = makeTempDir("check");
  fs::path kc = dir / "kubeconfig";
  std::ofstream(kc)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
         "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\ncurrent-context: ctx\n"
         "users:\n- name: u\n  user:\n    token: s3cr3t-t0ken-value\n";
  auto unreachable = runCommand(cpscale("check --kubeconfig " + kc.string()));
  EXPECT_EQ(unreachable.exitCode, 3) << unreachable.output;
  EXPECT_NE(unreachable.output.find("cannot reach https://127.0.0.1:1"), std::string::npos) << unreachable.output;
  EXPECT_EQ(unreachable.output.find("s3cr3t-t0ken-value"), std::string::npos) << "credential leaked into output";

  auto context = runCommand(cpscale("check --kubeconfig " + kc.string() + " --context nope"));
  EXPECT_EQ(context.exitCode, 2) << context.output;
  EXPECT_NE(context.output.find("context 'nope' not found"), std::string::npos) << context.output;

  auto missing = runCommand(cpscale("check --kubeconfig " + (dir / "absent").string()));
  EXPECT_EQ(missing.exitCode, 2) << missing.output;
  EXPECT_NE(missing.output.find((dir / "absent").string()), std::string::npos) << missing.output;

  std::ofstream(kc) << "apiVersion: v1\nclusters: [\n";
  auto malformed = runCommand(cpscale("check --kubeconfig " + kc.string()));
  EXPECT_EQ(malformed.exitCode, 2) << malformed.output;
  EXPECT_NE(malformed.output.find(kc.string() + ":"), std::string::npos) << malformed.output;
  // One clear line, not a dump.
  EXPECT_EQ(std::count(malformed.output.begin(), malformed.output.end(), '\n'), 1) << malformed.output;
  fs::remove_all(dir);
}

TEST(CliUsageTest, UnknownCommandAndOptionAreUsageErrors) {
  EXPECT_EQ(runCommand(cpscale("frobnicate")).exitCode, 2);
  auto r = runCommand(cpscale("up --frobnicate"));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("--frobnicate"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cpscale::testing
