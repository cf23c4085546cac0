// A captured cluster's shape written as a scenario cpscale runs: kubelets for its
// nodes, a churn actor per custom resource it creates, a dormant population for what
// it holds at rest. Each field carries a comment saying where its number came from.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "sim/capture/shape.h"

namespace cpscale::capture {

struct WriteOptions {
  std::string name = "captured";  // the scenario's name
  // Multiplies nodes, rates and object counts; namespaces, kinds and watchers per kind
  // stay as captured (more of the same operators, not more operators).
  double scale = 1;
  std::string duration = "5m";  // the replay's steady window
  std::string crdDir;           // see writeScenario
};

// The churn lifecycle's parameters that make one actor write what a churned custom
// resource's counters showed: per session one POST and one DELETE, 2 spec PATCHes per
// suspension, a status PATCH on entering each running spell and then one every
// statusInterval; the live population (Little's law: arrivals x lifetime) sets the
// dwell times.
struct ChurnFit {
  double sessionsPerMinute = 0;
  double suspendProbability = 0;
  int maxSuspends = 0;
  double dwellSeconds = 0;           // mean, running and suspended alike
  double statusIntervalSeconds = 0;  // 0: on transitions only
};
ChurnFit fitChurn(const ChurnedKind& c);

// The CRD a replay installs for a churned kind, from the captured one, as a churn
// workload's crdTemplate (JSON, which YAML reads; placeholders group, plural,
// singular, kind): the storage version's schema served as v1, namespaced, with a
// status subresource, and made to take a session as the churn actor writes it (its
// spec and status keep unknown fields, its required lists and CEL rules at the root,
// spec and status are dropped, spec.agent/suspend/payload and status.phase/step/
// lastUpdate typed as the actor writes them). Unset, with `why`, when it cannot be
// (no CRD captured, or a cluster-scoped one: sessions are namespaced); the replay then
// installs cpscale's own session CRD under the kind's name.
std::optional<nlohmann::json> replayCrdTemplate(const ChurnedKind& c, std::string& why);

// The scenario's YAML text. With `crdDir` ("prod.crds"), each churned kind whose CRD can
// be replayed names `crdDir/<plural>.<group>.json` as its crdTemplate: the caller
// writes replayCrdTemplate() there, beside the scenario.
std::string writeScenario(const ClusterShape& shape, const WriteOptions& options);

// Bytes a stored object carries besides its payload (metadata, labels, managed fields,
// and a session's spec and status), as the pinned apiserver estimates the objects a
// replay writes: a captured object's stored size less this is the payload a replay
// gives it. Measured on the local plane: an agent session stores 3,020 bytes for a
// 2,048-byte payload; a dormant widget 3,690 for a mean payload of 2,820.
inline constexpr double kChurnOverheadBytes = 970;
inline constexpr double kDormantOverheadBytes = 870;

}  // namespace cpscale::capture
