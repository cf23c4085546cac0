// `cpscale job` against the real apiserver: its manifests pass server-side validation
// (dry run) and create nothing, bad input is refused before anything is sent, and
// applied for real, the Job controller gives each pod its index as cpscale expects.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "sim/controlplane/pki.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string cpscale(const std::string& args) { return std::string(CPSCALE_BINARY) + " " + args; }
std::string kubectl(const std::string& args) {
  return "kubectl --kubeconfig " + PlaneEnvironment::instance().kubeconfig().string() + " " + args;
}
const std::string kSmoke = std::string(CPSCALE_SOURCE_DIR) + "/scenarios/smoke.yaml";

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(JobTest, TheServerAcceptsEveryObjectOnADryRunAndNothingIsCreated) {
  const std::string target = " --kubeconfig " + PlaneEnvironment::instance().kubeconfig().string();
  auto r =
      runCommand(cpscale("job " + kSmoke + " --shards 3 --run-id itjob --set duration=30s --apply --dry-run" + target));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(count(r.output, "valid (server dry run, not created)"), 5u) << r.output;
  for (const char* o :
       {"job -n default cpscale-itjob", "configmap -n default cpscale-itjob-scenario",
        "serviceaccount -n default cpscale-itjob", "clusterrole cpscale-itjob", "clusterrolebinding cpscale-itjob"}) {
    auto get = runCommand(kubectl(std::string("get ") + o));
    EXPECT_NE(get.exitCode, 0) << o << " exists: " << get.output;
    EXPECT_NE(get.output.find("NotFound"), std::string::npos) << get.output;
  }

  // The printed manifests, as kubectl would send them, pass the server's validation too.
  auto printed = runCommand(cpscale("job " + kSmoke + " --shards 3 --run-id itjob") + " 2>/dev/null | " +
                            kubectl("apply --dry-run=server -f -"));
  EXPECT_EQ(printed.exitCode, 0) << printed.output;
  EXPECT_EQ(count(printed.output, "(server dry run)"), 5u) << printed.output;

  // What the server refuses is reported per object (exit 3): a namespace that does not exist.
  auto refused =
      runCommand(cpscale("job " + kSmoke + " --shards 3 --run-id itjob --namespace absent --apply --dry-run" + target));
  EXPECT_EQ(refused.exitCode, 3) << refused.output;
  EXPECT_NE(refused.output.find("job absent/cpscale-itjob refused: HTTP 404"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("clusterrole cpscale-itjob valid"), std::string::npos) << refused.output;

  // Bad input is exit 2 before anything is sent or printed.
  auto broken = runCommand(cpscale("job " + kSmoke + " --shards 0 --apply --dry-run" + target));
  EXPECT_EQ(broken.exitCode, 2) << broken.output;
  EXPECT_NE(broken.output.find("field '--shards'"), std::string::npos) << broken.output;
  EXPECT_EQ(broken.output.find("valid"), std::string::npos) << broken.output;
}

// Created for real: the Job controller starts one pod per index and gives each
// container JOB_COMPLETION_INDEX itself (from the pod's completion-index label), which
// the kubelet expands in `--shard $(JOB_COMPLETION_INDEX)/3`. No node runs them here.
TEST(JobTest, AppliedTheJobControllerGivesEachPodItsIndex) {
  const std::string target = " --kubeconfig " + PlaneEnvironment::instance().kubeconfig().string();
  auto r = runCommand(cpscale("job " + kSmoke + " --shards 3 --run-id itjobreal --apply" + target));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(count(r.output, " created\n"), 5u) << r.output;
  EXPECT_NE(r.output.find("cpscale collect --run-id itjobreal --shards 3"), std::string::npos) << r.output;

  json pods;
  for (int i = 0; i < 60; ++i) {
    auto get = runCommand(kubectl("get pods -n default -l cpscale.io/job=itjobreal -o json"));
    pods = json::parse(get.output, nullptr, false);
    if (pods.is_object() && pods["items"].size() == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(pods.is_object());
  ASSERT_EQ(pods["items"].size(), 3u) << pods.dump().substr(0, 2000);
  std::set<std::string> indexes;
  for (const auto& pod : pods["items"]) {
    const std::string index = pod["metadata"]["labels"].value("batch.kubernetes.io/job-completion-index", "");
    indexes.insert(index);
    const json& c = pod["spec"]["containers"][0];
    json injected;
    for (const auto& e : c["env"])
      if (e["name"] == "JOB_COMPLETION_INDEX") injected = e;
    EXPECT_EQ(injected["valueFrom"]["fieldRef"]["fieldPath"],
              "metadata.labels['batch.kubernetes.io/job-completion-index']")
        << c["env"].dump();
    EXPECT_NE(std::find(c["args"].begin(), c["args"].end(), "$(JOB_COMPLETION_INDEX)/3"), c["args"].end());
    EXPECT_EQ(pod["spec"]["securityContext"]["runAsNonRoot"], true);
  }
  EXPECT_EQ(indexes, (std::set<std::string>{"0", "1", "2"}));

  auto removed = runCommand(kubectl("delete job,configmap,serviceaccount -n default -l cpscale.io/job=itjobreal") +
                            " && " + kubectl("delete clusterrole,clusterrolebinding -l cpscale.io/job=itjobreal"));
  EXPECT_EQ(removed.exitCode, 0) << removed.output;
}

// The role is enough, on the real apiserver's RBAC: two shards of the smoke scenario
// (every workload kind, Roles included) run as the Job's ServiceAccount would in its
// pods (--in-cluster with a token of that account), set up, load, scrape, clean up and
// publish; collect merges them; nothing is left.
TEST(JobTest, ShardsRunningAsTheJobsServiceAccountHaveWhatTheyNeed) {
  const auto& env = PlaneEnvironment::instance();
  const std::string target = " --kubeconfig " + env.kubeconfig().string();
  auto r = runCommand(cpscale("job " + kSmoke + " --shards 2 --run-id itjobsa --apply" + target));
  ASSERT_EQ(r.exitCode, 0) << r.output;
  // Its pods could never run here; the shards below are them.
  ASSERT_EQ(runCommand(kubectl("delete job -n default cpscale-itjobsa")).exitCode, 0);

  const fs::path dir = makeTempDir("job-sa");
  auto token = runCommand(kubectl("create token -n default cpscale-itjobsa --duration 1h") + " 2>/dev/null");
  ASSERT_EQ(token.exitCode, 0) << token.output;
  const kube::RestConfig admin = env.restConfig();
  std::ofstream(dir / "token") << token.output;
  std::ofstream(dir / "ca.crt") << admin.caPem;
  std::ofstream(dir / "namespace") << "default";
  const std::string port = admin.server.substr(admin.server.rfind(':') + 1);
  const std::string pod = "env KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=" + port +
                          " CPSCALE_SERVICE_ACCOUNT_DIR=" + dir.string() + " ";
  std::string shards;
  for (int i = 0; i < 2; ++i)
    shards += pod +
              cpscale("run " + kSmoke + " --in-cluster --yes --shard " + std::to_string(i) +
                      "/2 --run-id itjobsa --publish-result --quiet --set duration=10s --out " +
                      (dir / std::to_string(i)).string()) +
              " > " + (dir / ("shard-" + std::to_string(i) + ".log")).string() + " 2>&1 & p" + std::to_string(i) +
              "=$!; ";
  auto run = runCommand("bash -c '" + shards + "wait $p0; e0=$?; wait $p1; echo \"exit $e0 $?\"'");
  const std::string logs = controlplane::readFile(dir / "shard-0.log") + controlplane::readFile(dir / "shard-1.log");
  EXPECT_NE(run.output.find("exit 0 0"), std::string::npos) << run.output << logs;
  EXPECT_EQ(logs.find("forbidden"), std::string::npos) << logs;
  for (int i = 0; i < 2; ++i) {
    const json result = json::parse(controlplane::readFile(dir / std::to_string(i) / "result.json"));
    EXPECT_EQ(result["status"], "completed") << result["statusDetail"];
    EXPECT_EQ(result["target"]["context"], "in-cluster");
    // A refused request does not fail a run (a workload counts it): none was refused.
    for (const auto& f : result["figures"])
      if (f["name"] == "client_requests" && f["labels"].value("outcome", "") == "4xx")
        ADD_FAILURE() << "shard " << i << ": " << f.dump();
    for (const auto& w : result["workloads"]) {
      for (const auto& [key, value] : w["summary"].items()) {
        if (key.ends_with("Failures")) {
          EXPECT_EQ(value, 0) << "shard " << i << " " << w["name"] << " " << key;
        }
      }
      if (w["name"] == "cleanup" && i == 0) {
        EXPECT_EQ(w["summary"]["complete"], true) << w.dump();
      }
    }
  }

  auto collect =
      runCommand(cpscale("collect --run-id itjobsa --shards 2 --timeout 1m --out " + (dir / "c").string() + target));
  EXPECT_EQ(collect.exitCode, 0) << collect.output;
  EXPECT_TRUE(fs::exists(dir / "c" / "merged" / "result.json"));
  auto left =
      runCommand(kubectl("get nodes,leases,configmaps,roles,namespaces,customresourcedefinitions -A -o name "
                         "-l cpscale.io/run=itjobsa"));
  EXPECT_EQ(left.output, "");
  EXPECT_EQ(runCommand(kubectl("get configmaps -A -o name -l cpscale.io/result-of=itjobsa")).output, "");
  EXPECT_EQ(runCommand(kubectl("delete configmap,serviceaccount -n default -l cpscale.io/job=itjobsa") + " && " +
                       kubectl("delete clusterrole,clusterrolebinding -l cpscale.io/job=itjobsa"))
                .exitCode,
            0);
}

}  // namespace
}  // namespace cpscale::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new cpscale::testing::PlaneEnvironment());
  return RUN_ALL_TESTS();
}
