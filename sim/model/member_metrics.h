// What one modelled kube-apiserver replica and one etcd member count, and their
// Prometheus text exposition with the metric names and labels the real binaries use
// (see test/fixtures/metrics), so the scraper and every figure read them unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cpscale::model {

class ObjectStore;

// apiserver_request_total's labels but the code, as the request handler sets them.
struct RequestLabels {
  std::string component = "apiserver";  // "" for non-resource paths (/readyz, /metrics)
  bool dryRun = false;
  std::string group;
  std::string resource;
  std::string scope;        // "resource", "namespace", "cluster" ("" for non-resource)
  std::string subresource;  // "status"; the path for a non-resource request ("/readyz")
  std::string verb;         // GET, LIST, WATCH, POST, PUT, PATCH, DELETE, DELETECOLLECTION
  std::string version;
  // The labels in one string, the key of their series.
  std::string key() const;
};

// kube-apiserver's request latency buckets (apiserver_request_duration_seconds).
inline constexpr std::array<double, 23> kLatencyBuckets = {
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60};

class ApiserverMetrics {
 public:
  // One answered request standing for `weight` identical ones.
  void request(const std::string& labelsKey, int code, double seconds, double weight);
  // One request refused before it was served (the max-in-flight filter's 429): counted
  // in apiserver_request_total, not in the latency histogram (RecordDroppedRequest).
  void dropped(const std::string& labelsKey, int code, double weight);
  void watchEvents(std::string_view group, std::string_view version, std::string_view resource, double n);
  void inflight(bool mutating, double delta) { (mutating ? mutating_ : readOnly_) += delta; }

  struct Process {
    double heapBytes = 0;
    double rssBytes = 0;
    double cpuSeconds = 0;
    double startTime = 0;
  };
  // The exposition, with object counts from `store`.
  std::string exposition(const Process& p, const ObjectStore& store) const;
  double requests() const { return requests_; }

 private:
  struct Histogram {
    std::array<double, kLatencyBuckets.size() + 1> buckets{};  // not cumulative; last: above 60 s
    double sum = 0;
    double count = 0;
    std::map<int, double> codes;  // apiserver_request_total by code
  };
  std::map<std::string, Histogram> duration_;  // by labels
  std::map<std::string, double> watchEvents_;  // "group\x1fresource\x1fversion"
  double mutating_ = 0;
  double readOnly_ = 0;
  double requests_ = 0;
};

struct EtcdCounters {
  double proposals = 0;  // committed (= applied)
  double puts = 0;
  double writes = 0;  // what the db size grows with
};

struct EtcdExposition {
  double keys = 0;
  double dbBytes = 0;       // the file (etcd_mvcc_db_total_size_in_bytes)
  double dbInUseBytes = 0;  // what the live revisions take (..._in_use_in_bytes)
  double quotaBytes = 0;    // --quota-backend-bytes
  double cpuSeconds = 0;
  double startTime = 0;
  std::string serverId;  // hex
};

std::string etcdExposition(const EtcdCounters& c, const EtcdExposition& e);

// One of the controller-manager's workqueues: client-go's depth (keys waiting, and keys
// added again while a worker has them) and adds.
struct WorkqueueState {
  std::string name;
  double depth = 0;
  double adds = 0;
};
// The controller-manager's /metrics: its workqueues and its leadership (the model's one
// controller-manager always leads).
std::string controllerManagerExposition(const std::vector<WorkqueueState>& queues);

// A double as Prometheus text writes it: shortest round-trip form, "+Inf", "NaN".
std::string formatValue(double v);

}  // namespace cpscale::model
