#include "sim/model/member_metrics.h"

#include <charconv>
#include <cmath>
#include <vector>

#include "sim/model/object_store.h"

namespace cpscale::model {

namespace {

constexpr char kSep = '\x1f';

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == kSep) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

void escapeTo(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += help;
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// name{k="v",...} value
void sample(std::string& out, std::string_view name,
            std::initializer_list<std::pair<std::string_view, std::string_view>> labels, double value) {
  out += name;
  if (labels.size() > 0) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!first) out += ',';
      first = false;
      out += k;
      out += "=\"";
      escapeTo(out, v);
      out += '"';
    }
    out += '}';
  }
  out += ' ';
  out += formatValue(value);
  out += '\n';
}

// The request labels of a series key, as label pairs in the exposition's order.
void requestLabels(std::string& out, std::string_view key) {
  static constexpr std::string_view kNames[] = {"component", "dry_run",     "group", "resource",
                                                "scope",     "subresource", "verb",  "version"};
  auto parts = split(key);
  for (std::size_t i = 0; i < parts.size() && i < std::size(kNames); ++i) {
    if (i) out += ',';
    out += kNames[i];
    out += "=\"";
    escapeTo(out, parts[i]);
    out += '"';
  }
}

// The families read from the store: each resource's objects and their size, its watch
// cache's ring.
void storeFamilies(std::string& out, const ObjectStore& store) {
  family(out, "apiserver_resource_objects", "gauge",
         "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the "
         "value will be -1.");
  for (const auto& t : store.tables()) {
    sample(out, "apiserver_resource_objects", {{"group", t->type.group}, {"resource", t->type.resource}},
           std::round(t->weightedObjects));
  }
  // What the stored objects of each resource take, as kube-apiserver estimates it: here
  // the JSON bytes the model stores (a built-in's protobuf encoding is somewhat smaller).
  family(out, "apiserver_resource_size_estimate_bytes", "gauge",
         "[ALPHA] Estimated size of stored objects in database. Estimate is based on sum of last observed sizes of "
         "serialized objects. In case of a fetching error, the value will be -1.");
  for (const auto& t : store.tables()) {
    sample(out, "apiserver_resource_size_estimate_bytes", {{"group", t->type.group}, {"resource", t->type.resource}},
           std::round(t->weightedBytes));
  }
  // The watch cache's ring per cached resource (watch_cache.go): its capacity, and the
  // events it has taken in (a sampled change counts its weight).
  family(out, "watch_cache_capacity", "gauge", "[ALPHA] Total capacity of watch cache broken by resource type.");
  for (const auto& t : store.tables()) {
    if (!t->type.watchCached()) continue;
    sample(out, "watch_cache_capacity", {{"group", t->type.group}, {"resource", t->type.resource}},
           std::round(t->historyCapacity));
  }
  family(out, "apiserver_watch_cache_events_received_total", "counter",
         "[ALPHA] Counter of events received in watch cache broken by resource type.");
  for (const auto& t : store.tables()) {
    if (!t->type.watchCached()) continue;
    sample(out, "apiserver_watch_cache_events_received_total",
           {{"group", t->type.group}, {"resource", t->type.resource}}, std::round(t->recordedWeight));
  }
  family(out, "apiserver_storage_objects", "gauge",
         "[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, the "
         "value will be -1.");
  for (const auto& t : store.tables()) {
    sample(out, "apiserver_storage_objects", {{"resource", t->type.qualified()}}, std::round(t->weightedObjects));
  }
}

}  // namespace

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return "0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string RequestLabels::key() const {
  std::string k;
  k.reserve(component.size() + group.size() + resource.size() + scope.size() + subresource.size() + verb.size() +
            version.size() + 12);
  k += component;
  k += kSep;
  k += dryRun ? "All" : "";
  k += kSep;
  k += group;
  k += kSep;
  k += resource;
  k += kSep;
  k += scope;
  k += kSep;
  k += subresource;
  k += kSep;
  k += verb;
  k += kSep;
  k += version;
  return k;
}

void ApiserverMetrics::request(const std::string& labelsKey, int code, double seconds, double weight) {
  requests_ += weight;
  auto d = duration_.find(labelsKey);
  if (d == duration_.end()) d = duration_.emplace(labelsKey, Histogram{}).first;
  Histogram& h = d->second;
  std::size_t b = 0;
  while (b < kLatencyBuckets.size() && seconds > kLatencyBuckets[b]) ++b;
  h.buckets[b] += weight;
  h.sum += seconds * weight;
  h.count += weight;
  h.codes[code] += weight;
}

void ApiserverMetrics::dropped(const std::string& labelsKey, int code, double weight) {
  requests_ += weight;
  duration_[labelsKey].codes[code] += weight;
}

void ApiserverMetrics::watchEvents(std::string_view group, std::string_view version, std::string_view resource,
                                   double n) {
  std::string k;
  k += group;
  k += kSep;
  k += resource;
  k += kSep;
  k += version;
  watchEvents_[k] += n;
}

std::string ApiserverMetrics::exposition(const Process& p, const ObjectStore& store) const {
  std::string out;
  out.reserve(64 * 1024);
  family(out, "apiserver_current_inflight_requests", "gauge",
         "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last "
         "second.");
  sample(out, "apiserver_current_inflight_requests", {{"request_kind", "mutating"}}, std::round(mutating_));
  sample(out, "apiserver_current_inflight_requests", {{"request_kind", "readOnly"}}, std::round(readOnly_));

  family(out, "apiserver_request_duration_seconds", "histogram",
         "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, "
         "subresource, scope and component.");
  for (const auto& [key, h] : duration_) {
    if (h.count == 0) continue;  // only ever dropped
    double cumulative = 0;
    for (std::size_t i = 0; i <= kLatencyBuckets.size(); ++i) {
      cumulative += h.buckets[i];
      out += "apiserver_request_duration_seconds_bucket{";
      requestLabels(out, key);
      out += ",le=\"";
      out += i < kLatencyBuckets.size() ? formatValue(kLatencyBuckets[i]) : "+Inf";
      out += "\"} ";
      out += formatValue(cumulative);
      out += '\n';
    }
    out += "apiserver_request_duration_seconds_sum{";
    requestLabels(out, key);
    out += "} " + formatValue(h.sum) + "\n";
    out += "apiserver_request_duration_seconds_count{";
    requestLabels(out, key);
    out += "} " + formatValue(h.count) + "\n";
  }

  family(out, "apiserver_request_total", "counter",
         "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, "
         "scope, component, and HTTP response code.");
  for (const auto& [key, h] : duration_) {
    for (const auto& [code, v] : h.codes) {
      out += "apiserver_request_total{code=\"" + std::to_string(code) + "\",";
      requestLabels(out, key);
      out += "} " + formatValue(v) + "\n";
    }
  }

  storeFamilies(out, store);

  family(out, "apiserver_watch_events_total", "counter", "[ALPHA] Number of events sent in watch clients");
  for (const auto& [k, v] : watchEvents_) {
    auto parts = split(k);
    sample(out, "apiserver_watch_events_total", {{"group", parts[0]}, {"resource", parts[1]}, {"version", parts[2]}},
           v);
  }

  family(out, "go_memstats_heap_inuse_bytes", "gauge",
         "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + "
         "/memory/classes/heap/unused:bytes");
  sample(out, "go_memstats_heap_inuse_bytes", {}, std::round(p.heapBytes));
  family(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
  sample(out, "process_cpu_seconds_total", {}, p.cpuSeconds);
  family(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
  sample(out, "process_resident_memory_bytes", {}, std::round(p.rssBytes));
  family(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
  sample(out, "process_start_time_seconds", {}, p.startTime);
  return out;
}

std::string etcdExposition(const EtcdCounters& c, const EtcdExposition& e) {
  std::string out;
  out.reserve(4096);
  family(out, "etcd_debugging_lease_renewed_total", "counter", "Number of renewed leases seen by the leader.");
  sample(out, "etcd_debugging_lease_renewed_total", {}, 0);
  family(out, "etcd_debugging_mvcc_keys_total", "gauge", "Total number of keys.");
  sample(out, "etcd_debugging_mvcc_keys_total", {}, std::round(e.keys));
  family(out, "etcd_mvcc_db_total_size_in_bytes", "gauge",
         "Total size of the underlying database physically allocated in bytes.");
  sample(out, "etcd_mvcc_db_total_size_in_bytes", {}, std::round(e.dbBytes));
  family(out, "etcd_mvcc_db_total_size_in_use_in_bytes", "gauge",
         "Total size of the underlying database logically in use in bytes.");
  sample(out, "etcd_mvcc_db_total_size_in_use_in_bytes", {}, std::round(e.dbInUseBytes));
  family(out, "etcd_mvcc_put_total", "counter", "Total number of puts seen by this member.");
  sample(out, "etcd_mvcc_put_total", {}, c.puts);
  family(out, "etcd_server_has_leader", "gauge", "Whether or not a leader exists. 1 is existence, 0 is not.");
  sample(out, "etcd_server_has_leader", {}, 1);
  family(out, "etcd_server_id", "gauge",
         "Server or member ID in hexadecimal format. 1 for 'server_id' label with current ID.");
  sample(out, "etcd_server_id", {{"server_id", e.serverId}}, 1);
  family(out, "etcd_server_quota_backend_bytes", "gauge", "Current backend storage quota size in bytes.");
  sample(out, "etcd_server_quota_backend_bytes", {}, e.quotaBytes);
  family(out, "etcd_server_leader_changes_seen_total", "counter", "The number of leader changes seen.");
  sample(out, "etcd_server_leader_changes_seen_total", {}, 1);
  family(out, "etcd_server_proposals_applied_total", "gauge", "The total number of consensus proposals applied.");
  sample(out, "etcd_server_proposals_applied_total", {}, c.proposals);
  family(out, "etcd_server_proposals_committed_total", "gauge", "The total number of consensus proposals committed.");
  sample(out, "etcd_server_proposals_committed_total", {}, c.proposals);
  family(out, "etcd_server_proposals_failed_total", "counter", "The total number of failed proposals seen.");
  sample(out, "etcd_server_proposals_failed_total", {}, 0);
  family(out, "etcd_server_proposals_pending", "gauge", "The current number of pending proposals to commit.");
  sample(out, "etcd_server_proposals_pending", {}, 0);
  family(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
  sample(out, "process_cpu_seconds_total", {}, e.cpuSeconds);
  family(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
  sample(out, "process_start_time_seconds", {}, e.startTime);
  return out;
}

std::string controllerManagerExposition(const std::vector<WorkqueueState>& queues) {
  std::string out;
  family(out, "leader_election_master_status", "gauge",
         "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates "
         "master. 'name' is the string used to identify the lease. Please make sure to group by name.");
  sample(out, "leader_election_master_status", {{"name", "kube-controller-manager"}}, 1);
  family(out, "workqueue_adds_total", "counter", "[ALPHA] Total number of adds handled by workqueue");
  for (const auto& q : queues) sample(out, "workqueue_adds_total", {{"name", q.name}}, q.adds);
  family(out, "workqueue_depth", "gauge", "[ALPHA] Current depth of workqueue");
  for (const auto& q : queues) sample(out, "workqueue_depth", {{"name", q.name}}, q.depth);
  return out;
}

}  // namespace cpscale::model
