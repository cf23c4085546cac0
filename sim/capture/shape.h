// What `cpscale capture` measures of a cluster along the three axes, from what it read
// with GETs alone: two /metrics scrapes a window apart and a few metadata lists. A
// pure function of that reading, so a capture is tested on stored bodies.
//
// Every number keeps where it came from (`source`), which the written scenario prints
// beside the field it sets.
#pragma once

#include <compare>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cpscale::capture {

// A resource as the apiserver's metrics name it: group "" is the core group.
struct ResourceKey {
  std::string group;
  std::string resource;
  auto operator<=>(const ResourceKey&) const = default;
  // "configmaps", "widgets.op0.dormant.cpscale.io"
  std::string describe() const;
};

// What capture read from the cluster, every part the body of a GET.
struct Reading {
  std::string server;         // for the record (no credentials)
  std::string version;        // /version's gitVersion
  std::string capturedAt;     // RFC 3339, when the second scrape was answered
  double windowSeconds = 0;   // between the two scrapes
  std::string metricsBefore;  // /metrics at the window's start
  std::string metricsAfter;   // and at its end
  nlohmann::json nodes;       // GET /api/v1/nodes (metadata is enough)
  nlohmann::json nodeLeases;  // GET /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases
  nlohmann::json namespaces;  // GET /api/v1/namespaces
  nlohmann::json crds;        // GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions
  // The built-in kinds a dormant population holds, by resource ("configmaps", "roles",
  // ...): their metadata lists, to tell the cluster's own objects from the plane's.
  std::map<std::string, nlohmann::json> builtinLists;
  // Custom resources written in the window: their metadata lists (the namespaces they
  // live in).
  std::map<ResourceKey, nlohmann::json> customLists;
};

// The resources whose objects a dormant population can hold, with the metric's group.
const std::vector<ResourceKey>& dormantBuiltins();
// Write verbs as apiserver_request_total names them.
bool isWriteVerb(const std::string& verb);

// `v` to `precision` significant digits ("%g"), as the scenario's comments give numbers.
std::string significant(double v, int precision = 3);

// A number and where it came from.
struct Measured {
  double value = 0;
  std::string source;
};

struct WriteRate {
  ResourceKey key;
  std::string subresource;
  std::string verb;
  double perSecond = 0;
};

// The node axis: the kubelets' part of the writes.
struct NodeShape {
  Measured nodes;
  std::optional<Measured> leaseDurationSeconds;  // the most common among node Leases
  Measured leaseWrites;                          // PUT leases/s, every holder
  Measured statusPatches;                        // PATCH nodes/status per second
  Measured pods;                                 // objects
  Measured podStatusPatches;                     // PATCH pods/status per second
  Measured podCreates;                           // POST pods per second
  Measured podDeletes;                           // DELETE pods per second
  Measured eventCreates;                         // POST events per second
};

// A custom resource created in the window: the mutation axis, one churn actor each.
struct ChurnedKind {
  ResourceKey key;
  std::string kind;                        // from its CRD
  nlohmann::json crd;                      // the CRD as captured (its schema is what a replay installs)
  Measured creates;                        // POST/s
  Measured deletes;                        // DELETE/s
  Measured specPatches;                    // PATCH/PUT/APPLY of the object itself per second
  Measured statusPatches;                  // PATCH/PUT/APPLY of /status per second
  Measured liveObjects;                    // mean of the two scrapes' object counts
  std::optional<Measured> bytesPerObject;  // stored size estimate / objects
  Measured namespaces;                     // distinct namespaces of its objects
};

// A kind at rest: the state axis.
struct DormantKind {
  ResourceKey key;
  bool custom = false;
  Measured objects;  // the cluster's own (the plane's bootstrap objects left out)
  std::optional<Measured> bytesPerObject;
  Measured watches;  // WATCH requests open on it (mean of the two scrapes)
  Measured patches;  // writes to objects at rest per second
};

struct ClusterShape {
  std::string server;
  std::string version;
  std::string capturedAt;
  double windowSeconds = 0;
  NodeShape nodes;
  std::vector<ChurnedKind> churned;
  std::vector<DormantKind> dormant;
  Measured userNamespaces;        // namespaces other than the plane's own
  std::vector<WriteRate> writes;  // every write rate of the window, for the record
  // What the scenario cannot reproduce, said in the scenario and by the command.
  std::vector<std::string> notReproduced;
};

// ConfigError naming the part (e.g. "/metrics at the window's end: line 12: ...") when
// a body does not parse; a cluster that serves no apiserver_request_total is
// UnavailableError: nothing can be said about its writes.
ClusterShape measureShape(const Reading& reading);

// The watches the control plane itself keeps on every custom resource (the garbage
// collector's metadata informer), measured on the pinned plane: a replay's plane opens
// them again, so a captured population's watchers are the ones above this.
inline constexpr double kPlaneWatchesPerCustomResource = 1;

}  // namespace cpscale::capture
