// The model plane's answers: a request that has waited its latency is served from the
// object store (a resource), from the plane's own state (/metrics, /readyz, /version,
// discovery) or, on an etcd member, from its few endpoints.
#include "sim/model/plane_impl.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace cpscale::model {

using engine::TimePoint;
using nlohmann::json;

kube::HttpResponse response(int status, std::string body, std::string contentType) {
  kube::HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  r.httpVersion = "2";
  r.headers.push_back({"content-type", std::move(contentType)});
  return r;
}

void ModelPlane::Impl::execute(ModelTransport& t, kube::RequestId id) {
  auto it = t.pending_.find(id);
  if (it == t.pending_.end()) return;
  if (heldWhileFrozen(t, id, it->second)) return;
  Pending p = std::move(it->second);
  t.pending_.erase(it);
  const TimePoint now = sched_.now();
  store_.setNow(now, options_.epochUnixNanos);
  int code = 0;
  kube::HttpResponse resp;
  if (t.kind_ == ModelTransport::Kind::kEtcd) {
    resp = handleEtcd(t, p);
  } else if (t.kind_ == ModelTransport::Kind::kControllerManager) {
    resp = handleControllerManager(p);
  } else if (p.tooMany) {
    resp = tooManyRequests();  // counted when it was refused
  } else {
    if (p.seat) releaseSeat(p.replica, p.seatMutating, t.weight_);
    if (p.serverTimeout) {
      code = 504;
      ++stats_.timeouts;
      resp = response(504, statusBody(504, "Timeout", "request did not complete within the allowed duration"));
    } else {
      resp = handle(t, p, code);
    }
    Apiserver& a = apis_[p.replica];
    a.metrics.request(p.labelsKey, code, seconds(now - p.submitted), t.weight_);
    a.metrics.inflight(p.mutating, -t.weight_);
  }
  ++stats_.requests;
  if (p.clientTimeout) {
    resp = kube::HttpResponse{};
    resp.outcome = kube::TransportOutcome::kTimeout;
    resp.detail = "no answer within the request's timeout";
  }
  ++t.handled_;
  p.done(std::move(resp));
}

kube::HttpResponse ModelPlane::Impl::handle(ModelTransport& t, Pending& p, int& code) {
  kube::HttpResponse r = p.route.resource ? handleResource(t, p) : handleNonResource(t, p);
  code = r.status;
  return r;
}

kube::HttpResponse ModelPlane::Impl::handleResource(ModelTransport& t, Pending& p) {
  const Route& r = p.route;
  const double w = t.weight_;
  Table* table = store_.find(r.group, r.version, r.resourceName);
  if (table == nullptr) {
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  }
  if ((!table->type.namespaced && !r.ns.empty()) ||
      (table->type.namespaced && r.ns.empty() && (!r.name.empty() || r.verb == "POST"))) {
    // A cluster-scoped resource under a namespace, or a namespaced object without one.
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  }
  const bool dryRun = r.has("dryRun");
  StoreResult res;
  const std::string& verb = r.verb;
  if (isWrite(verb) && !dryRun && !etcdUp(etcdFor(*table))) {
    return response(500, statusBody(500, "InternalError",
                                    "etcdserver: " + etcds_[etcdFor(*table)].member + " is down: connection refused"));
  }
  if ((verb == "POST" || verb == "PUT" || verb == "PATCH") && !dryRun) {
    if (etcds_[etcdFor(*table)].noSpace) {
      ++stats_.noSpace;
      return response(500, statusBody(500, "InternalError", "etcdserver: mvcc: database space exceeded"));
    }
  }
  if (verb == "GET") {
    res = store_.get(*table, r.ns, r.name, r.sub);
  } else if (verb == "LIST" || verb == "DELETECOLLECTION") {
    ListQuery q;
    q.labelSelector = r.param("labelSelector");
    q.fieldSelector = r.param("fieldSelector");
    q.shardSelector = r.param("shardSelector");
    q.continueToken = r.param("continue");
    if (std::string l = r.param("limit"); !l.empty()) q.limit = std::strtoll(l.c_str(), nullptr, 10);
    if (verb == "LIST") {
      res = store_.list(*table, r.ns, q);
      // Encoding the items the LIST returns (its own cost is the read's, in admit()).
      const double cpu = cal_.apiserverCpuListObject.value * static_cast<double>(res.items) * w;
      apis_[p.replica].pool->charge(sched_.now(), cpu);
      apis_[p.replica].cpu += cpu;
    } else {
      res = store_.removeCollection(*table, r.ns, q, p.req.body);
      if (res.items > 1) {
        const double cpu = cpuOf(writeClass(table->type)) * static_cast<double>(res.items - 1) * w;
        apis_[p.replica].pool->charge(sched_.now(), cpu);
        apis_[p.replica].cpu += cpu;
        Etcd& e = etcds_[etcdFor(*table)];
        const double etcdCpu = cal_.etcdCpuPerProposal.value * static_cast<double>(res.items - 1) * w;
        e.pool->charge(sched_.now(), etcdCpu);
        e.cpu += etcdCpu;
      }
    }
  } else if (verb == "POST") {
    if (!r.name.empty()) {
      return response(
          405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
    }
    res = store_.create(*table, r.ns, p.req.body, w, dryRun);
    if (res.reason == "AlreadyExists") ++stats_.alreadyExists;
  } else if (verb == "PUT") {
    res = store_.update(*table, r.ns, r.name, r.sub, p.req.body, w, dryRun);
    if (res.reason == "Conflict") ++stats_.conflicts;
  } else if (verb == "PATCH") {
    std::string ct = header(p.req, "content-type").value_or("application/merge-patch+json");
    ObjectStore::PatchKind kind;
    if (ct.starts_with("application/merge-patch+json")) {
      kind = ObjectStore::PatchKind::kMerge;
    } else if (ct.starts_with("application/strategic-merge-patch+json")) {
      kind = ObjectStore::PatchKind::kStrategic;
    } else if (ct.starts_with("application/json-patch+json")) {
      kind = ObjectStore::PatchKind::kJson;
    } else {
      return response(
          415, statusBody(415, "UnsupportedMediaType", "the body of the request was in an unknown format: " + ct));
    }
    res = store_.patch(*table, r.ns, r.name, r.sub, kind, p.req.body, w, dryRun);
    if (res.reason == "Conflict") ++stats_.conflicts;
  } else if (verb == "DELETE") {
    res = store_.remove(*table, r.ns, r.name, p.req.body);
  } else {
    return response(
        405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }
  if (res.weightedWrites > 0) countWrite(etcdFor(*table), res.weightedWrites, res.weightedPuts);
  // A kubelet's status write that changed the node carries a new heartbeat.
  if (table == nodes_ && nodes_ != nullptr && r.sub == "status" && res.weightedWrites > 0) nodeHeard(r.name);
  return response(res.status, std::move(res.body));
}

kube::HttpResponse ModelPlane::Impl::discovery(const Route& r) {
  if (r.path == "/api") {
    return response(200, R"({"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]})");
  }
  if (r.path == "/apis") {
    std::map<std::string, std::set<std::string>> groups;
    for (const auto& t : store_.tables()) {
      if (t->served && !t->type.group.empty())
        groups[t->type.group].insert(t->type.versions.begin(), t->type.versions.end());
    }
    json list = {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", json::array()}};
    for (const auto& [g, vs] : groups) {
      json versions = json::array();
      for (const auto& v : vs) versions.push_back({{"groupVersion", g + "/" + v}, {"version", v}});
      list["groups"].push_back({{"name", g}, {"versions", versions}, {"preferredVersion", versions.front()}});
    }
    return response(200, list.dump());
  }
  // /api/v1, /apis/<group>/<version>
  std::string group, version;
  if (r.path.starts_with("/api/")) {
    version = r.path.substr(5);
  } else if (r.path.starts_with("/apis/")) {
    std::string gv = r.path.substr(6);
    std::size_t slash = gv.find('/');
    if (slash == std::string::npos)
      return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
    group = gv.substr(0, slash);
    version = gv.substr(slash + 1);
  }
  json resources = json::array();
  for (const auto& t : store_.tables()) {
    if (!t->served || t->type.group != group || !t->type.serves(version)) continue;
    resources.push_back(
        {{"name", t->type.resource},
         {"singularName", ""},
         {"namespaced", t->type.namespaced},
         {"kind", t->type.kind},
         {"verbs", {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}});
    if (t->type.statusSubresource) {
      resources.push_back({{"name", t->type.resource + "/status"},
                           {"singularName", ""},
                           {"namespaced", t->type.namespaced},
                           {"kind", t->type.kind},
                           {"verbs", {"get", "patch", "update"}}});
    }
  }
  if (resources.empty())
    return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
  json list = {{"kind", "APIResourceList"},
               {"apiVersion", "v1"},
               {"groupVersion", group.empty() ? version : group + "/" + version},
               {"resources", resources}};
  return response(200, list.dump());
}

kube::HttpResponse ModelPlane::Impl::handleNonResource(ModelTransport&, Pending& p) {
  const Route& r = p.route;
  if (p.req.method != "GET") {
    return response(
        405, statusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource"));
  }
  if (r.path == "/metrics") {
    accruePlaneBookmarks();
    return response(200, apiserverText(p.replica), "text/plain; version=0.0.4; charset=utf-8");
  }
  if (r.path == "/readyz" || r.path == "/healthz" || r.path == "/livez" || r.path.starts_with("/readyz/") ||
      r.path.starts_with("/healthz/") || r.path.starts_with("/livez/")) {
    return response(200, "ok", "text/plain; charset=utf-8");
  }
  if (r.path == "/version") {
    std::string v = options_.kubernetesVersion;
    std::string major = "1", minor = "0";
    if (v.size() > 1 && v[0] == 'v') {
      std::size_t dot = v.find('.', 1);
      major = v.substr(1, dot - 1);
      if (dot != std::string::npos) minor = v.substr(dot + 1, v.find('.', dot + 1) - dot - 1);
    }
    json j = {{"major", major},       {"minor", minor},          {"gitVersion", v + "-model"},
              {"gitCommit", "model"}, {"gitTreeState", "clean"}, {"buildDate", "1970-01-01T00:00:00Z"},
              {"goVersion", "model"}, {"compiler", "gc"},        {"platform", "linux/amd64"}};
    return response(200, j.dump());
  }
  if (r.path == "/debug/pprof/heap") {
    // The runtime.MemStats block a Go heap profile written with debug=1 ends with.
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  "heap profile: 0: 0 [0: 0] @ heap/1048576\n\n# runtime.MemStats\n# HeapInuse = %.0f\n",
                  heapBytes(p.replica));
    return response(200, buf, "text/plain; charset=utf-8");
  }
  if (r.path == "/api" || r.path == "/apis" || r.path.starts_with("/api/") || r.path.starts_with("/apis/")) {
    return discovery(r);
  }
  return response(404, statusBody(404, "NotFound", "the server could not find the requested resource"));
}

kube::HttpResponse ModelPlane::Impl::handleControllerManager(const Pending& p) const {
  const Route& r = p.route;
  if (r.path == "/metrics") return response(200, controllerManagerText(), "text/plain; version=0.0.4; charset=utf-8");
  if (r.path == "/healthz") return response(200, "ok", "text/plain; charset=utf-8");
  return response(404, "404 page not found\n", "text/plain; charset=utf-8");
}

kube::HttpResponse ModelPlane::Impl::handleEtcd(ModelTransport& t, const Pending& p) {
  const Route& r = p.route;
  if (r.path == "/metrics") return response(200, etcdText(t.member_), "text/plain; version=0.0.4; charset=utf-8");
  if (r.path == "/health" || r.path == "/readyz" || r.path == "/livez") {
    return response(200, R"({"health":"true","reason":""})");
  }
  if (r.path == "/version") return response(200, R"({"etcdserver":"3.6.16-model","etcdcluster":"3.6.0"})");
  return response(404, "404 page not found\n", "text/plain; charset=utf-8");
}

}  // namespace cpscale::model
