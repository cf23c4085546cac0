// `cpscale run` end to end on the real plane, as CI would use it: exit codes, the files
// written, gates that must fail failing, Ctrl-C, and nothing left behind.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/controlplane/local_plane.h"
#include "sim/controlplane/pki.h"
#include "sim/controlplane/process.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string cpscale(const std::string& args) { return std::string(CPSCALE_BINARY) + " " + args; }
const std::string kSmoke = std::string(CPSCALE_SOURCE_DIR) + "/scenarios/smoke.yaml";

json readJson(const fs::path& p) { return json::parse(controlplane::readFile(p)); }

// Objects still carrying the run's label, as stock kubectl sees them.
std::string leftovers(const fs::path& kubeconfig, const std::string& runId) {
  auto r = runCommand(
      "kubectl --kubeconfig " + kubeconfig.string() +
      " get nodes,leases,configmaps,roles,namespaces,customresourcedefinitions -A -o name -l cpscale.io/run=" + runId);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return r.output;
}

// A run's own plane goes with it: of its state only the members' logs are left (no
// etcd data, keys or kubeconfigs).
void expectOnlyLogsLeft(const fs::path& stateDir) {
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(stateDir)) left.push_back(e.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"logs"});
  EXPECT_TRUE(fs::exists(stateDir / "logs" / "etcd-main.log"));
}

// A run through faults, in the background, with every plane record it had (a
// restarted member's included). It must complete, with the exit code its gates decide.
struct WatchedRun {
  json result;
  std::vector<controlplane::PlaneRecord> seen;
};
void runWatchingThePlane(const std::string& scenario, const fs::path& out, const std::string& runId, WatchedRun& run) {
  fs::path log = makeTempDir(runId + "-log") / "cpscale.log";
  auto proc = controlplane::spawn(
      {{CPSCALE_BINARY, "run", scenario, "--out", out.string(), "--run-id", runId}, log, false, {}});
  int status = 0;
  for (;;) {
    if (auto rec = controlplane::readRecord(out / "plane")) run.seen.push_back(*rec);
    if (::waitpid(proc.pid, &status, WNOHANG) == proc.pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(WIFEXITED(status)) << controlplane::tailFile(log, 40);
  run.result = readJson(out / "result.json");
  ASSERT_EQ(run.result["status"], "completed") << run.result["statusDetail"] << controlplane::tailFile(log, 40);
  bool gatesPass = !run.result["gates"].empty();
  for (const auto& g : run.result["gates"]) gatesPass = gatesPass && g["passed"].get<bool>();
  EXPECT_EQ(WEXITSTATUS(status), gatesPass ? 0 : 1) << run.result["gates"].dump();
  EXPECT_EQ(run.result["exitCode"], WEXITSTATUS(status));
  ASSERT_FALSE(run.seen.empty());
}

// A long smoke run started in the background, returned once its load is running (the
// progress line says so; bounded at 60 s). Its log is in a fresh directory, never a
// previous run's.
struct BackgroundRun {
  controlplane::ProcessIdentity process;
  fs::path log;
  bool loadRunning = false;
};
BackgroundRun startLongSmoke(const fs::path& out, const std::string& runId, std::vector<std::string> extra = {}) {
  BackgroundRun run;
  run.log = makeTempDir(runId + "-log") / "cpscale.log";
  std::vector<std::string> argv{CPSCALE_BINARY, "run", kSmoke,  "--out",      out.string(),
                                "--run-id",     runId, "--set", "duration=5m"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  run.process = controlplane::spawn({argv, run.log, false, {}});
  for (int i = 0; i < 600 && !run.loadRunning; ++i) {
    run.loadRunning = controlplane::tailFile(run.log, 50).find("writes") != std::string::npos;
    if (!run.loadRunning) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return run;
}

TEST(RunTest, SmokeWritesEveryFileFailsTheFailingGateAndCleansUp) {
  fs::path out = makeTempDir("run-smoke");
  auto r = runCommand(cpscale("run " + kSmoke + " --out " + out.string() +
                              " --run-id itsmoke --quiet --keep --set duration=15s"
                              " --set 'gates[1]=write_qps{resource=leases} < 0'"));
  EXPECT_EQ(r.exitCode, 1) << r.output;  // one gate cannot pass
  for (const char* f : {"result.json", "summary.md", "report.html", "junit.xml"}) EXPECT_TRUE(fs::exists(out / f)) << f;
  EXPECT_NE(r.output.find("Report: " + (out / "report.html").string()), std::string::npos) << r.output;

  json result = readJson(out / "result.json");
  EXPECT_EQ(result["status"], "completed");
  EXPECT_EQ(result["runId"], "itsmoke");
  ASSERT_EQ(result["gates"].size(), 5u);
  EXPECT_EQ(result["gates"][0]["passed"], true) << result["gates"][0].dump();
  EXPECT_EQ(result["gates"][1]["passed"], false) << result["gates"][1].dump();

  std::string junit = controlplane::readFile(out / "junit.xml");
  EXPECT_NE(junit.find("<failure"), std::string::npos);
  EXPECT_NE(junit.find("write_qps{resource=leases} &lt; 0"), std::string::npos) << junit;

  // Server-side figures came from the real apiserver: leases were written.
  bool leasePuts = false;
  for (const auto& f : result["figures"])
    if (f["name"] == "write_requests" && f["labels"].dump().find("\"leases\"") != std::string::npos &&
        f["labels"].dump().find("\"PUT\"") != std::string::npos && f["value"].is_number())
      leasePuts = f["value"].get<double>() > 0;
  EXPECT_TRUE(leasePuts) << "no PUT leases counted by the apiserver";
  // The dormant watchers' streams are counted apart from requests.
  bool streams = false;
  for (const auto& f : result["figures"])
    if (f["name"] == "client_watch_streams_opened" && f["value"].is_number()) streams = f["value"].get<double>() >= 2;
  EXPECT_TRUE(streams) << "the smoke scenario's two watchers opened no counted stream";

  // The plane was kept: nothing labelled with the run is left on it.
  EXPECT_EQ(leftovers(out / "plane/kubeconfig", "itsmoke"), "");
  EXPECT_EQ(runCommand(cpscale("down --state-dir " + (out / "plane").string())).exitCode, 0);
}

TEST(RunTest, AgainstAClusterTheProfileIsRecordedAndEtcdFiguresAreUnavailable) {
  fs::path dir = makeTempDir("run-cluster");
  ASSERT_EQ(runCommand(cpscale("up --state-dir " + (dir / "plane").string())).exitCode, 0);
  auto r = runCommand(cpscale("run " + kSmoke + " --kubeconfig " + (dir / "plane/kubeconfig").string() + " --out " +
                              (dir / "o").string() + " --run-id itcluster --quiet --set duration=8s" +
                              " --profile " CPSCALE_SOURCE_DIR "/profiles/classic-ha.yaml" +
                              " --set 'gates[2]=etcd_proposals_committed_per_second >= 0'"));
  EXPECT_EQ(r.exitCode, 1) << r.output;  // the etcd gate cannot pass: no etcd is reachable
  json result = readJson(dir / "o/result.json");
  EXPECT_EQ(result["target"]["kind"], "cluster");
  EXPECT_EQ(result["profile"]["applied"], false);
  EXPECT_EQ(result["profile"]["name"], "classic-ha");
  // What was found on the cluster, not what the profile says: one apiserver (the
  // profile has three), with the version it reported. (Its endpoints behind the
  // `kubernetes` Service are recorded too on a real cluster; a loopback apiserver
  // cannot publish them.)
  ASSERT_FALSE(result["target"]["members"].empty());
  EXPECT_EQ(result["target"]["members"][0]["role"], "kube-apiserver");
  EXPECT_EQ(result["target"]["members"][0]["version"], CPSCALE_KUBERNETES_VERSION) << result["target"].dump();
  EXPECT_EQ(result["target"]["kubernetesVersion"], CPSCALE_KUBERNETES_VERSION);
  EXPECT_EQ(result["gates"][2]["passed"], false);
  EXPECT_NE(result["gates"][2]["reason"].get<std::string>().find("unavailable"), std::string::npos)
      << result["gates"][2].dump();
  // The cluster still runs (cpscale does not own it) and holds nothing of the run.
  EXPECT_EQ(leftovers(dir / "plane/kubeconfig", "itcluster"), "");
  EXPECT_EQ(runCommand(cpscale("down --state-dir " + (dir / "plane").string())).exitCode, 0);
}

TEST(RunTest, TwoProfilesRunBothAndCompareThem) {
  fs::path out = makeTempDir("run-two");
  auto r = runCommand(cpscale("run " + kSmoke + " --out " + out.string() + " --run-id ittwo --quiet" +
                              " --set duration=12s --set 'gates[1]=write_qps >= 0'" +
                              " --profile " CPSCALE_SOURCE_DIR "/profiles/classic.yaml" +
                              " --profile " CPSCALE_SOURCE_DIR "/profiles/partitioned-storage.yaml"));
  EXPECT_LE(r.exitCode, 1) << r.output;  // gates may fail on a busy machine; the run must complete
  json a = readJson(out / "classic/result.json");
  json b = readJson(out / "partitioned-storage/result.json");
  EXPECT_EQ(a["status"], "completed");
  EXPECT_EQ(b["status"], "completed");
  EXPECT_EQ(b["profile"]["applied"], true);
  ASSERT_TRUE(fs::exists(out / "comparison.md"));
  std::string cmp = controlplane::readFile(out / "comparison.md");
  EXPECT_NE(cmp.find("classic"), std::string::npos);
  EXPECT_NE(cmp.find("partitioned-storage"), std::string::npos);
  // The storage seam, measured: only the partitioned plane has an etcd for leases.
  auto share = [](const json& res) -> json {
    for (const auto& f : res["figures"])
      if (f["name"] == "etcd_lease_proposal_share") return f;
    return nullptr;
  };
  ASSERT_FALSE(share(a).is_null());
  EXPECT_TRUE(share(a)["value"].is_null()) << share(a).dump();
  ASSERT_FALSE(share(b).is_null());
  EXPECT_TRUE(share(b)["value"].is_number()) << share(b).dump();
}

// The figure of that name and window whose labels include the given ones (with none
// given: the one without labels), or nullptr.
const json* figure(const json& result, const std::string& name, const std::string& window,
                   const std::vector<std::pair<std::string, std::string>>& labels = {}) {
  for (const auto& f : result["figures"]) {
    if (f["name"] != name || f["window"] != window) continue;
    bool all = true;
    for (const auto& [k, v] : labels) all = all && f["labels"].value(k, std::string("\x01")) == v;
    if (all && (!labels.empty() || f["labels"].empty())) return &f;
  }
  return nullptr;
}

// The steady figure's value for the given label value, or -1 when absent or unavailable.
double figureValue(const json& result, const std::string& name, const std::string& label, const std::string& value) {
  const json* f = figure(result, name, "steady", {{label, value}});
  return f && (*f)["value"].is_number() ? (*f)["value"].get<double>() : -1;
}

TEST(RunTest, RoleSplitShowsWhichReplicaEachLoadLandsOn) {
  fs::path out = makeTempDir("run-rolesplit");
  auto r = runCommand(cpscale("run " + kSmoke + " --out " + out.string() + " --run-id itsplit --quiet" +
                              " --set duration=15s --profile " CPSCALE_SOURCE_DIR "/profiles/role-split.yaml"));
  EXPECT_LE(r.exitCode, 1) << r.output;  // gates may fail on a busy machine; the run must complete
  json result = readJson(out / "result.json");
  ASSERT_EQ(result["status"], "completed") << result["statusDetail"];
  std::map<std::string, std::string> serves;
  for (const auto& m : result["target"]["members"]) serves[m["name"]] = m.value("serves", "");
  EXPECT_EQ(serves["kube-apiserver-0"], "workloads");
  EXPECT_EQ(serves["kube-apiserver-1"], "workloads");
  EXPECT_EQ(serves["kube-apiserver-2"], "kube-scheduler");
  EXPECT_EQ(serves["kube-apiserver-3"], "kube-controller-manager");
  EXPECT_EQ(serves["kube-scheduler"], "kube-apiserver-2");
  EXPECT_EQ(serves["kube-controller-manager"], "kube-apiserver-3");
  EXPECT_TRUE(serves.contains("etcd-events"));

  // The workloads' writes land on the two serving replicas, evenly (round-robin); the
  // dedicated replicas see only their component's (leader Lease renewals, controller
  // writes), never the fleet's heartbeats.
  const double w0 = figureValue(result, "apiserver_write_qps", "apiserver", "kube-apiserver-0");
  const double w1 = figureValue(result, "apiserver_write_qps", "apiserver", "kube-apiserver-1");
  const double wSched = figureValue(result, "apiserver_write_qps", "apiserver", "kube-apiserver-2");
  const double wCm = figureValue(result, "apiserver_write_qps", "apiserver", "kube-apiserver-3");
  ASSERT_GT(w0, 0);
  ASSERT_GT(w1, 0);
  EXPECT_NEAR(w0 / (w0 + w1), 0.5, 0.15) << w0 << " vs " << w1;
  EXPECT_GE(wSched, 0);
  EXPECT_GE(wCm, 0);
  EXPECT_LT(wSched, w0 / 3) << "the scheduler's replica took workload writes?";
  EXPECT_LT(wCm, w0 / 3) << "the controller-manager's replica took workload writes?";
  // Their informers' reads do land there.
  EXPECT_GT(figureValue(result, "apiserver_requests", "apiserver", "kube-apiserver-2"), 0);
  EXPECT_GT(figureValue(result, "apiserver_requests", "apiserver", "kube-apiserver-3"), 0);
  // And the controllers themselves were scraped.
  EXPECT_GT(figureValue(result, "workqueue_adds", "component", "kube-controller-manager"), 0);
}

TEST(RunTest, AKilledRunLeavesNoPlaneRunning) {
  fs::path out = makeTempDir("run-kill");
  BackgroundRun run = startLongSmoke(out, "itkill");
  controlplane::ProcessIdentity p = run.process;
  ASSERT_TRUE(run.loadRunning) << controlplane::tailFile(run.log, 30);
  auto members = controlplane::readRecord(out / "plane");
  ASSERT_TRUE(members);
  ::kill(p.pid, SIGKILL);  // no cleanup code runs: the children must go on their own
  ::waitpid(p.pid, nullptr, 0);
  bool anyLeft = true;
  for (int i = 0; i < 100 && anyLeft; ++i) {
    anyLeft = controlplane::anyRunning(*members);
    if (anyLeft) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(anyLeft) << "a member of the killed run's plane is still running";
}

TEST(RunTest, BadScenarioIsExitTwoAndStartsNothing) {
  fs::path out = makeTempDir("run-bad");
  fs::path scenario = out / "bad.yaml";
  std::ofstream(scenario) << "name: bad\nduration: 10s\nworkloads:\n  - kind: kubelets\n    count: -5\n";
  auto r = runCommand(cpscale("run " + scenario.string() + " --out " + (out / "o").string()));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find(scenario.string() + ":5: field 'workloads[0].count'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out / "o")) << "nothing may be created for bad input";

  auto set = runCommand(cpscale("run " + kSmoke + " --set workloads.fleet.count=many --out " + (out / "o").string()));
  EXPECT_EQ(set.exitCode, 2) << set.output;
  EXPECT_NE(set.output.find("field 'workloads[0].count'"), std::string::npos) << set.output;
}

TEST(RunTest, NonLoopbackTargetNeedsConfirmation) {
  fs::path dir = makeTempDir("run-remote");
  fs::path kc = dir / "kubeconfig";
  std::ofstream(kc)
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.255.255.1:6443\n"
         "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\ncurrent-context: ctx\n"
         "users:\n- name: u\n  user:\n    token: t0ps3cr3t\n";
  auto r = runCommand("env -u CPSCALE_ASSUME_YES " +
                      cpscale("run " + kSmoke + " --kubeconfig " + kc.string() + " --out " + (dir / "o").string()));
  EXPECT_EQ(r.exitCode, 2) << r.output;
  EXPECT_NE(r.output.find("https://10.255.255.1:6443"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--yes"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("t0ps3cr3t"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "o"));
}

TEST(RunTest, InterruptWritesPartialResultsCleansUpAndExitsThree) {
  fs::path out = makeTempDir("run-int");
  BackgroundRun run = startLongSmoke(out, "itint", {"--keep"});
  controlplane::ProcessIdentity p = run.process;
  const fs::path& log = run.log;
  ASSERT_TRUE(run.loadRunning) << controlplane::tailFile(log, 30);
  ::kill(p.pid, SIGINT);
  int status = 0;
  ::waitpid(p.pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << controlplane::tailFile(log, 30);
  json result = readJson(out / "result.json");
  EXPECT_EQ(result["status"], "interrupted");
  EXPECT_LT(result["measuredSeconds"].get<double>(), 120);
  EXPECT_FALSE(result["figures"].empty()) << "what was measured before the interrupt must be written";
  EXPECT_EQ(leftovers(out / "plane/kubeconfig", "itint"), "");
  EXPECT_EQ(runCommand(cpscale("down --state-dir " + (out / "plane").string())).exitCode, 0);
}

const std::string kNodeBound = std::string(CPSCALE_SOURCE_DIR) + "/scenarios/node-bound.yaml";

// The headline is the steady window: registration happens in setup, and the lease PUT
// rate of the window is what the fleet renews, count / 10 per second.
TEST(RunTest, TheSteadyWindowStartsAfterRegistrationAndReadsTheRenewalRate) {
  fs::path out = makeTempDir("run-phases");
  auto r = runCommand(cpscale("run " + kNodeBound + " --out " + out.string() +
                              " --run-id itphase --quiet --set duration=40s --set scrapeInterval=2s --set warmup=3s"
                              " --set workloads.fleet.count=200 --set workloads.fleet.registrationQps=40"));
  EXPECT_LE(r.exitCode, 1) << r.output;
  json result = readJson(out / "result.json");
  ASSERT_EQ(result["status"], "completed") << result["statusDetail"];
  ASSERT_GE(result["phases"].size(), 2u) << result["phases"].dump();
  const json& setup = result["phases"][0];
  const json& steady = result["phases"].back();
  EXPECT_EQ(setup["name"], "setup");
  EXPECT_EQ(setup["complete"], true);
  // 200 registrations at 40/s (a burst of 40 first) take four seconds; then the
  // controller-manager works off what they left it (settle/controllers), then 3 s of
  // warmup.
  const json* settle = nullptr;
  for (const auto& p : result["phases"])
    if (p["name"] == "settle/controllers") settle = &p;
  ASSERT_NE(settle, nullptr) << result["phases"].dump();
  EXPECT_EQ((*settle)["complete"], true) << settle->dump();
  EXPECT_GE((*settle)["startSeconds"].get<double>(), 3.9);
  EXPECT_NEAR(setup["endSeconds"].get<double>(), (*settle)["endSeconds"].get<double>() + 3, 0.5);
  EXPECT_NE(setup["detail"].get<std::string>().find("3s of warmup"), std::string::npos) << setup.dump();
  EXPECT_LT(setup["endSeconds"].get<double>(), 4 + 120 + 3 + 1);
  EXPECT_EQ(steady["name"], "steady");
  EXPECT_EQ(steady["complete"], true) << steady.dump();
  EXPECT_NEAR(steady["endSeconds"].get<double>() - steady["startSeconds"].get<double>(), 40, 1);
  EXPECT_NEAR(result["measuredSeconds"].get<double>(), 40, 1);

  const json* puts = figure(result, "write_qps", "steady",
                            {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_NE(puts, nullptr);
  ASSERT_TRUE((*puts)["value"].is_number()) << puts->dump();
  EXPECT_NEAR((*puts)["value"].get<double>(), 20.0, 2.0) << "200 nodes renew every 10 s";
  const json* posts = figure(result, "write_requests", "steady", {{"resource", "nodes"}, {"verb", "POST"}});
  EXPECT_TRUE(posts == nullptr || (*posts)["value"] == 0) << "registration inside the steady window: " << posts->dump();
  const json* setupPosts = figure(result, "write_requests", "setup", {{"resource", "nodes"}, {"verb", "POST"}});
  ASSERT_NE(setupPosts, nullptr);
  EXPECT_EQ((*setupPosts)["value"], 200) << setupPosts->dump();
  // The node lifecycle controller's taint updates of the new nodes are setup too.
  const json* taints = figure(result, "write_requests", "steady", {{"resource", "nodes"}, {"verb", "PATCH"}});
  EXPECT_TRUE(taints == nullptr || (*taints)["value"] == 0)
      << "controller catching up in the window: " << taints->dump();
  const json* setupTaints = figure(result, "write_requests", "setup", {{"resource", "nodes"}, {"verb", "PATCH"}});
  ASSERT_NE(setupTaints, nullptr);
  EXPECT_GE((*setupTaints)["value"].get<double>(), 200) << setupTaints->dump();
  const json* share = figure(result, "lease_write_share", "steady");
  ASSERT_NE(share, nullptr);
  // Renewals, a few status patches, and the controllers' own writes (their leader
  // Leases, the tail of the node controller's 200 RegisteredNode Events, which its event
  // broadcaster paces past the settle phase: 51 of them, 1.3/s, on 2026-12-07, for a
  // share of 0.89-0.90 against 20.7 renewals/s). A registration or a controller catching
  // up inside the window would take it well below this.
  EXPECT_GT((*share)["value"].get<double>(), 0.85);
}

// A member of the local plane that dies mid-run is noticed at once: the run stops,
// says which member and when, writes what it measured and exits 3.
TEST(RunTest, AMemberThatDiesMidRunEndsItWithExitThreeAndPartialResults) {
  fs::path out = makeTempDir("run-crash");
  BackgroundRun run = startLongSmoke(out, "itcrash");
  ASSERT_TRUE(run.loadRunning) << controlplane::tailFile(run.log, 30);
  auto record = controlplane::readRecord(out / "plane");
  ASSERT_TRUE(record);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // wall-clock load on a real plane
  pid_t victim = 0;
  for (const auto& c : record->components)
    if (c.name == "kube-apiserver-0") victim = c.process.pid;
  ASSERT_GT(victim, 0);
  ::kill(victim, SIGKILL);
  int status = 0;
  ::waitpid(run.process.pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << controlplane::tailFile(run.log, 30);
  json result = readJson(out / "result.json");
  EXPECT_EQ(result["status"], "failed");
  EXPECT_NE(result["statusDetail"].get<std::string>().find("kube-apiserver-0"), std::string::npos)
      << result["statusDetail"];
  ASSERT_EQ(result["incidents"].size(), 1u) << result["incidents"].dump();
  EXPECT_EQ(result["incidents"][0]["kind"], "member-exited");
  EXPECT_EQ(result["incidents"][0]["member"], "kube-apiserver-0");
  EXPECT_GT(result["incidents"][0]["atSeconds"].get<double>(), 3);
  EXPECT_LT(result["measuredSeconds"].get<double>(), 60);
  EXPECT_FALSE(result["figures"].empty());
  const json& last = result["phases"].back();
  EXPECT_EQ(last["complete"], false) << result["phases"].dump();
  std::string summary = controlplane::readFile(out / "summary.md");
  EXPECT_NE(summary.find("kube-apiserver-0"), std::string::npos) << summary;
  EXPECT_FALSE(controlplane::anyRunning(*record)) << "the rest of the plane must be stopped";
}

// Setup that does not finish in time fails the run: exit 3, the reason, no steady
// figures made up from a window that never started, and the setup that was measured.
TEST(RunTest, SetupThatNeverFinishesFailsTheRunWithExitThree) {
  fs::path out = makeTempDir("run-setup-timeout");
  auto r = runCommand(cpscale("run " + kNodeBound + " --out " + out.string() +
                              " --run-id itsetup --quiet --set setupTimeout=3s --set scrapeInterval=1s"
                              " --set workloads.fleet.count=400 --set workloads.fleet.registrationQps=20"));
  EXPECT_EQ(r.exitCode, 3) << r.output;
  json result = readJson(out / "result.json");
  EXPECT_EQ(result["status"], "failed");
  EXPECT_NE(result["statusDetail"].get<std::string>().find("setup did not finish within 3s"), std::string::npos)
      << result["statusDetail"];
  ASSERT_EQ(result["phases"].size(), 1u) << result["phases"].dump();
  EXPECT_EQ(result["phases"][0]["name"], "setup");
  EXPECT_EQ(result["phases"][0]["complete"], false);
  EXPECT_EQ(result["measuredSeconds"], 0);
  const json* steady = figure(result, "write_qps", "steady");
  ASSERT_NE(steady, nullptr);
  EXPECT_TRUE((*steady)["value"].is_null()) << steady->dump();
  const json* posts = figure(result, "write_requests", "setup", {{"resource", "nodes"}, {"verb", "POST"}});
  ASSERT_NE(posts, nullptr);
  EXPECT_GT((*posts)["value"].get<double>(), 0);
  EXPECT_LT((*posts)["value"].get<double>(), 400);
  EXPECT_EQ(result["workloads"][0]["summary"]["setupComplete"], false);
}

// The fault rehearsal on the real plane: kube-apiserver-0 killed 10 s into the steady
// window and started again 8 s later, etcd frozen for 4 s at 40 s. The run goes on
// through both, counts what failed, reopens its watches, splits the restarted
// apiserver's counters, marks each fault's window, exits as its gates decide and leaves
// nothing running.
TEST(RunTest, FaultsAreRehearsedAndTheRunGoesOnThroughThem) {
  fs::path out = makeTempDir("run-faults");
  WatchedRun run;
  ASSERT_NO_FATAL_FAILURE(
      runWatchingThePlane(std::string(CPSCALE_SOURCE_DIR) + "/scenarios/fault-rehearsal.yaml", out, "itfaults", run));
  const json& result = run.result;
  const auto& seen = run.seen;

  // Each fault is an incident with its window, from the steady window's start.
  double steadyStart = -1;
  for (const auto& p : result["phases"])
    if (p["name"] == "steady") steadyStart = p["startSeconds"].get<double>();
  ASSERT_GE(steadyStart, 0) << result["phases"].dump();
  const json* kill = nullptr;
  const json* stop = nullptr;
  for (const auto& i : result["incidents"]) {
    if (i["kind"] != "fault") continue;
    if (i["member"] == "kube-apiserver-0") kill = &i;
    if (i["member"] == "etcd-main") stop = &i;
  }
  ASSERT_NE(kill, nullptr) << result["incidents"].dump();
  ASSERT_NE(stop, nullptr) << result["incidents"].dump();
  EXPECT_NEAR((*kill)["atSeconds"].get<double>(), steadyStart + 10, 1.5);
  const double down = (*kill)["untilSeconds"].get<double>() - (*kill)["atSeconds"].get<double>();
  EXPECT_GE(down, 8) << kill->dump();
  EXPECT_LT(down, 60) << kill->dump();
  EXPECT_NE((*kill)["detail"].get<std::string>().find("ready again"), std::string::npos) << kill->dump();
  EXPECT_NEAR((*stop)["atSeconds"].get<double>(), steadyStart + 40, 1.5);
  EXPECT_NEAR((*stop)["untilSeconds"].get<double>() - (*stop)["atSeconds"].get<double>(), 4, 1) << stop->dump();
  const json* downtime = figure(result, "fault_downtime_seconds", "run", {{"member", "kube-apiserver-0"}});
  ASSERT_NE(downtime, nullptr);
  ASSERT_TRUE((*downtime)["value"].is_number()) << downtime->dump();
  EXPECT_NEAR((*downtime)["value"].get<double>(), down, 0.5);
  const json* restart = figure(result, "fault_restart_seconds", "run", {{"member", "kube-apiserver-0"}});
  ASSERT_NE(restart, nullptr);
  ASSERT_TRUE((*restart)["value"].is_number()) << restart->dump();
  EXPECT_LT((*restart)["value"].get<double>(), down - 7.5);

  // What failed while the apiserver was down is counted, not lost.
  double errors = 0;
  for (const auto& f : result["figures"])
    if (f["name"] == "client_errors" && f["window"] == "steady" && f["value"].is_number())
      errors += f["value"].get<double>();
  EXPECT_GT(errors, 0) << "no request failed while kube-apiserver-0 was down";
  // ... and the client retried what it could: the connections the dead apiserver refused.
  const json* refused = figure(result, "client_retries", "steady", {{"reason", "connect failed"}});
  ASSERT_NE(refused, nullptr) << "no retry after a refused connection while kube-apiserver-0 was down";
  EXPECT_GT((*refused)["value"].get<double>(), 0);
  // The watchers' streams broke with it and were opened again (2 kinds x 2 watchers).
  const json* watched = nullptr;
  for (const auto& w : result["workloads"])
    if (w["name"] == "watched") watched = &w["summary"];
  ASSERT_NE(watched, nullptr);
  EXPECT_GT((*watched)["watchStreams"].get<double>(), 4) << watched->dump();
  // The relist storm: the fleet's 100 nodes' own streams (7 each) all broke with the
  // apiserver and watched again after it came back, each listing what it watches
  // through the restarted apiserver's watch cache.
  const json* outages = figure(result, "node_watch_outages", "run", {{"workload", "fleet"}});
  ASSERT_NE(outages, nullptr);
  ASSERT_TRUE((*outages)["value"].is_number()) << outages->dump();
  EXPECT_GE((*outages)["value"].get<double>(), 700) << outages->dump();
  const json* restored = figure(result, "node_watches_restored_seconds", "run", {{"workload", "fleet"}});
  ASSERT_NE(restored, nullptr);
  ASSERT_TRUE((*restored)["value"].is_number()) << restored->dump();
  EXPECT_GE((*restored)["value"].get<double>(), down - 1) << restored->dump();
  EXPECT_LT((*restored)["value"].get<double>(), down + 40) << restored->dump();
  double initEvents = 0;
  for (const auto& f : result["figures"])
    if (f["name"] == "watch_init_events" && f["window"] == "steady" && f["value"].is_number())
      initEvents += f["value"].get<double>();
  EXPECT_GE(initEvents, 100) << "the nodes' relists sent no initial events";
  const json* goroutines = figure(result, "apiserver_goroutines_peak", "steady", {{"apiserver", "kube-apiserver-0"}});
  ASSERT_NE(goroutines, nullptr);
  EXPECT_GT((*goroutines)["value"].get<double>(), 700) << goroutines->dump();
  // The restarted apiserver's counters start again at 0: split at the restart, the
  // window's Lease PUTs read the fleet's 10/s less what the outage lost (a reset read
  // as last - first would give a fraction of that).
  const json* puts = figure(result, "write_qps", "steady",
                            {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_NE(puts, nullptr);
  ASSERT_TRUE((*puts)["value"].is_number()) << puts->dump();
  EXPECT_GT((*puts)["value"].get<double>(), 6) << puts->dump();
  EXPECT_LT((*puts)["value"].get<double>(), 10.5) << puts->dump();

  // On every chart: the fault's window as a band.
  std::string html = controlplane::readFile(out / "report.html");
  EXPECT_NE(html.find("incident incident-window"), std::string::npos);
  // Nothing left: every member stopped and the plane's data (with the run's objects)
  // deleted, no object deleted one by one through the API first (a kept plane is
  // cleaned that way: SmokeWritesEveryFileFailsTheFailingGateAndCleansUp).
  const json* cleanup = nullptr;
  for (const auto& w : result["workloads"])
    if (w["name"] == "cleanup") cleanup = &w["summary"];
  ASSERT_NE(cleanup, nullptr);
  ASSERT_TRUE(cleanup->contains("skipped")) << cleanup->dump();
  EXPECT_NE((*cleanup)["skipped"].get<std::string>().find("the local plane is stopped and its data deleted"),
            std::string::npos)
      << cleanup->dump();
  ASSERT_FALSE(seen.empty());
  EXPECT_NE(seen.front().components.size(), 0u);
  for (const auto& rec : seen) EXPECT_FALSE(controlplane::anyRunning(rec));
  EXPECT_FALSE(controlplane::readRecord(out / "plane"));
  expectOnlyLogsLeft(out / "plane");
}

// etcd killed and restarted on its data under the fleet, then the only apiserver
// killed for good near the end: the run goes on through the first, reports the second
// as down at the end, skips the cleanup it cannot do (saying why) and stops every
// member. The gates still decide the exit code.
TEST(RunTest, AnEtcdKillIsSurvivedAndAMemberLeftDownEndsTheRunWithThePlaneStopped) {
  fs::path out = makeTempDir("run-etcd-kill");
  fs::path scenario = makeTempDir("run-etcd-kill-scenario") / "etcd-kill.yaml";
  std::ofstream(scenario) << R"(apiVersion: cpscale.io/v1alpha1
kind: Scenario
name: etcd-kill
duration: 30s
seed: 1
scrapeInterval: 2s
workloads:
  - kind: kubelets
    name: fleet
    count: 50
    registrationQps: 50
    leaseDurationSeconds: 40
    statusReportFrequency: 5m
faults:
  - kill: etcd-main
    at: 5s
    restartAfter: 5s
  - kill: kube-apiserver-0
    at: 25s
gates:
  - lease_write_share >= 0.5
)";
  WatchedRun run;
  ASSERT_NO_FATAL_FAILURE(runWatchingThePlane(scenario.string(), out, "itetcdkill", run));
  const json& result = run.result;
  const auto& seen = run.seen;

  const json* etcd = nullptr;
  const json* apiserver = nullptr;
  for (const auto& i : result["incidents"]) {
    if (i["kind"] != "fault") continue;
    if (i["member"] == "etcd-main") etcd = &i;
    if (i["member"] == "kube-apiserver-0") apiserver = &i;
  }
  ASSERT_NE(etcd, nullptr) << result["incidents"].dump();
  ASSERT_NE(apiserver, nullptr) << result["incidents"].dump();
  // etcd came back on its data: its window closes once it is ready again.
  EXPECT_NE((*etcd)["detail"].get<std::string>().find("ready again"), std::string::npos) << etcd->dump();
  const double etcdDown = (*etcd)["untilSeconds"].get<double>() - (*etcd)["atSeconds"].get<double>();
  EXPECT_GE(etcdDown, 5) << etcd->dump();
  EXPECT_LT(etcdDown, 30) << etcd->dump();
  // The apiserver stayed down: its window runs to the run's end, and says so.
  EXPECT_NE((*apiserver)["detail"].get<std::string>().find("not restarted"), std::string::npos) << apiserver->dump();
  // Lease renewals went on once etcd was back: between the two faults the fleet's
  // 5/s is read again (the renewals that failed meanwhile are sent again first, so
  // the window's mean may pass 5/s). The apiserver's counters survive an etcd restart.
  const json* puts = figure(result, "write_qps", "steady",
                            {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_NE(puts, nullptr);
  ASSERT_TRUE((*puts)["value"].is_number()) << puts->dump();
  EXPECT_GT((*puts)["value"].get<double>(), 2) << puts->dump();
  EXPECT_LT((*puts)["value"].get<double>(), 10) << puts->dump();
  const double etcdBack = (*etcd)["untilSeconds"].get<double>(),
               apiserverGone = (*apiserver)["atSeconds"].get<double>();
  std::vector<double> between;
  const json& overTime = (*puts)["overTime"];
  for (std::size_t k = 0; k < overTime["seconds"].size(); ++k) {
    const double t = overTime["seconds"][k].get<double>();
    if (t > etcdBack + 4 && t < apiserverGone) between.push_back(overTime["values"][k].get<double>());
  }
  ASSERT_GE(between.size(), 3u) << puts->dump() << " etcd back at " << etcdBack << ", apiserver gone at "
                                << apiserverGone;
  // The renewals failed during the outage are retried together, so the fleet renews in
  // a clump every 10 s from then on and one 2 s scrape window may read 3/s where the
  // next reads 7/s. The retries themselves land when the apiserver's etcd client is
  // back, which may be a window or two after etcd's readiness: one window may read 30/s
  // (all 50 Leases at once). So every window sees renewals, their mean is at least the
  // fleet's 5/s less a clump's share, and their median (which one retry burst cannot
  // move) at most twice it.
  double sum = 0;
  for (double v : between) {
    EXPECT_GT(v, 0) << puts->dump();
    sum += v;
  }
  EXPECT_GT(sum / between.size(), 3.5) << puts->dump();
  std::vector<double> sorted = between;
  std::sort(sorted.begin(), sorted.end());
  const double median =
      sorted.size() % 2 ? sorted[sorted.size() / 2] : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  EXPECT_LT(median, 10) << puts->dump();
  double errors = 0;
  for (const auto& f : result["figures"])
    if (f["name"] == "client_errors" && f["window"] == "steady" && f["value"].is_number())
      errors += f["value"].get<double>();
  EXPECT_GT(errors, 0) << "no request failed while etcd or the apiserver was down";

  // No cleanup through an apiserver that is gone: skipped, with the reason; the plane
  // stopped and its data (with the run's objects) deleted.
  const json* cleanup = nullptr;
  for (const auto& w : result["workloads"])
    if (w["name"] == "cleanup") cleanup = &w["summary"];
  ASSERT_NE(cleanup, nullptr);
  EXPECT_NE((*cleanup)["skipped"].get<std::string>().find("kube-apiserver-0 was down"), std::string::npos)
      << cleanup->dump();
  ASSERT_FALSE(seen.empty());
  for (const auto& rec : seen) EXPECT_FALSE(controlplane::anyRunning(rec));
  EXPECT_FALSE(controlplane::readRecord(out / "plane"));
  expectOnlyLogsLeft(out / "plane");
}

// Three shards of one node-bound run, as three processes against one plane (`cpscale
// up`), and the same run in one process: shard 0 sets up, scrapes and cleans up, each
// shard drives a third of the fleet, and the servers see the same write rate. Each
// publishes its result in the cluster, and `cpscale collect` merges them as `cpscale
// merge` does the files.
TEST(RunTest, ThreeShardsDriveWhatOneProcessDoesAndLeaveNothing) {
  const fs::path state = makeTempDir("run-shards-plane");
  ASSERT_EQ(runCommand(cpscale("up --state-dir " + state.string() + " --name shards-it")).exitCode, 0);
  const std::string kubeconfig = (state / "kubeconfig").string();
  const std::string scenario = std::string(CPSCALE_SOURCE_DIR) + "/scenarios/node-bound.yaml";
  const std::vector<std::string> common{"--kubeconfig", kubeconfig, "--set", "duration=30s", "--quiet"};
  constexpr std::size_t kShards = 3;
  const fs::path out = makeTempDir("run-shards");
  std::vector<controlplane::ProcessIdentity> procs;
  for (std::size_t i = 0; i < kShards; ++i) {
    std::vector<std::string> argv{CPSCALE_BINARY,
                                  "run",
                                  scenario,
                                  "--out",
                                  (out / std::to_string(i)).string(),
                                  "--run-id",
                                  "itshards",
                                  "--shard",
                                  std::to_string(i) + "/" + std::to_string(kShards),
                                  "--publish-result"};
    argv.insert(argv.end(), common.begin(), common.end());
    procs.push_back(controlplane::spawn({argv, out / ("shard-" + std::to_string(i) + ".log"), false, {}}));
  }
  std::vector<json> shards;
  for (std::size_t i = 0; i < kShards; ++i) {
    int status = 0;
    ASSERT_EQ(::waitpid(procs[i].pid, &status, 0), procs[i].pid);
    const std::string log = controlplane::tailFile(out / ("shard-" + std::to_string(i) + ".log"), 30);
    ASSERT_TRUE(WIFEXITED(status)) << log;
    shards.push_back(readJson(out / std::to_string(i) / "result.json"));
    EXPECT_EQ(shards[i]["status"], "completed") << shards[i]["statusDetail"] << log;
    EXPECT_EQ(shards[i]["shard"]["index"], i);
    EXPECT_EQ(shards[i]["shard"]["count"], kShards);
    // Each judges the gates it can: shard 0 all four, the others the client-side three
    // (lease_write_share is the servers').
    EXPECT_EQ(shards[i]["gates"].size(), i == 0 ? 4u : 3u) << shards[i]["gates"].dump();
    EXPECT_EQ(WEXITSTATUS(status), 0) << shards[i]["gates"].dump() << log;
  }
  // Every shard's window started at one instant (each on its own timeline, so compare
  // the Unix times the windows began: startedAt + startSeconds would need the origin;
  // the length is what each measured).
  for (const auto& s : shards) EXPECT_NEAR(s["measuredSeconds"].get<double>(), 30, 1) << s["phases"].dump();
  // Each drove its third of the fleet's renewals (client side).
  double clientPuts = 0;
  for (const auto& s : shards) {
    const json* puts = figure(s, "client_write_requests", "steady", {{"resource", "leases"}, {"verb", "PUT"}});
    ASSERT_NE(puts, nullptr) << s["figures"].dump().substr(0, 2000);
    EXPECT_NEAR((*puts)["value"].get<double>(), 30.0 * 30 / kShards, 30.0 * 30 / kShards * 0.2) << puts->dump();
    clientPuts += (*puts)["value"].get<double>();
  }
  EXPECT_NEAR(clientPuts, 30.0 * 30, 30.0 * 30 * 0.1);
  // Only shard 0 read the servers, and it cleaned up for all.
  const json* sharded = figure(shards[0], "write_qps", "steady");
  ASSERT_NE(sharded, nullptr);
  ASSERT_TRUE((*sharded)["value"].is_number()) << sharded->dump();
  for (std::size_t i = 1; i < kShards; ++i) {
    const json* w = figure(shards[i], "write_qps", "steady");
    EXPECT_TRUE(w == nullptr || !(*w)["value"].is_number()) << "shard " << i << " scraped the servers: " << w->dump();
    bool skipped = false;
    for (const auto& wl : shards[i]["workloads"])
      if (wl["name"] == "cleanup") skipped = wl["summary"].contains("skipped");
    EXPECT_TRUE(skipped) << shards[i]["workloads"].dump();
  }
  EXPECT_EQ(leftovers(state / "kubeconfig", "itshards"), "");
  // The results outlived the run's cleanup, for collect.
  const std::string results =
      "kubectl --kubeconfig " + kubeconfig + " get configmaps -n default -o name -l cpscale.io/result-of=itshards";
  EXPECT_EQ(
      runCommand(results).output,
      "configmap/cpscale-itshards-result-0\nconfigmap/cpscale-itshards-result-1\nconfigmap/cpscale-itshards-result-2\n");

  // One result from the three: the renewals of all three shards, the servers' figures
  // from shard 0, the gates judged on the whole.
  std::string args = "merge";
  for (std::size_t i = 0; i < kShards; ++i) args += " " + (out / std::to_string(i) / "result.json").string();
  auto merge = runCommand(cpscale(args + " --out " + (out / "merged").string()));
  EXPECT_EQ(merge.exitCode, 0) << merge.output;
  json merged = readJson(out / "merged" / "result.json");
  EXPECT_EQ(merged["mergedShards"], kShards);
  const json* mergedPuts = figure(merged, "client_write_requests", "steady", {{"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_NE(mergedPuts, nullptr);
  EXPECT_EQ((*mergedPuts)["value"].get<double>(), clientPuts);
  const json* mergedWrites = figure(merged, "write_qps", "steady");
  ASSERT_NE(mergedWrites, nullptr);
  EXPECT_EQ((*mergedWrites)["value"], (*sharded)["value"]);
  EXPECT_EQ(merged["gates"].size(), 4u);
  EXPECT_TRUE(fs::exists(out / "merged" / "report.html"));
  // The same from the cluster, which it leaves without them.
  auto collect = runCommand(cpscale("collect --run-id itshards --shards 3 --timeout 1m --out " +
                                    (out / "collected").string() + " --kubeconfig " + kubeconfig));
  EXPECT_EQ(collect.exitCode, merge.exitCode) << collect.output;
  json collected = readJson(out / "collected" / "merged" / "result.json");
  EXPECT_EQ(collected["figures"], merged["figures"]);
  EXPECT_EQ(collected["gates"], merged["gates"]);
  EXPECT_EQ(runCommand(results).output, "");

  // The same run in one process.
  auto single = runCommand(cpscale("run " + scenario + " --out " + (out / "single").string() +
                                   " --run-id itsingle --kubeconfig " + kubeconfig + " --set duration=30s --quiet"));
  json one = readJson(out / "single" / "result.json");
  ASSERT_EQ(one["status"], "completed") << single.output;
  const json* whole = figure(one, "write_qps", "steady");
  ASSERT_NE(whole, nullptr);
  const double a = (*sharded)["value"].get<double>(), b = (*whole)["value"].get<double>();
  std::cout << "write_qps: three shards " << a << "/s, one process " << b << "/s\n";
  EXPECT_NEAR(a, b, 0.05 * b);
  EXPECT_EQ(runCommand(cpscale("down --state-dir " + state.string() + " --purge")).exitCode, 0);
}

// A 429 storm: one mutating in-flight slot, APF off, the workloads as an ordinary
// user. The apiserver answers the excess 429 with Retry-After 1 s; the client honours
// it, the retries are figures, and the latency from the scheduled time shows the
// stall the latency from the last send does not.
TEST(RunTest, OverloadIsAnswered429AndTheRetriesAreFigures) {
  fs::path out = makeTempDir("run-overload");
  auto r = runCommand(cpscale("run " + std::string(CPSCALE_SOURCE_DIR) + "/scenarios/overload.yaml --profile " +
                              std::string(CPSCALE_SOURCE_DIR) + "/profiles/overload.yaml --out " + out.string() +
                              " --run-id itoverload --set duration=30s"));
  json result = readJson(out / "result.json");
  ASSERT_EQ(result["status"], "completed") << result["statusDetail"] << r.output;
  EXPECT_EQ(result["exitCode"], r.exitCode) << r.output;
  const json* throttled = figure(result, "client_errors_by_code", "steady", {{"code", "429"}});
  ASSERT_NE(throttled, nullptr) << "no 429 in the steady window";
  EXPECT_GT((*throttled)["value"].get<double>(), 10);
  // Not one 403: the user's binding to cluster-admin lets it do what admin did.
  EXPECT_EQ(figure(result, "client_errors_by_code", "steady", {{"code", "403"}}), nullptr);
  const json* retries = figure(result, "client_retries", "steady", {{"reason", "429"}});
  ASSERT_NE(retries, nullptr);
  EXPECT_GT((*retries)["value"].get<double>(), 10);
  // Retry-After: 1 is honoured: the longest wait is that second (not a 100 ms backoff).
  const json* wait = figure(result, "client_retry_wait_max", "steady");
  ASSERT_NE(wait, nullptr);
  ASSERT_TRUE((*wait)["value"].is_number()) << wait->dump();
  EXPECT_NEAR((*wait)["value"].get<double>(), 1.0, 0.05);
  const json* waited = figure(result, "client_retry_wait_seconds_total", "steady");
  ASSERT_NE(waited, nullptr);
  EXPECT_NEAR((*waited)["value"].get<double>(), (*retries)["value"].get<double>(),
              0.1 * (*retries)["value"].get<double>() + 1);
  // The retries are the client's own waiting, not the generator running late.
  const json* limited = figure(result, "generator_limited", "steady");
  ASSERT_NE(limited, nullptr);
  EXPECT_EQ((*limited)["value"], 0) << limited->dump();
  // The stall: a create that was retried took over a second from its schedule; its
  // last attempt alone did not.
  const json* scheduled = figure(result, "client_latency_p99", "steady",
                                 {{"resource", "agentsessions"}, {"verb", "POST"}, {"measured_from", "scheduled"}});
  const json* sent = figure(result, "client_latency_p99", "steady",
                            {{"resource", "agentsessions"}, {"verb", "POST"}, {"measured_from", "sent"}});
  ASSERT_TRUE(scheduled && sent);
  EXPECT_GE((*scheduled)["value"].get<double>(), 1.0) << scheduled->dump();
  EXPECT_LT((*sent)["value"].get<double>(), 1.0) << sent->dump();
  // Writes still went through.
  EXPECT_GT(figureValue(result, "write_qps", "resource", "agentsessions"), 5);
  // Nothing of the run is left: the plane it started is gone.
  EXPECT_FALSE(controlplane::readRecord(out / "plane"));
}

}  // namespace
}  // namespace cpscale::testing
