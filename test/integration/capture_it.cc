// Capture and replay on the real plane: a mixed cluster (test/fixtures/capture/
// mixed.yaml: kubelets with pods and Events, agent-session churn, a platform at rest
// with watchers) runs; `cpscale capture` measures it from outside, read-only, over most
// of its steady window; the captured scenario replays on a fresh plane; and the two
// runs' results are compared with `cpscale compare` and figure by figure:
//  - what the capture read is exact: nodes, pods per node, Lease duration, the kinds at
//    rest and their counts, namespaces, watchers per kind;
//  - write QPS per resource and verb within 10 %, or within three standard deviations
//    of the counting noise where the writes come from too few random arrivals for 10 %
//    to mean anything (Events and pod replacements: ~100 in the window);
//  - objects per kind exact for every kind not churned;
//  - each kube-apiserver's heap within 20 %.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "sim/controlplane/pki.h"
#include "test/integration/plane_fixture.h"

namespace cpscale::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBinary = CPSCALE_BINARY;

json readJson(const fs::path& p) { return json::parse(controlplane::readFile(p)); }

// Steady-window figures by name, keyed by their labels.
std::map<std::string, double> steady(const json& result, const std::string& name) {
  std::map<std::string, double> out;
  for (const auto& f : result["figures"])
    if (f["name"] == name && f["window"] == "steady" && f["value"].is_number())
      out[f["labels"].dump()] = f["value"].get<double>();
  return out;
}

TEST(CaptureReplay, ACapturedClusterReplaysWithItsWritesObjectsAndHeap) {
  const fs::path dir = makeTempDir("capture");
  const fs::path original = dir / "original", replay = dir / "replay", captured = dir / "captured.yaml";
  const fs::path log = dir / "original.log";

  // The original runs in the background; its plane's kubeconfig is in its output.
  CommandResult originalRun;
  std::thread run([&] {
    originalRun = runCommand(kBinary + " run " CPSCALE_SOURCE_DIR "/test/fixtures/capture/mixed.yaml --out " +
                             original.string() + " --run-id itcapa > " + log.string() + " 2>&1");
  });
  bool steadyNow = false;
  for (int i = 0; i < 4800 && !steadyNow; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    steadyNow = fs::exists(log) && controlplane::readFile(log).find("[steady") != std::string::npos;
  }
  if (!steadyNow) {
    // The run ends on its own (its setup times out); the test fails with its log
    // rather than ending the process on a thread left running.
    run.join();
    FAIL() << "the original run never reached its steady window\n" << controlplane::tailFile(log, 30);
  }
  // 85 s of its 100 s window (the progress line says steady up to 10 s late).
  const CommandResult capture =
      runCommand(kBinary + " capture --kubeconfig " + (original / "plane/kubeconfig").string() +
                 " --window 85s --duration 100s -o " + captured.string());
  run.join();
  ASSERT_EQ(originalRun.exitCode, 0) << controlplane::tailFile(log, 40);
  ASSERT_EQ(capture.exitCode, 0) << capture.output;
  std::printf("%s\n", capture.output.c_str());

  // What the capture read exactly. The scenario and the comparison (a thousand lines)
  // are printed only with a failure they explain: CI shows a failed test's output cut
  // to its head and tail, where the failing check must be.
  const std::string text = controlplane::readFile(captured);
  std::string missing;
  for (const char* field :
       {"    count: 100\n", "    leaseDurationSeconds: 40\n", "    podsPerNode: 5\n", "    events: true\n",
        "    namespaces: 3\n", "    targets: [{crd: agentsessions.churn.cpscale.io, kind: AgentSession}]\n",
        "    crdKinds: 5\n", "    objectsPerKind: 100\n", "    watchers: {perKind: 1}\n", "    namespaces: 5\n",
        "    configMaps: 100\n", "    secrets: 100\n", "    serviceAccounts: 50\n", "    roles: 50\n",
        "    roleBindings: 50\n", "    clusterRoles: 20\n", "    clusterRoleBindings: 20\n"})
    if (text.find(field) == std::string::npos) missing += field;
  EXPECT_EQ(missing, "") << text;

  // The replay, on a fresh plane.
  const CommandResult replayRun =
      runCommand(kBinary + " run " + captured.string() + " --out " + replay.string() + " --run-id itcapb --quiet");
  ASSERT_EQ(replayRun.exitCode, 0) << replayRun.output;

  const CommandResult compare = runCommand(kBinary + " compare " + (original / "result.json").string() + " " +
                                           (replay / "result.json").string() + " --tolerance 0.1");
  EXPECT_TRUE(compare.exitCode == 0 || compare.exitCode == 1) << compare.output;

  const json a = readJson(original / "result.json"), b = readJson(replay / "result.json");
  ASSERT_EQ(a["status"], "completed");
  ASSERT_EQ(b["status"], "completed");
  const double seconds = a["measuredSeconds"].get<double>();

  // Writes per resource and verb.
  const auto qa = steady(a, "write_qps"), qb = steady(b, "write_qps");
  std::size_t compared = 0;
  std::printf("| resource, verb | original | replay | error | held to |\n|---|---:|---:|---:|---:|\n");
  for (const auto& [labels, va] : qa) {
    const json l = json::parse(labels);
    if (!l.contains("resource") || va < 0.5) continue;
    ASSERT_TRUE(qb.count(labels)) << labels;
    const double vb = qb.at(labels);
    const std::string resource = l["resource"];
    // Random arrivals behind these writes: one per session, per pod replacement, or
    // per four Events; the counting noise of the difference of two runs.
    const double perArrival = resource == "events" ? 4 : 1;
    const double arrivals = va * seconds / perArrival;
    const bool random = resource.rfind("agentsessions", 0) == 0 || resource == "events" || resource == "pods";
    const double tolerance = random ? std::max(0.10, 3 * std::sqrt(2 / arrivals)) : 0.10;
    const double error = std::abs(vb - va) / va;
    std::printf("| %s %s | %.2f/s | %.2f/s | %.1f %% | %.0f %% |\n", resource.c_str(), l.value("verb", "").c_str(), va,
                vb, 100 * error, 100 * tolerance);
    EXPECT_LE(error, tolerance) << labels << ": original " << va << "/s, replay " << vb << "/s";
    ++compared;
  }
  EXPECT_GE(compared, 9u);

  // Objects per kind: exact for the kinds nothing creates or deletes in the window;
  // for those that churn, within 5 % or three standard deviations of a live count's
  // noise (a population of n that turns over randomly varies by about sqrt(n)).
  std::set<std::string> churned;
  for (const auto& [labels, v] : qa) {
    const json l = json::parse(labels);
    if (v > 0 && (l.value("verb", "") == "POST" || l.value("verb", "") == "DELETE"))
      churned.insert(l.value("resource", ""));
  }
  const auto oa = steady(a, "apiserver_objects"), ob = steady(b, "apiserver_objects");
  std::size_t exact = 0;
  for (const auto& [labels, va] : oa) {
    const std::string resource = json::parse(labels).value("resource", "");
    if (va == 0) continue;
    ASSERT_TRUE(ob.count(labels)) << labels;
    if (churned.count(resource)) {
      EXPECT_LE(std::abs(ob.at(labels) - va) / va, std::max(0.05, 3 * std::sqrt(2 / va)))
          << labels << ": " << va << " and " << ob.at(labels);
      continue;
    }
    EXPECT_EQ(ob.at(labels), va) << labels;
    ++exact;
  }
  EXPECT_GE(exact, 20u);

  // Each apiserver's live heap: HeapInuse right after a forced GC (the local plane's
  // heap profile). The plain HeapInuse is the last scrape's point on the GC's sawtooth,
  // up to twice the live heap, and a CPU-starved apiserver (CI runs two integration
  // tests at once) collects at other points of it.
  const auto ha = steady(a, "apiserver_heap_inuse_after_gc_bytes"),
             hb = steady(b, "apiserver_heap_inuse_after_gc_bytes");
  ASSERT_FALSE(ha.empty());
  for (const auto& [labels, va] : ha) {
    ASSERT_TRUE(hb.count(labels)) << labels;
    std::printf("heap after GC %s: original %.0f MiB, replay %.0f MiB\n", labels.c_str(), va / 1048576,
                hb.at(labels) / 1048576);
    EXPECT_LE(std::abs(hb.at(labels) - va) / va, 0.20) << labels << ": original " << va << ", replay " << hb.at(labels);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cpscale::testing
