// The state-bound population: what a platform cluster with many operators holds at
// rest. K CRD kinds (one API group per operator), M objects of each, RBAC objects,
// ServiceAccounts, ConfigMaps and Secrets, created at a bounded rate and then mostly
// idle, with an optional low background update rate. Optional watchers emulate the
// operators' informers: W per kind, each a paginated LIST then a WATCH with bookmarks,
// re-watching from the last resourceVersion when the server ends the stream and
// relisting on 410 Gone; optionally sharded with KEP-5866's shardSelector.
//
// Creation order: ConfigMaps, Secrets, ServiceAccounts, Roles, RoleBindings,
// ClusterRoles, ClusterRoleBindings, then each CRD kind. With rampPerKind (the
// default) each kind is created completely before the next, and its creation is
// marked as the phase "ramp/<name>/<group>/<resource>" ("ramp/<name>/configmaps" for
// the core group; metrics::kindRampFromPhase reads it) from its first create to the
// answer of its last, so heap growth can be fitted per kind. rampPerKind: false
// interleaves the kinds in proportion instead (the population grows as a mix). Either
// way "ramp/<name>" spans the whole population's creation. An instance reports its
// setup done once every create it owns was answered (success or failure) and every
// watcher holds its first full LIST; its summary says whether the population is
// complete (`complete`: created == objects).
//
// Scenario entry:
//   - kind: dormant
//     name: platform              # default "dormant"
//     crdKinds: 20                # groups op<k>.dormant.cpscale.io, kind Widget
//     objectsPerKind: 50
//     objectBytes: {lognormal: {median: 2048, sigma: 0.8}, max: 65536}
//     namespaces: 10              # cpscale-<run>-<name>-<k>
//     roles: 0                    # per kind of object, population-wide counts
//     roleBindings: 0
//     clusterRoles: 0
//     clusterRoleBindings: 0
//     serviceAccounts: 0
//     configMaps: 0
//     secrets: 0
//     createQps: 50               # client-side token bucket for creations
//     createBurst: 50
//     rampPerKind: true           # kinds one after the other, each its own ramp phase
//     updatesPerSecond: 0         # background PATCHes once created (Poisson)
//     watchers:
//       perKind: 0                # informer-like clients per CRD kind
//       shards: 0                 # 0: unsharded; N: watcher w takes hash range w mod N
//       timeout: 5m               # watch timeoutSeconds, drawn from [t, 2t) as reflectors do
//       pageSize: 500
//       relistEvery: 0s           # > 0: each watcher lists everything again this often (as
//                                 # a restarted operator's informer does), phases spread
//       labelSelector: ""         # the watchers' label selector; one that selects nothing
//                                 # makes watchers the apiserver considers for every change
//                                 # and sends none (the calibration's dispatch probe)
//     crdTemplate: dormant-crd.yaml
//
// Growing in place, growth("objectsPerKind", from, to) with objectsPerKind <= from < to:
// objects [from, to) of every CRD kind, named and namespaced as a population of `to`
// would have them (widget-<j> in namespace j mod namespaces), created at createQps as
// the base's were. Nothing else grows: no CRDs (prepare() meets the base's namespaces
// and CRDs, which is fine), no built-in objects (their counts are not per kind), no
// watchers, and no background updates (updatesPerSecond is population-wide and stays
// with the base, which touches its own objects). Its setup is creating the added
// objects; its phases are "grow/<name>/<to>" and, per kind with rampPerKind,
// "grow/<name>/<to>/<group>/<resource>", never "ramp/...": bytes_per_object fits the
// heap only over a population's first creation.
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

struct DormantParams {
  std::string name = "dormant";
  std::int64_t crdKinds = 20;
  std::int64_t objectsPerKind = 50;
  Distribution objectBytes = Distribution::lognormal(2048, 0.8).capAt(65536);
  std::int64_t namespaces = 10;
  std::int64_t roles = 0, roleBindings = 0, clusterRoles = 0, clusterRoleBindings = 0, serviceAccounts = 0,
               configMaps = 0, secrets = 0;
  RateLimit create{50, 50};
  bool rampPerKind = true;
  double updatesPerSecond = 0;
  struct Watchers {
    std::int64_t perKind = 0;
    std::int64_t shards = 0;
    engine::Duration timeout = std::chrono::minutes(5);
    std::int64_t pageSize = 500;
    engine::Duration relistEvery{0};
    std::string labelSelector;  // empty: every object
  } watchers;
  std::optional<ObjectTemplate> crdTemplate;
  // Not scenario fields: a growth creates only the CRD kinds' objects
  // [firstObject, objectsPerKind), and marks "grow/..." phases instead of "ramp/...".
  std::int64_t firstObject = 0;
  bool growth = false;

  static DormantParams read(const YamlField& entry);
  std::int64_t totalObjects() const;
};

// The phase marking the creation of one kind (see the top of this header).
std::string kindRampPhaseName(const std::string& workload, const kube::GroupVersionResource& kind);

// KEP-5866's selector for shard `shard` of `shards` equal ranges of the 64-bit
// FNV-1a hash of metadata.uid: "shardRange(object.metadata.uid, 0x.., 0x..)". The
// last range ends at 0xffffffffffffffff.
std::string shardSelector(std::int64_t shard, std::int64_t shards);

class DormantWorkload final : public Workload {
 public:
  explicit DormantWorkload(DormantParams params);
  std::string kind() const override { return "dormant"; }
  std::string name() const override { return params_.name; }
  void prepare(kube::ApiClient& api, engine::Clock& clock, const std::string& runId) override;
  std::unique_ptr<WorkloadInstance> start(WorkloadContext& ctx) override;
  std::vector<kube::GroupVersionResource> resources() const override;
  // "objectsPerKind": objects [from, to) of every kind, see the top of this header.
  std::unique_ptr<Workload> growth(const std::string& field, double from, double to) const override;
  std::vector<std::string> growableFields() const override { return {"objectsPerKind"}; }
  // Once created, a dormant population only sends what its updates and relists ask.
  bool loadsSteadyWindow() const override {
    return params_.updatesPerSecond > 0 ||
           (params_.watchers.perKind > 0 && params_.watchers.relistEvery > engine::Duration::zero());
  }
  std::string whyNotMeasured(const std::string& figure) const override;
  const DormantParams& params() const { return params_; }

  static kube::GroupVersionResource crdResource(std::int64_t k);
  static std::string namespaceName(const std::string& runId, const std::string& workload, std::int64_t k);

 private:
  DormantParams params_;
};

}  // namespace cpscale::workloads
