// The cpscale binary's exit codes for bad input, as a user or CI sees them: bad
// numbers, YAML errors, refused profile flags and unconfirmed targets are exit 2 with
// file and line, found before anything is contacted; a closed stdout never kills it.
// And classify on the fixture results: 0 when classified, 2 for bad input, 3 for a
// cluster it cannot reach.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cpscale::cli {
namespace {
namespace fs = std::filesystem;

struct Outcome {
  int exitCode = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string output;  // stdout and stderr
};

// Runs the binary with `args`. With closedStdout, its stdout is a pipe nobody reads.
// `env` is set in its environment, which otherwise is not a pod's (even when the test
// runs in one).
Outcome cpscale(const std::vector<std::string>& args, bool closedStdout = false,
                const std::map<std::string, std::string>& env = {}) {
  int out[2];
  if (::pipe(out) != 0) return {};
  int dead[2];
  if (closedStdout && ::pipe(dead) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);  // what a shell gives it: the binary must ignore it itself
    ::dup2(closedStdout ? dead[1] : out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::close(out[0]);
    if (closedStdout) ::close(dead[0]);
    ::setenv("CPSCALE_ASSUME_YES", "0", 1);
    ::unsetenv("KUBERNETES_SERVICE_HOST");
    ::unsetenv("KUBERNETES_SERVICE_PORT");
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv{const_cast<char*>(CPSCALE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(CPSCALE_BINARY, argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  if (closedStdout) {
    ::close(dead[0]);
    ::close(dead[1]);
  }
  Outcome o;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) o.output.append(buf, static_cast<std::size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) o.exitCode = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  return o;
}

class ExitCodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::path(::testing::TempDir()) /
          ("cpscale-exit-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  }
  std::string scenario(const std::string& extra) {
    return write("s.yaml",
                 "apiVersion: cpscale.io/v1alpha1\nkind: Scenario\nname: s\nduration: 10s\n"
                 "workloads:\n  - kind: kubelets\n    count: 1\n" +
                     extra);
  }
  std::string kubeconfig(const std::string& server) {
    return write("kubeconfig", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
                                   "\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\n"
                                   "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
                                   "current-context: x\n");
  }
  // Every bad-input case points --bin-dir at nothing: had it got that far, starting a
  // plane would fail with exit 3, not 2.
  std::vector<std::string> run(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    args.push_back("--bin-dir=" + (dir / "no-binaries").string());
    args.push_back("--out=" + (dir / "out").string());
    args.push_back("--quiet");
    return args;
  }
  fs::path dir;
};

TEST_F(ExitCodesTest, BadGateThresholdsAreExitTwoWithFileAndLine) {
  std::string s = scenario("gates:\n  - write_qps <= 1e999\n");
  Outcome o = cpscale(run({s}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(s + ":9: field 'gates[0]': threshold '1e999'"), std::string::npos) << o.output;
  s = scenario("gates:\n  - write_qps <= 1" + std::string(400, '0') + "\n");
  o = cpscale(run({s}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(":9: field 'gates[0]': threshold"), std::string::npos) << o.output;
}

// A gate the scenario can never produce is refused before anything starts, naming it;
// and a capacity gate is judged only by a capacity search, which the refusal names.
TEST_F(ExitCodesTest, GatesThatCanNeverBeJudgedAreExitTwoWithFileAndLine) {
  const std::string idle = write("idle.yaml",
                                 "apiVersion: cpscale.io/v1alpha1\nkind: Scenario\nname: s\nduration: 10s\n"
                                 "workloads:\n  - kind: dormant\n    crdKinds: 1\n    objectsPerKind: 5\n"
                                 "gates:\n  - generator_limited == false\n");
  Outcome o = cpscale(run({idle}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(idle + ":10: field 'gates[0]': gate 'generator_limited == false' can never be judged here"),
            std::string::npos)
      << o.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "a refused run creates nothing";
  const std::string index = CPSCALE_SOURCE_DIR "/scenarios/index/node.yaml";
  for (const char* command : {"run", "simulate"}) {
    o = cpscale({command, index, "--quiet", "--out", (dir / "out").string()});
    EXPECT_EQ(o.exitCode, 2) << command << ": " << o.output;
    EXPECT_NE(o.output.find("is judged by a capacity search: run `cpscale capacity"), std::string::npos) << o.output;
  }
  o = cpscale({"job", index, "--shards", "2", "--run-id", "rj2"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_EQ(o.output.find("apiVersion: v1"), std::string::npos) << "manifests printed for a refused job";
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST_F(ExitCodesTest, YamlSyntaxErrorsAreExitTwoWithFileAndLine) {
  std::string s = write("broken.yaml", "apiVersion: cpscale.io/v1alpha1\nname: s\nworkloads: [\n  - kind: x\n");
  Outcome o = cpscale(run({s}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(s + ":"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("invalid YAML"), std::string::npos) << o.output;

  std::string p = write("p.yaml", "name: p\napiservers: [1\n");
  o = cpscale(run({scenario(""), "--profile", p}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(p + ":"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("invalid YAML"), std::string::npos) << o.output;
}

TEST_F(ExitCodesTest, BadSetValuesAreExitTwo) {
  std::string s = scenario("gates:\n  - write_qps <= 1\n");
  for (const char* set : {"duration=[10s", "gates[0]={x: [", "gates[0]=x <= 1e999", "driver.lagQuantile=.nan",
                          "duration=1"
                          "00000000000000000000000000000000000000000000000000000000000000000000s"}) {
    SCOPED_TRACE(set);
    Outcome o = cpscale(run({s, "--set", set}));
    EXPECT_EQ(o.exitCode, 2) << o.output;
  }
}

TEST_F(ExitCodesTest, ProfilesOverridingOwnedFlagsOrEscapingDirectoriesAreExitTwo) {
  std::string p = write("p.yaml", "name: p\napiserverArgs:\n  - --authorization-mode=AlwaysAllow\n");
  Outcome o = cpscale(run({scenario(""), "--profile", p}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(p + ":3: field 'apiserverArgs[0]': --authorization-mode cannot be set by a profile"),
            std::string::npos)
      << o.output;
  p = write("p.yaml", "name: ../../escape\n");
  o = cpscale(run({scenario(""), "--profile", p}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(p + ":1: field 'name'"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(dir / "escape"));
}

TEST_F(ExitCodesTest, LookAlikeLoopbackServersNeedYes) {
  for (const char* server : {"https://127.0.0.1@evil.example:6443", "https://127.evil.example:6443"}) {
    SCOPED_TRACE(server);
    std::string k = kubeconfig(server);
    Outcome o = cpscale(run({scenario(""), "--kubeconfig", k}));
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find("Re-run with --yes"), std::string::npos) << o.output;
    o = cpscale({"cleanup", "--run", "r1", "--kubeconfig", k});
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find("Re-run with --yes"), std::string::npos) << o.output;
  }
}

// The workloads' own identity is the local plane's (its CA issues the certificate):
// against a cluster it is refused before anything is sent.
TEST_F(ExitCodesTest, LoadIdentityUserIsRefusedAgainstACluster) {
  const std::string profile = std::string(CPSCALE_SOURCE_DIR) + "/profiles/overload.yaml";
  Outcome o = cpscale(run({scenario(""), "--profile", profile, "--kubeconfig", kubeconfig("https://127.0.0.1:1")}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(profile + ": field 'loadIdentity'"), std::string::npos) << o.output;
}

// A shard needs the other shards' cluster and run id; a malformed one is refused
// before anything is sent.
TEST_F(ExitCodesTest, ShardsNeedOneClusterAndOneRunId) {
  const std::string cluster = kubeconfig("https://127.0.0.1:1");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{scenario(""), "--shard", "2/2", "--kubeconfig", cluster, "--run-id", "r1"}, "must be below N"},
      {{scenario(""), "--shard", "one/2", "--kubeconfig", cluster, "--run-id", "r1"}, "whole numbers"},
      {{scenario(""), "--shard", "0/2", "--run-id", "r1"}, "share one cluster"},
      {{scenario(""), "--shard", "1/2", "--kubeconfig", cluster}, "same --run-id"},
  };
  for (const auto& [args, says] : cases) {
    Outcome o = cpscale(run(args));
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find("command line: field '--shard'"), std::string::npos) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
  }
}

// --in-cluster is the pod's own cluster: exclusive with a kubeconfig, refused outside a
// pod naming what is missing, and a cluster for everything that needs one (--shard).
TEST_F(ExitCodesTest, InClusterIsExclusiveAndNamesWhatIsMissing) {
  const std::string k = kubeconfig("https://127.0.0.1:1");
  Outcome o = cpscale(run({scenario(""), "--in-cluster", "--kubeconfig", k}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("command line: field '--in-cluster'"), std::string::npos) << o.output;
  o = cpscale({"check", "--in-cluster", "--context", "x"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("field '--in-cluster'"), std::string::npos) << o.output;

  o = cpscale(run({scenario(""), "--in-cluster", "--shard", "1/2", "--run-id", "r1"}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_EQ(o.output.find("share one cluster"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("environment: field 'KUBERNETES_SERVICE_HOST': not set"), std::string::npos) << o.output;
  // In a pod's environment without its token (automountServiceAccountToken: false, or
  // not a pod at all): the file is named.
  const std::map<std::string, std::string> pod{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                               {"KUBERNETES_SERVICE_PORT", "443"}};
  if (!fs::exists("/var/run/secrets/kubernetes.io/serviceaccount/token")) {
    o = cpscale({"check", "--in-cluster"}, false, pod);
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find("/var/run/secrets/kubernetes.io/serviceaccount/token: field 'token': missing"),
              std::string::npos)
        << o.output;
  }
  o = cpscale({"check", "--in-cluster"}, false,
              {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "https"}});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("field 'KUBERNETES_SERVICE_PORT'"), std::string::npos) << o.output;
}

// cpscale job checks the scenario, the overrides and its options with the parser
// `cpscale run` uses before it prints or sends anything; printing contacts nothing.
TEST_F(ExitCodesTest, JobRefusesBadInputBeforePrintingAnything) {
  const std::string faulty = write("faulty.yaml",
                                   "apiVersion: cpscale.io/v1alpha1\nkind: Scenario\nname: s\nduration: 10s\n"
                                   "workloads:\n  - kind: kubelets\n    count: 1\nfaults:\n"
                                   "  - {kill: kube-apiserver-0, at: 1s}\n");
  const std::string s = scenario("");
  Outcome o = cpscale({"job", s, "--shards", "3", "--run-id", "rj1"});
  ASSERT_EQ(o.exitCode, 0) << o.output;
  EXPECT_EQ(o.output.rfind("---\napiVersion: v1\nkind: ConfigMap\n", 0), 0u) << o.output;
  EXPECT_NE(o.output.find("completionMode: Indexed"), std::string::npos) << o.output;
  // It ends with the collect step.
  EXPECT_EQ(o.output.substr(o.output.rfind("\n#", o.output.size() - 2) + 1),
            "#   cpscale collect --run-id rj1 --shards 3 --timeout 22m\n");

  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"job", s, "--shards", "0"}, "command line: field '--shards'"},
      {{"job", s, "--shards", "1"}, "command line: field '--shards'"},
      {{"job", s, "--shards", "1025"}, "command line: field '--shards'"},
      {{"job", s}, "command line: field '--shards'"},
      {{"job", s, "--shards", "2", "--set", "duration=soon"}, "field 'duration'"},
      {{"job", s, "--shards", "2", "--set", "workloads[0].count=-1"}, "count"},
      {{"job", faulty, "--shards", "2"}, faulty + ":9: field 'faults[0]'"},
      {{"job", s, "--shards", "2", "--namespace", "Not_A_Namespace"}, "command line: field '--namespace'"},
      {{"job", s, "--shards", "2", "--run-id", "UPPER"}, "command line: field '--run-id'"},
      {{"job", s, "--shards", "2", "--image", ""}, "command line: field '--image'"},
      {{"job", s, "--shards", "2", "--dry-run"}, "command line: field '--dry-run'"},
      {{"job", (dir / "absent.yaml").string(), "--shards", "2"}, "absent.yaml"},
  };
  for (const auto& [args, says] : cases) {
    SCOPED_TRACE(args.back());
    o = cpscale(args);
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
    EXPECT_EQ(o.output.find("apiVersion"), std::string::npos) << "printed before refusing: " << o.output;
  }
  // Creating it on a server that only looks local needs --yes; nothing is sent first.
  o = cpscale({"job", s, "--shards", "2", "--apply", "--kubeconfig", kubeconfig("https://127.evil.example:6443")});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("Re-run with --yes"), std::string::npos) << o.output;
  // An unreachable cluster is exit 3.
  o = cpscale({"job", s, "--shards", "2", "--apply", "--dry-run", "--kubeconfig", kubeconfig("https://127.0.0.1:1")});
  EXPECT_EQ(o.exitCode, 3) << o.output;
}

// Publishing a result is a shard's; collect needs the run id and, to delete what it
// collected on a server that only looks local, --yes.
TEST_F(ExitCodesTest, PublishAndCollectRefuseBadInput) {
  const std::string k = kubeconfig("https://127.0.0.1:1");
  Outcome o = cpscale(run({scenario(""), "--publish-result", "--kubeconfig", k}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("command line: field '--publish-result'"), std::string::npos) << o.output;

  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"collect", "--kubeconfig", k}, "field '--run-id'"},
      {{"collect", "--run-id", "Bad!", "--kubeconfig", k}, "field '--run-id'"},
      {{"collect", "--run-id", "r1", "--shards", "0", "--kubeconfig", k}, "field '--shards'"},
      {{"collect", "--run-id", "r1", "--timeout", "soon", "--kubeconfig", k}, "field '--timeout'"},
      {{"collect", "--run-id", "r1", "--kubeconfig", kubeconfig("https://127.evil.example:6443")}, "Re-run with --yes"},
  };
  for (const auto& [args, says] : cases) {
    SCOPED_TRACE(says);
    o = cpscale(args);
    EXPECT_EQ(o.exitCode, 2) << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << o.output;
  }
  // Reading only (--keep) needs no confirmation; an unreachable cluster is exit 3.
  o = cpscale({"collect", "--run-id", "r1", "--keep", "--kubeconfig", kubeconfig("https://127.evil.example:1")});
  EXPECT_EQ(o.exitCode, 3) << o.output;
}

TEST_F(ExitCodesTest, CleanupTimeoutMustBeADuration) {
  Outcome o =
      cpscale({"cleanup", "--run", "r1", "--timeout", "soon", "--kubeconfig", kubeconfig("https://127.0.0.1:1")});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--timeout"), std::string::npos) << o.output;
}

TEST_F(ExitCodesTest, AClosedStdoutDoesNotKillIt) {
  Outcome o = cpscale({"version"}, /*closedStdout=*/true);
  EXPECT_EQ(o.signal, 0) << "killed by signal " << o.signal;
  EXPECT_EQ(o.exitCode, 0) << o.output;
}

const std::string kClassify = CPSCALE_SOURCE_DIR "/test/fixtures/classify";

TEST_F(ExitCodesTest, ClassifyClassifiesEachFixtureAndItsJsonIsValid) {
  const std::pair<const char*, const char*> cases[] = {
      {"node-bound.json", "node"}, {"churn-bound.json", "churn"}, {"state-bound.json", "state"}};
  for (const auto& [file, binding] : cases) {
    SCOPED_TRACE(file);
    Outcome o = cpscale({"classify", kClassify + "/" + file, "--capacity", kClassify + "/capacity.json"});
    EXPECT_EQ(o.exitCode, 0) << o.output;
    EXPECT_NE(o.output.find("Binding axis: " + std::string(binding) + "\n"), std::string::npos) << o.output;
    o = cpscale({"classify", kClassify + "/" + file, "--capacity", kClassify + "/capacity.json", "--json"});
    EXPECT_EQ(o.exitCode, 0) << o.output;
    nlohmann::json j = nlohmann::json::parse(o.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << o.output;
    EXPECT_EQ(j["binding"]["axis"], binding);
  }
  Outcome o = cpscale(
      {"classify", kClassify + "/node-bound.json", "--capacity", kClassify + "/capacity.json", "--headroom", "1"});
  EXPECT_NE(o.output.find("Rung: classic\n"), std::string::npos) << o.output;
}

// `report` renders a capacity index's pages from its capacity.json: the shipped one
// reads back, and an index asked for a format it has not is bad input.
TEST_F(ExitCodesTest, ReportRendersTheShippedCapacityIndex) {
  const std::string index = CPSCALE_SOURCE_DIR "/reports/examples/index/capacity.json";
  Outcome o = cpscale({"report", index, "--format", "md"});
  ASSERT_EQ(o.exitCode, 0) << o.output;
  EXPECT_NE(o.output.find("# Capacity index"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("| classic "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(" nodes"), std::string::npos) << o.output;
  o = cpscale({"report", index, "--format", "junit"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--format"), std::string::npos) << o.output;
}

TEST_F(ExitCodesTest, ClassifyBadInputIsExitTwoNamingTheFile) {
  const std::string result = kClassify + "/node-bound.json";
  std::string garbled = write("garbled.json", "{\"kind\": \"CapacityIndex\", ");
  Outcome o = cpscale({"classify", result, "--capacity", garbled});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(garbled + ": is not valid JSON"), std::string::npos) << o.output;
  std::string missing = (dir / "absent.json").string();
  o = cpscale({"classify", result, "--capacity", missing});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(missing), std::string::npos) << o.output;
  // A result where an index belongs, and the other way round.
  o = cpscale({"classify", result, "--capacity", result});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find(result + ": field '/kind'"), std::string::npos) << o.output;
  o = cpscale({"classify", kClassify + "/capacity.json"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"classify", result, "--headroom", "0"},
        {"classify", result, "--headroom", "1.5"},
        {"classify", result, "--window", "5s"},
        {"classify", "--window", "0s"},
        {"classify", result, "--kubeconfig", kubeconfig("https://127.0.0.1:1")}}) {
    SCOPED_TRACE(args.back());
    EXPECT_EQ(cpscale(args).exitCode, 2);
  }
}

TEST_F(ExitCodesTest, ClassifyAnUnreachableClusterIsExitThreeWithoutItsCredentials) {
  Outcome o = cpscale({"classify", "--kubeconfig", kubeconfig("https://127.0.0.1:1"), "--window", "1s"});
  EXPECT_EQ(o.exitCode, 3) << o.output;
  EXPECT_NE(o.output.find("cannot reach https://127.0.0.1:1"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("token: t"), std::string::npos) << o.output;
}

// --propagate-every puts a lease tier on every profile; a period the node lifecycle
// controller would not tolerate, or no duration, is bad input before anything starts.
TEST_F(ExitCodesTest, APropagationPeriodPastTheGracePeriodIsExitTwo) {
  const std::string s = scenario("");
  Outcome o = cpscale(run({s, "--propagate-every", "60s"}));
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--propagate-every"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("grace period"), std::string::npos) << o.output;
  // A cluster's plane is its own: a tier cannot be put in front of it.
  o = cpscale({"run", s, "--kubeconfig", kubeconfig("https://127.0.0.1:1"), "--propagate-every", "30s", "--quiet"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("only recorded"), std::string::npos) << o.output;
  o = cpscale({"simulate", s, "--propagate-every", "soon", "--quiet"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("'soon' is not a duration"), std::string::npos) << o.output;
}

// capture: bad options are exit 2 before anything is contacted and nothing is
// written; a cluster it cannot reach is exit 3, named without its credentials, and it
// asks no --yes of a non-loopback server (it sends no load) but writes no file either.
TEST_F(ExitCodesTest, CaptureRefusesBadOptionsAndNamesAnUnreachableCluster) {
  const std::string out = (dir / "c.yaml").string();
  const std::string kc = kubeconfig("https://203.0.113.9:6443");
  Outcome o = cpscale({"capture", "--kubeconfig", kc});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--output"), std::string::npos) << o.output;
  o = cpscale({"capture", "--kubeconfig", kc, "-o", out, "--window", "5"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--window"), std::string::npos) << o.output;
  o = cpscale({"capture", "--kubeconfig", kc, "-o", out, "--scale", "0"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  o = cpscale({"capture", "--kubeconfig", kc, "-o", (dir / "no" / "c.yaml").string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_FALSE(fs::exists(out));
  o = cpscale({"capture", "--kubeconfig", kubeconfig("https://127.0.0.1:1"), "-o", out, "--window", "10s"});
  EXPECT_EQ(o.exitCode, 3) << o.output;
  EXPECT_NE(o.output.find("https://127.0.0.1:1"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("token: t"), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("--yes"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
}

// calibrate refits stored probes without a plane: the fixture probes give a
// calibration file (exit 0); a directory without probes, or a probe option beside
// --from, is bad input; probes that cannot be fitted are exit 3.
TEST_F(ExitCodesTest, CalibrateRefitsStoredProbes) {
  const std::string probes = CPSCALE_SOURCE_DIR "/test/fixtures/calibration/probes";
  const std::string out = (dir / "cal" / "calibration.json").string();
  // --no-validate: the validation runs live planes.
  Outcome o = cpscale({"calibrate", "--from", probes, "--out", out, "--no-validate"});
  ASSERT_EQ(o.exitCode, 0) << o.output;
  EXPECT_NE(o.output.find("apiserverCpuLeaseWrite"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("Calibration: " + out), std::string::npos) << o.output;
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["kind"], "Calibration");
  EXPECT_EQ(j["version"], 3);

  o = cpscale({"calibrate", "--from", dir.string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("holds no probe"), std::string::npos) << o.output;
  o = cpscale({"calibrate", "--from", probes, "--quick"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--quick"), std::string::npos) << o.output;
  // --validate names cases, and keeps the other entries of a file that exists: bad
  // input otherwise, before anything runs.
  o = cpscale({"calibrate", "--from", probes, "--out", out, "--validate", "no-such-case"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("no validation case is named 'no-such-case'"), std::string::npos) << o.output;
  o = cpscale({"calibrate", "--from", probes, "--out", (dir / "none.json").string(), "--validate", "crossing"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("does not exist"), std::string::npos) << o.output;
  EXPECT_FALSE(fs::exists(dir / "none.json"));
  o = cpscale({"calibrate", "--from", probes, "--out", out, "--validate", "crossing", "--no-validate"});
  EXPECT_EQ(o.exitCode, 2) << o.output;

  // Only the idle probe: nothing to fit the CPU per request with.
  fs::create_directories(dir / "some" / "idle");
  for (const char* f : {"result.json", "probe.json"}) fs::copy_file(probes + "/idle/" + f, dir / "some" / "idle" / f);
  o = cpscale({"calibrate", "--from", (dir / "some").string(), "--out", out});
  EXPECT_EQ(o.exitCode, 3) << o.output;
  EXPECT_NE(o.output.find("cannot be fitted: no node probe"), std::string::npos) << o.output;
}

// simulate needs no plane: a run on the model with the fixture probes' calibration
// says which calibration it used and exits as its gates decide; bad input is exit 2
// naming what is wrong.
TEST_F(ExitCodesTest, SimulateRunsOnTheModelAndRefusesBadInput) {
  const std::string cal = (dir / "cal.json").string();
  ASSERT_EQ(cpscale({"calibrate", "--from", CPSCALE_SOURCE_DIR "/test/fixtures/calibration/probes", "--out", cal,
                     "--no-validate"})
                .exitCode,
            0);
  const std::string scenario = CPSCALE_SOURCE_DIR "/scenarios/node-bound.yaml";
  const std::string out = (dir / "sim").string();
  Outcome o = cpscale({"simulate", scenario, "--calibration", cal, "--set", "workloads.fleet.count=60", "--set",
                       "duration=20s", "--quiet", "--out", out});
  EXPECT_EQ(o.exitCode, 0) << o.output;
  EXPECT_NE(o.output.find("cpscale simulate: calibration " + cal), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("(model, virtual time): completed"), std::string::npos) << o.output;
  EXPECT_TRUE(fs::exists(fs::path(out) / "result.json"));
  EXPECT_TRUE(fs::exists(fs::path(out) / "report.html"));

  o = cpscale({"simulate", scenario, "--calibration", (dir / "missing.json").string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("missing.json"), std::string::npos) << o.output;
  o = cpscale({"simulate", scenario, "--calibration", cal, "--set", "workloads.fleet.count=many"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("count"), std::string::npos) << o.output;
  o = cpscale({"simulate", scenario, "--calibration", cal, "--max-actors", "0"});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("--max-actors"), std::string::npos) << o.output;
}

// The index projected on the model: each step a simulation, the index labelled with
// the calibration and the cores each member was given; options that only make sense
// for a projection, and a scoped --set naming no scenario, are exit 2.
TEST_F(ExitCodesTest, CapacityProjectsTheIndexOnTheModel) {
  const std::string cal = (dir / "cal.json").string();
  ASSERT_EQ(cpscale({"calibrate", "--from", CPSCALE_SOURCE_DIR "/test/fixtures/calibration/probes", "--out", cal,
                     "--no-validate"})
                .exitCode,
            0);
  const std::string node = CPSCALE_SOURCE_DIR "/scenarios/index/node.yaml";
  const fs::path out = dir / "projected";
  Outcome o = cpscale({"capacity", "--model", "--calibration", cal, "--dedicated-cores", "4", node, "--set",
                       "index-node:capacity.start=100", "--set", "index-node:capacity.max=200", "--quiet", "--out",
                       out.string()});
  EXPECT_EQ(o.exitCode, 0) << o.output;
  EXPECT_NE(o.output.find("# Capacity index (projected)"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("each kube-apiserver and each etcd on 4 cores of its own"), std::string::npos) << o.output;
  std::ifstream in(out / "capacity.json");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["projection"]["calibration"], cal);
  EXPECT_EQ(j["projection"]["coresPerMember"], 4.0);
  EXPECT_EQ(j["projection"]["generator"], "off-plane");
  ASSERT_EQ(j["searches"].size(), 1u);
  EXPECT_EQ(j["searches"][0]["held"], 200.0) << j["searches"][0].dump();
  EXPECT_TRUE(fs::exists(out / "index-node-classic" / "step-200" / "result.json"));

  o = cpscale({"capacity", node, "--dedicated-cores", "4", "--out", (dir / "x").string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("add --model"), std::string::npos) << o.output;
  o = cpscale({"capacity", "--model", "--calibration", cal, node, "--set", "index-nodes:capacity.max=1", "--out",
               (dir / "x").string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
  EXPECT_NE(o.output.find("names no scenario"), std::string::npos) << o.output;
  o = cpscale({"capacity", "--model", "--calibration", cal, node, "--kubeconfig", kubeconfig("https://127.0.0.1:1"),
               "--out", (dir / "x").string()});
  EXPECT_EQ(o.exitCode, 2) << o.output;
}

}  // namespace
}  // namespace cpscale::cli
