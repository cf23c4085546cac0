// The cost model's parameters, fitted from live probes on one machine by
// `cpscale calibrate` and read by `cpscale simulate`: what the model plane is run with.
// A calibration records where it was measured (machine, versions, profile), every
// parameter with its 95 % confidence interval and the fit's quality, and the model's
// measured error against live runs (validation), so a simulated figure can say how far
// it is to be trusted. Its file, the fits and the validation are sim/calibration's.
//
// Units: CPU in core-seconds, time in seconds, memory in bytes, rates per second.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace cpscale::model {

// 2: the placement the probes ran with, the LIST cost per object, the plane's own
// watchers per resource and the etcd quota's model (version 1 files are refused: they
// were measured with every member contending for the same cores).
// 3: a watch event's cost split into the watch cache's dispatch to each watcher it
// considers and the event sent, and the heap per open watch (version 2 files are refused:
// their cost per event sent holds the dispatch, which the model now charges apart).
inline constexpr int kCalibrationVersion = 3;

// One fitted parameter: its estimate and 95 % confidence interval (equal to the value
// when it was set, not fitted).
struct Param {
  double value = 0;
  double low = 0;
  double high = 0;
  static Param fixed(double v) { return {v, v, v}; }
};

// How well one regression explains its observations.
struct FitQuality {
  std::string name;  // "apiserver_cpu", "etcd_cpu", "heap", "generator_cpu", ...
  std::size_t observations = 0;
  std::size_t parameters = 0;
  double r2 = 0;           // coefficient of determination
  double residualStd = 0;  // in the fitted quantity's unit
};

// What the control plane writes by itself with no load: leader-election and identity
// leases, endpoint reconciling, ... (per second, for the whole plane).
struct BackgroundRate {
  std::string resource;  // as apiserver_request_total labels it: "leases", "endpointslices"
  std::string group;     // "" for core, e.g. "coordination.k8s.io"
  std::string verb;      // "PUT", "PATCH", "POST", "GET", ...
  double perSecond = 0;
};

// Measured disagreement between the model and the live plane on this machine, one
// entry per compared figure: relative error |model - live| / live.
struct ValidationEntry {
  std::string figure;  // "write_qps{resource=leases}", "lease_write_share", ...
  double live = 0;
  double model = 0;
  double relativeError = 0;
  double tolerance = 0;  // what the validation test allows
};

// One set of CPUs the probes' processes were pinned to, and the roles that shared it
// ("kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "generator").
// The model queues the work of every role in a set at one pool of `cores`.
struct CpuSet {
  std::string cpus;  // as `taskset -c` lists them: "1", "0", "2-3"
  double cores = 1;
  std::vector<std::string> roles;
  bool operator==(const CpuSet&) const = default;
};

struct Calibration {
  int version = kCalibrationVersion;
  // Where and when it was measured.
  std::string measuredAt;  // RFC 3339
  std::string host;
  int cpus = 0;
  std::string cpuModel;
  std::string kubernetesVersion;
  std::string etcdVersion;
  std::string profile;           // the profile the probes ran on
  std::filesystem::path source;  // the file it was read from (not written)

  // The host the plane ran on. shared: kube-apiserver, etcd and the load generator
  // competed for the same `hostCores` (the local plane); the model then queues all of
  // their work at one pool. Otherwise each apiserver replica has `apiserverCores` and
  // each etcd `etcdCores` of its own and the generator is not modelled.
  double hostCores = 2;
  bool sharedHost = true;
  double apiserverCores = 2;
  double etcdCores = 1;
  // Where the probes ran when they were pinned (cpscale calibrate --pin): each set of
  // CPUs with the roles that shared it. Set, it is the host the model queues at (and
  // sharedHost is false); empty, sharedHost and the cores above say.
  std::vector<CpuSet> placement;

  // CPU per request served by a kube-apiserver replica, by class (core-seconds).
  Param apiserverIdleCores;       // with no load (per replica)
  Param apiserverCpuLeaseWrite;   // PUT/PATCH leases
  Param apiserverCpuWrite;        // other POST/PUT/PATCH/DELETE of a built-in resource
  Param apiserverCpuCustomWrite;  // POST/PUT/PATCH/DELETE of a custom resource
  Param apiserverCpuEventWrite;   // POST/PATCH of an Event (no watch cache, no watchers)
  Param apiserverCpuRead;         // GET/LIST
  // A change reaching watchers, as kube-apiserver's watch cache (the cacher) serves it:
  // the object is encoded once per change whoever watches (CachingObject), which is in
  // the write's cost above since every resource with a watch cache has the plane's own
  // informers; then each watcher the change is dispatched to costs
  // apiserverCpuWatchDispatch (its goroutine woken, the event filtered against its
  // selector), whether or not it selects the object, and each event sent costs
  // apiserverCpuWatchEvent (framed and written to its stream). A trigger index keeps the
  // change from the watchers it cannot concern: pods by spec.nodeName, nodes by
  // metadata.name (upstream's TriggerFunc), for watchers whose field selector pins that
  // field; such a watcher is dispatched only its own objects' changes.
  Param apiserverCpuWatchDispatch;  // per change per watcher it is dispatched to
  Param apiserverCpuWatchEvent;     // per watch event sent to one watcher
  Param apiserverCpuListObject;     // per object a LIST returns (encoding it; the LIST's own cost is a read)
  // etcd: CPU per committed proposal, and its idle CPU.
  Param etcdIdleCores;
  Param etcdCpuPerProposal;
  // The load generator's CPU per request (only on a shared host).
  Param generatorCpuPerRequest;

  // Latency of an unloaded request, by class (seconds): handler, admission, etcd
  // round trip and fsync included, no queueing.
  Param latencyRead;
  Param latencyWrite;

  // kube-apiserver heap (go_memstats_heap_inuse_bytes), per replica:
  //   heapBase + sum over objects of (heapPerObject + heapPerObjectByte * json bytes)
  // with a measured per-resource override where the probes had one, plus the watch
  // cache (below).
  Param heapBaseBytes;
  Param heapPerObject;
  Param heapPerObjectByte;
  std::map<std::string, double> heapBytesPerObjectByResource;  // "leases", "nodes", "<plural>.<group>"
  // The watch cache's ring of a custom resource: each event it holds costs
  // heapPerCustomResourceEvent beyond its object (an event that is not an object's
  // current version also costs that version by the rules above), and each custom
  // resource served costs heapPerCustomResource (its CRD's handlers, schema and
  // caches). Built-in resources' rings are in their per-object figures (the node's
  // with its Lease was measured with the Leases' ring as it fills).
  Param heapPerCustomResourceEvent;
  Param heapPerCustomResource;
  // Each open watch (its cacheWatcher, its buffered channel of events, its stream's
  // buffers), as the heap grew with the watches a probe opened.
  Param heapPerWatch;
  // RSS over heap (process_resident_memory_bytes / heap inuse).
  double rssOverHeap = 1.6;

  // etcd: db size growth per write (bytes), its size with no data, and fsync latency.
  Param etcdDbBaseBytes;
  Param etcdDbBytesPerWrite;
  Param etcdFsyncSeconds;

  // The plane's own watchers, per resource ("leases", "nodes", "<plural>.<group>"): the
  // controller-manager's and scheduler's informers and the apiserver's own, as
  // apiserver_longrunning_requests{verb="WATCH"} counted them on the idle plane. Every
  // change of the resource is sent to each (fan-out CPU, apiserver_watch_events_total).
  std::map<std::string, double> planeWatchers;
  // The watchers the plane opens on each custom resource once its CRD is served: the
  // controller-manager's garbage collector and quota monitor share one metadata
  // informer per resource.
  double planeWatchersPerCustomResource = 1;

  std::vector<BackgroundRate> background;
  std::vector<FitQuality> fits;
  std::vector<ValidationEntry> validation;
  // What was set rather than fitted, or fitted with a caveat, and why (optional in the
  // file): a calibration says where its numbers did not come from a fit.
  std::vector<std::string> notes;
};

}  // namespace cpscale::model
