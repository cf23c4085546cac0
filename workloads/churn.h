// The mutation-bound population: short-lived agent sessions, one object each, going
// through a lifecycle where every transition is a real write:
//   create (POST) -> running (PATCH status) -> [suspended (PATCH) -> resumed (PATCH)
//   -> running ...] -> deleted (DELETE)
// with Poisson arrivals, a dwell-time distribution per state and status updates while
// running. Sessions are custom resources of CRDs the workload installs (a cpscale.io
// subgroup, status subresource), optionally mixed with ConfigMaps or Events, so the
// storage seam can be compared for built-in against custom resources.
//
// Scenario entry:
//   - kind: churn
//     name: sessions              # namespaces cpscale-<run>-sessions-<k>; default "churn"
//     sessionsPerMinute: 600      # Poisson arrival rate, > 0
//     maxSessions: 0              # stop starting sessions after this many (0: no cap)
//     namespaces: 4
//     createQps: 50               # client-side token bucket for creations
//     createBurst: 50
//     objectBytes: 2048           # payload size: a number or a distribution
//     statusInterval: 10s         # status updates while running ("0s": transitions only)
//     suspendProbability: 0.5     # after a running spell: suspend, else finish
//     maxSuspends: 3
//     dwell:                      # time in each state: "30s" = exponential with that
//       running: 30s              # mean, or {exponential|lognormal|uniform, max}
//       suspended: 60s
//     targets:                    # what sessions are; default one AgentSession CRD
//       - crd: agentsessions.churn.cpscale.io
//         kind: AgentSession      # default: the plural, singular, capitalised
//         weight: 3
//       - builtin: configmaps     # or events
//         weight: 1
//     crdTemplate: session-crd.yaml
//
// Growing in place, growth("sessionsPerMinute", from, to): a churn workload arriving
// at to - from on top of the base, so the two arrive at `to` together. Its sessions
// are named <name>-<worker>-<id> as the base's, with ids from k x 2^40 for the k-th
// growth of the entry, so names never collide; they go to the base's namespaces and
// targets (prepare() installs nothing new: existing namespaces and CRDs are fine) and
// queue behind the same per-worker creation bucket (createQps/createBurst) as the
// base's, as one client's sessions would. Nothing to set up: its setup is done at
// start. Null with maxSessions, a cap on the population's total that a running base
// cannot share.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workloads/params.h"
#include "workloads/templates.h"
#include "workloads/workload.h"

namespace cpscale::workloads {

// The creation buckets a churn workload and its growths share, one per engine worker
// (defined in the .cc).
struct ChurnBuckets;

struct ChurnTarget {
  enum class Type { kCrd, kConfigMap, kEvent };
  Type type = Type::kCrd;
  kube::GroupVersionResource gvr;
  std::string kind;      // "AgentSession", "ConfigMap", "Event"
  std::string singular;  // CRDs only
  double weight = 1;
  std::string apiVersion() const { return gvr.group.empty() ? gvr.version : gvr.group + "/" + gvr.version; }
};

// A custom resource name given as "plural.group": the group must be a subgroup of
// cpscale.io (the only groups a run installs CRDs in); throws ConfigError otherwise.
ChurnTarget parseCrdTarget(const YamlField& field, const std::optional<YamlField>& kind);

struct ChurnParams {
  std::string name = "churn";
  double sessionsPerMinute = 0;
  std::int64_t maxSessions = 0;
  std::int64_t namespaces = 1;
  RateLimit create{50, 50};
  Distribution objectBytes = Distribution::fixed(1024);
  engine::Duration statusInterval = std::chrono::seconds(10);
  double suspendProbability = 0.5;
  std::int64_t maxSuspends = 3;
  Distribution running = Distribution::exponential(30e9);
  Distribution suspended = Distribution::exponential(60e9);
  std::vector<ChurnTarget> targets;
  std::optional<ObjectTemplate> crdTemplate;
  // Not a scenario field: the first session id (a growth's start past the base's).
  std::uint64_t firstSessionId = 0;

  static ChurnParams read(const YamlField& entry);
};

class ChurnWorkload final : public Workload {
 public:
  explicit ChurnWorkload(ChurnParams params);
  std::string kind() const override { return "churn"; }
  std::string name() const override { return params_.name; }
  void prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) override;
  std::unique_ptr<WorkloadInstance> start(WorkloadContext& ctx) override;
  std::vector<kube::GroupVersionResource> resources() const override;
  // "sessionsPerMinute": sessions arriving at to - from, see the top of this header.
  std::unique_ptr<Workload> growth(const std::string& field, double from, double to) const override;
  // None with maxSessions: a running base cannot share its cap on the total.
  std::vector<std::string> growableFields() const override {
    return params_.maxSessions > 0 ? std::vector<std::string>{} : std::vector<std::string>{"sessionsPerMinute"};
  }
  bool loadsSteadyWindow() const override { return params_.sessionsPerMinute > 0; }
  std::string whyNotMeasured(const std::string& figure) const override { return notOwnFigure(kind(), figure); }
  const ChurnParams& params() const { return params_; }
  // The filled CRD for a target (labels are added at install).
  nlohmann::json crdFor(const ChurnTarget& t) const;

  static std::string namespaceName(const std::string& runId, const std::string& workload, std::int64_t k);

 private:
  ChurnParams params_;
  // Shared with the entry's growths: creation buckets and how many growths there were.
  std::shared_ptr<ChurnBuckets> buckets_;
};

}  // namespace cpscale::workloads
