#include "sim/model/object_store.h"

#include <algorithm>
#include <charconv>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sim/kube/base64.h"
#include "sim/model/json_text.h"

namespace cpscale::model {

using nlohmann::json;

namespace {

// Stands for the resourceVersion while an object is serialised, so the digits can be
// spliced in (and compared around) without a second serialisation.
constexpr std::string_view kRvPlaceholder = "@@cpscale-model-rv@@";

std::string objectKey(std::string_view ns, std::string_view name) {
  std::string k;
  k.reserve(ns.size() + name.size() + 1);
  k += ns;
  k += '/';
  k += name;
  return k;
}

LabelSet labelsOf(const json& obj) {
  LabelSet out;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return out;
  auto l = m->find("labels");
  if (l == m->end() || !l->is_object()) return out;
  out.reserve(l->size());
  // nlohmann::json objects are std::maps: already sorted by key.
  for (auto it = l->begin(); it != l->end(); ++it) {
    out.emplace_back(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  }
  return out;
}

std::string stringAt(const json& obj, std::string_view a, std::string_view b) {
  auto x = obj.find(a);
  if (x == obj.end() || !x->is_object()) return {};
  auto y = x->find(b);
  return y != x->end() && y->is_string() ? y->get<std::string>() : std::string();
}

std::optional<json> parseObject(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// The value at a dotted path of an object, as a field selector compares it.
std::optional<std::string> fieldOf(const json& obj, std::string_view path) {
  const json* cur = &obj;
  while (!path.empty()) {
    std::size_t dot = path.find('.');
    std::string part(path.substr(0, dot));
    if (!cur->is_object()) return std::nullopt;
    auto it = cur->find(part);
    if (it == cur->end()) return std::nullopt;
    cur = &*it;
    path = dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return std::nullopt;
  return cur->dump();
}

const std::string* mergeKeyFor(std::string_view field) {
  static const std::string kType = "type", kName = "name", kIp = "ip", kUid = "uid", kMountPath = "mountPath",
                           kContainerPort = "containerPort";
  if (field == "conditions" || field == "addresses") return &kType;
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "containerStatuses" || field == "initContainerStatuses" || field == "ephemeralContainerStatuses" ||
      field == "volumes" || field == "env" || field == "imagePullSecrets" || field == "resourceClaims" ||
      field == "resourceClaimStatuses")
    return &kName;
  if (field == "podIPs" || field == "hostIPs") return &kIp;
  if (field == "ownerReferences") return &kUid;
  if (field == "volumeMounts") return &kMountPath;
  if (field == "ports") return &kContainerPort;
  return nullptr;
}

void civil(std::int64_t days, int& y, unsigned& m, unsigned& d) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int>(yoe + era * 400 + (m <= 2));
}

// Merges `patch` into the object at `obj` of `text`, writing the result to `out`:
// members the patch does not name are copied as text, objects it names are merged
// recursively, anything else it names is replaced by its (merged) value. Members come
// out sorted by key, as nlohmann::json writes them. false: a case left to the DOM path
// (escaped keys, $patch directives).
bool mergeText(std::string_view text, jsontext::Span obj, const json& patch, bool strategic, std::string& out,
               int depth = 0) {
  std::vector<jsontext::Member> ms;
  if (depth > 64 || !jsontext::members(text, obj, ms)) return false;
  if (strategic && patch.contains("$patch")) return false;
  std::vector<std::pair<std::string, std::string>> fields;  // key as written, value text
  fields.reserve(ms.size() + patch.size());
  for (const jsontext::Member& m : ms) {
    if (m.keyEscaped) return false;
    auto p = patch.find(std::string(m.key));
    if (p == patch.end()) {
      fields.emplace_back(std::string(m.key), std::string(m.value.of(text)));
      continue;
    }
    if (p->is_null()) continue;
    std::string value;
    if (p->is_object() && text[m.value.begin] == '{') {
      if (!mergeText(text, m.value, *p, strategic, value, depth + 1)) return false;
    } else if (strategic && p->is_array() && mergeKeyFor(m.key) != nullptr) {
      json merged = {{std::string(m.key), json::parse(m.value.of(text))}};
      strategicMergePatch(merged, json{{std::string(m.key), *p}});
      value = merged.begin()->dump();
    } else if (p->is_object()) {
      json fresh = json::object();
      if (strategic)
        strategicMergePatch(fresh, *p);
      else
        fresh.merge_patch(*p);
      value = fresh.dump();
    } else {
      value = p->dump();
    }
    fields.emplace_back(std::string(m.key), std::move(value));
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null() || (strategic && it.key().starts_with("$"))) continue;
    if (std::any_of(ms.begin(), ms.end(), [&](const jsontext::Member& m) { return m.key == it.key(); })) continue;
    if (it.key().find_first_of("\"\\") != std::string::npos) return false;
    json fresh = json::object();
    if (it->is_object()) {
      if (strategic)
        strategicMergePatch(fresh, *it);
      else
        fresh.merge_patch(*it);
    } else if (strategic && it->is_array() && mergeKeyFor(it.key()) != nullptr) {
      json wrapped = json::object();
      strategicMergePatch(wrapped, json{{it.key(), *it}});
      fresh = wrapped[it.key()];
    } else {
      fresh = *it;
    }
    fields.emplace_back(it.key(), fresh.dump());
  }
  std::sort(fields.begin(), fields.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out += '{';
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += '"';
    out += fields[i].first;
    out += "\":";
    out += fields[i].second;
  }
  out += '}';
  return true;
}

}  // namespace

bool ResourceType::serves(std::string_view v) const {
  return v == version || std::find(versions.begin(), versions.end(), v) != versions.end();
}

std::string_view toString(ChangeType t) {
  switch (t) {
    case ChangeType::kAdded: return "ADDED";
    case ChangeType::kModified: return "MODIFIED";
    case ChangeType::kDeleted: return "DELETED";
  }
  return "ADDED";
}

std::string_view ResourceType::triggerField() const {
  if (!group.empty()) return {};
  if (resource == "pods") return "spec.nodeName";
  if (resource == "nodes") return "metadata.name";
  return {};
}

std::optional<std::string> triggerValue(const ResourceType& type, const Change& c, std::optional<json>* parsed) {
  const std::string_view field = type.triggerField();
  if (field.empty()) return std::nullopt;
  if (field == "metadata.name") return c.name;
  if (!*parsed) *parsed = json::parse(*c.object, nullptr, false);
  return fieldOf(**parsed, field).value_or("");
}

bool Watcher::selects(std::string_view objNs, std::string_view name, const LabelSet& objLabels, std::uint64_t uidHash,
                      const std::string& object, std::optional<json>* parsed) const {
  if (!ns.empty() && objNs != ns) return false;
  if (shard && !shard->contains(uidHash)) return false;
  if (!labels.empty() && !labels.matches(objLabels)) return false;
  if (fields.empty()) return true;
  std::optional<json> own;
  std::optional<json>& cache = parsed ? *parsed : own;
  return fields.matches(name, objNs, [&](std::string_view f) -> std::optional<std::string> {
    if (!cache) cache = json::parse(object, nullptr, false);
    return fieldOf(*cache, f);
  });
}

std::string statusBody(int code, std::string_view reason, std::string_view message, const ResourceType* type,
                       std::string_view name) {
  json j = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
            {"status", "Failure"}, {"message", message}, {"reason", reason},
            {"code", code}};
  if (type != nullptr || !name.empty()) {
    json d = json::object();
    if (!name.empty()) d["name"] = name;
    if (type != nullptr) {
      if (!type->group.empty()) d["group"] = type->group;
      d["kind"] = type->resource;
    }
    j["details"] = std::move(d);
  }
  return j.dump();
}

void strategicMergePatch(json& target, const json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = json::object();
  if (auto p = patch.find("$patch"); p != patch.end() && p->is_string()) {
    if (*p == "replace") {
      target = patch;
      target.erase("$patch");
      return;
    }
    if (*p == "delete") {
      target = json::object();
      return;
    }
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    const std::string& key = it.key();
    if (key.starts_with("$")) continue;  // $setElementOrder/..., $retainKeys, $deleteFromPrimitiveList/...
    const json& value = *it;
    if (value.is_null()) {
      target.erase(key);
      continue;
    }
    auto cur = target.find(key);
    if (value.is_object()) {
      if (cur == target.end()) {
        json fresh = json::object();
        strategicMergePatch(fresh, value);
        target[key] = std::move(fresh);
      } else {
        strategicMergePatch(*cur, value);
      }
      continue;
    }
    const std::string* mergeKey = value.is_array() ? mergeKeyFor(key) : nullptr;
    if (mergeKey == nullptr || cur == target.end() || !cur->is_array()) {
      if (mergeKey != nullptr) {
        // Nothing to merge into: the patch's elements, without their directives.
        json list = json::array();
        for (const json& e : value) {
          if (e.is_object() && e.value("$patch", "") == "delete") continue;
          json fresh = json::object();
          strategicMergePatch(fresh, e);
          list.push_back(e.is_object() ? std::move(fresh) : e);
        }
        target[key] = std::move(list);
      } else {
        target[key] = value;
      }
      continue;
    }
    json& list = *cur;
    for (const json& e : value) {
      if (!e.is_object() || !e.contains(*mergeKey)) {
        list.push_back(e);
        continue;
      }
      const json& k = e[*mergeKey];
      auto match = std::find_if(list.begin(), list.end(), [&](const json& x) {
        return x.is_object() && x.contains(*mergeKey) && x[*mergeKey] == k;
      });
      if (e.value("$patch", "") == "delete") {
        if (match != list.end()) list.erase(match);
        continue;
      }
      if (match == list.end()) {
        json fresh = json::object();
        strategicMergePatch(fresh, e);
        list.push_back(std::move(fresh));
      } else {
        strategicMergePatch(*match, e);
      }
    }
  }
}

// ---- the store ------------------------------------------------------------------

ObjectStore::ObjectStore(StoreOptions options) : options_(options), rng_(options.seed) {}

Table& ObjectStore::addType(ResourceType type) {
  auto t = std::make_unique<Table>();
  t->type = std::move(type);
  if (t->type.versions.empty()) t->type.versions.push_back(t->type.version);
  t->index = tables_.size();
  t->historyCapacity = static_cast<double>(options_.historyMin);
  Table& ref = *t;
  byKey_[ref.type.key()] = &ref;
  tables_.push_back(std::move(t));
  return ref;
}

void ObjectStore::bootstrap() {
  struct B {
    const char* group;
    const char* resource;
    const char* kind;
    bool namespaced;
    bool status;
  };
  static constexpr B kBuiltins[] = {
      {"", "namespaces", "Namespace", false, true},
      {"", "nodes", "Node", false, true},
      {"", "pods", "Pod", true, true},
      {"", "configmaps", "ConfigMap", true, false},
      {"", "secrets", "Secret", true, false},
      {"", "serviceaccounts", "ServiceAccount", true, false},
      {"", "services", "Service", true, true},
      {"", "endpoints", "Endpoints", true, false},
      {"", "events", "Event", true, false},
      {"", "limitranges", "LimitRange", true, false},
      {"", "resourcequotas", "ResourceQuota", true, true},
      {"", "persistentvolumes", "PersistentVolume", false, true},
      {"", "persistentvolumeclaims", "PersistentVolumeClaim", true, true},
      {"", "podtemplates", "PodTemplate", true, false},
      {"", "replicationcontrollers", "ReplicationController", true, true},
      {"coordination.k8s.io", "leases", "Lease", true, false},
      {"events.k8s.io", "events", "Event", true, false},
      {"discovery.k8s.io", "endpointslices", "EndpointSlice", true, false},
      {"networking.k8s.io", "servicecidrs", "ServiceCIDR", false, true},
      {"apps", "deployments", "Deployment", true, true},
      {"apps", "replicasets", "ReplicaSet", true, true},
      {"apps", "statefulsets", "StatefulSet", true, true},
      {"apps", "daemonsets", "DaemonSet", true, true},
      {"batch", "jobs", "Job", true, true},
      {"rbac.authorization.k8s.io", "roles", "Role", true, false},
      {"rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true, false},
      {"rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false, false},
      {"rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false, false},
      {"scheduling.k8s.io", "priorityclasses", "PriorityClass", false, false},
      {"apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", false, true},
  };
  for (const B& b : kBuiltins) {
    ResourceType t;
    t.group = b.group;
    t.version = "v1";
    t.resource = b.resource;
    t.kind = b.kind;
    t.namespaced = b.namespaced;
    t.statusSubresource = b.status;
    addType(std::move(t));
  }
  namespaces_ = findByKey("", "namespaces");
  crds_ = findByKey("apiextensions.k8s.io", "customresourcedefinitions");
  for (const char* ns : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    json body = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}};
    create(*namespaces_, "", body.dump(), 1);
  }
}

Table* ObjectStore::findByKey(std::string_view group, std::string_view resource) {
  std::string k;
  k.reserve(group.size() + resource.size() + 1);
  k += group;
  k += '/';
  k += resource;
  auto it = byKey_.find(k);
  return it == byKey_.end() ? nullptr : it->second;
}

Table* ObjectStore::find(std::string_view group, std::string_view version, std::string_view resource) {
  Table* t = findByKey(group, resource);
  if (t == nullptr || !t->served || !t->type.serves(version)) return nullptr;
  return t;
}

std::size_t ObjectStore::objects() const {
  std::size_t n = 0;
  for (const auto& t : tables_) n += t->objects.size();
  return n;
}

bool ObjectStore::namespaceExists(std::string_view ns) const {
  return namespaces_ != nullptr && namespaces_->objects.count(objectKey("", ns)) > 0;
}

std::string ObjectStore::newUid() {
  const std::uint64_t a = rng_.next(), b = rng_.next();
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xfff),
                static_cast<unsigned>(0x8000 | ((b >> 48) & 0x3fff)),
                static_cast<unsigned long long>(b & 0xffffffffffffull));
  return buf;
}

std::string ObjectStore::timestamp() const {
  const std::int64_t ns = epoch_ + now_.time_since_epoch().count();
  std::int64_t secs = ns >= 0 ? ns / 1'000'000'000 : (ns - 999'999'999) / 1'000'000'000;
  std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  const std::int64_t rem = secs - days * 86400;
  int y;
  unsigned m, d;
  civil(days, y, m, d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", y, m, d, static_cast<int>(rem / 3600),
                static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60));
  return buf;
}

void ObjectStore::record(Table& t, Change c) {
  const double lower = static_cast<double>(options_.historyMin), upper = static_cast<double>(options_.historyMax);
  // The weight the ring holds: everything recorded since its oldest change.
  auto held = [&t] {
    return t.history.empty() ? 0 : t.recordedWeight - (t.history.front().cumulative - t.history.front().weight);
  };
  if (!t.history.empty() && held() + c.weight > t.historyCapacity) {
    // Full: resized before the event goes in, as resizeCacheLocked does.
    if (c.at - t.history.front().at < options_.historyWindow) {
      t.historyCapacity = std::min(2 * t.historyCapacity, upper);
    } else {
      // The newest quarter's first event: the first whose cumulative weight is past
      // everything but the last capacity/4.
      const double from = t.recordedWeight - t.historyCapacity / 4;
      auto q = std::upper_bound(t.history.begin(), t.history.end(), from,
                                [](double v, const Change& h) { return v < h.cumulative; });
      if (q != t.history.end() && c.at - q->at > options_.historyWindow)
        t.historyCapacity = std::max(t.historyCapacity / 2, lower);
    }
  }
  t.recordedWeight += c.weight;
  c.cumulative = t.recordedWeight;
  t.history.push_back(std::move(c));
  if (onChange_) onChange_(t, t.history.back());
  // The oldest events leave the ring; the newest stays even when heavier than it.
  while (t.history.size() > 1 && held() > t.historyCapacity) {
    t.compactedRv = t.history.front().rv;
    t.history.pop_front();
  }
}

StoreResult ObjectStore::commit(Table& t, const std::string& key, json& obj, StoredObject* old, double weight,
                                bool dryRun) {
  json& meta = obj["metadata"];
  meta["resourceVersion"] = kRvPlaceholder;
  Prepared p;
  p.text = obj.dump();
  p.rvPos = p.text.find(kRvPlaceholder);
  p.uid = stringAt(obj, "metadata", "uid");
  p.creationTimestamp = stringAt(obj, "metadata", "creationTimestamp");
  p.labels = labelsOf(obj);
  p.ns = stringAt(obj, "metadata", "namespace");
  p.name = stringAt(obj, "metadata", "name");
  return commitText(t, key, std::move(p), old, weight, dryRun);
}

StoreResult ObjectStore::commitText(Table& t, const std::string& key, Prepared next, StoredObject* old, double weight,
                                    bool dryRun) {
  std::string& text = next.text;
  const std::size_t pos = next.rvPos;
  StoreResult r;
  r.items = 1;
  if (old != nullptr) {
    const std::string& o = *old->text;
    const std::size_t tail = pos + kRvPlaceholder.size(), oldTail = old->rvPos + old->rvLen;
    if (pos == old->rvPos && text.size() - tail == o.size() - oldTail && text.compare(0, pos, o, 0, pos) == 0 &&
        text.compare(tail, std::string::npos, o, oldTail, std::string::npos) == 0) {
      // Nothing changed: no new revision, as the apiserver skips the etcd write.
      r.status = 200;
      r.body = o;
      return r;
    }
  }
  const std::uint64_t rv = dryRun ? (old ? old->rv : 0) : ++revision_;
  const std::string rvText = rv == 0 ? std::string() : std::to_string(rv);
  text.replace(pos, kRvPlaceholder.size(), rvText);
  r.status = old ? 200 : 201;
  if (dryRun) {
    r.body = std::move(text);
    return r;
  }
  StoredObject so;
  so.rvPos = static_cast<std::uint32_t>(pos);
  so.rvLen = static_cast<std::uint32_t>(rvText.size());
  so.rv = rv;
  so.uid = std::move(next.uid);
  so.uidHash = fnv1a64(so.uid);
  so.creationTimestamp = std::move(next.creationTimestamp);
  if (old != nullptr && old->labels && *old->labels == next.labels) {
    so.labels = old->labels;
  } else {
    so.labels = std::make_shared<const LabelSet>(std::move(next.labels));
  }
  so.weight = weight;
  so.text = std::make_shared<const std::string>(std::move(text));
  r.body = *so.text;
  r.weightedWrites = weight;
  r.weightedPuts = weight;

  Change c;
  c.rv = rv;
  c.weight = weight;
  c.object = so.text;
  c.uidHash = so.uidHash;
  c.labels = so.labels;
  c.at = now_;
  c.ns = std::move(next.ns);
  c.name = std::move(next.name);
  if (old != nullptr) {
    c.type = ChangeType::kModified;
    c.oldLabels = std::move(old->labels);
    t.weightedObjects -= old->weight;
    t.weightedBytes -= old->weight * static_cast<double>(old->text->size());
    *old = std::move(so);
    t.weightedObjects += old->weight;
    t.weightedBytes += old->weight * static_cast<double>(old->text->size());
  } else {
    c.type = ChangeType::kAdded;
    auto [it, _] = t.objects.insert_or_assign(key, std::move(so));
    t.weightedObjects += it->second.weight;
    t.weightedBytes += it->second.weight * static_cast<double>(it->second.text->size());
  }
  record(t, std::move(c));
  return r;
}

std::optional<StoreResult> ObjectStore::fastUpdate(Table& t, const std::string& ns, const std::string& name,
                                                   std::string_view body, double weight, bool dryRun) {
  namespace jt = jsontext;
  if (t.type.statusSubresource || &t == crds_ || &t == namespaces_) return std::nullopt;
  const std::string key = objectKey(t.type.namespaced ? ns : "", name);
  auto it = t.objects.find(key);
  if (it == t.objects.end()) return std::nullopt;
  StoredObject& old = it->second;
  auto whole = jt::object(body);
  if (!whole) return std::nullopt;
  std::vector<jt::Member> top, meta;
  if (!jt::members(body, *whole, top)) return std::nullopt;
  const jt::Member* metadata = nullptr;
  bool apiVersion = false, kind = false;
  for (const jt::Member& m : top) {
    if (m.keyEscaped) return std::nullopt;
    if (m.key == "metadata") metadata = &m;
    apiVersion |= m.key == "apiVersion";
    kind |= m.key == "kind";
  }
  if (metadata == nullptr || !apiVersion || !kind || !jt::members(body, metadata->value, meta)) return std::nullopt;
  // The new metadata: the body's, with what the server owns set as the server sets it.
  std::vector<std::pair<std::string_view, std::string>> fields;
  fields.reserve(meta.size() + 5);
  LabelSet labels;
  for (const jt::Member& m : meta) {
    if (m.keyEscaped) return std::nullopt;
    if (m.key == "name") {
      auto v = jt::plainString(body, m.value);
      if (!v || *v != name) return std::nullopt;
    } else if (m.key == "resourceVersion") {
      auto v = jt::plainString(body, m.value);
      if (!v) return std::nullopt;
      if (!v->empty() && *v != std::string_view(*old.text).substr(old.rvPos, old.rvLen)) return std::nullopt;
    } else if (m.key == "labels") {
      std::vector<jt::Member> ls;
      if (!jt::members(body, m.value, ls)) return std::nullopt;
      labels.reserve(ls.size());
      for (const jt::Member& l : ls) {
        auto v = jt::plainString(body, l.value);
        if (l.keyEscaped || !v) return std::nullopt;
        labels.emplace_back(std::string(l.key), std::string(*v));
      }
      std::sort(labels.begin(), labels.end());
      fields.emplace_back(m.key, std::string(m.value.of(body)));
    } else if (m.key != "namespace" && m.key != "uid" && m.key != "creationTimestamp") {
      fields.emplace_back(m.key, std::string(m.value.of(body)));
    }
  }
  fields.emplace_back("name", jt::quote(name));
  if (t.type.namespaced) fields.emplace_back("namespace", jt::quote(ns));
  fields.emplace_back("resourceVersion", jt::quote(kRvPlaceholder));
  fields.emplace_back("uid", jt::quote(old.uid));
  fields.emplace_back("creationTimestamp", jt::quote(old.creationTimestamp));
  std::sort(fields.begin(), fields.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Prepared p;
  p.text.reserve(body.size() + 64);
  p.text.append(body.substr(whole->begin, metadata->value.begin - whole->begin));
  p.text += '{';
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) p.text += ',';
    p.text += '"';
    p.text += fields[i].first;
    p.text += "\":";
    if (fields[i].first == "resourceVersion") p.rvPos = p.text.size() + 1;
    p.text += fields[i].second;
  }
  p.text += '}';
  p.text.append(body.substr(metadata->value.end, whole->end - metadata->value.end));
  p.ns = t.type.namespaced ? ns : "";
  p.name = name;
  p.uid = old.uid;
  p.creationTimestamp = old.creationTimestamp;
  p.labels = std::move(labels);
  return commitText(t, key, std::move(p), &old, weight, dryRun);
}

namespace {

// A new CRD's status: its names accepted and established at once, its storage version
// stored.
json establishedCrdStatus(const json& crd, const std::string& t0) {
  std::string storage;
  for (const json& v : crd["spec"]["versions"]) {
    if (v.value("storage", false)) storage = v.value("name", std::string());
  }
  return {{"acceptedNames", crd["spec"]["names"]},
          {"conditions", json::array({{{"type", "NamesAccepted"},
                                       {"status", "True"},
                                       {"reason", "NoConflicts"},
                                       {"message", "no conflicts found"},
                                       {"lastTransitionTime", t0}},
                                      {{"type", "Established"},
                                       {"status", "True"},
                                       {"reason", "InitialNamesAccepted"},
                                       {"message", "the initial names have been accepted"},
                                       {"lastTransitionTime", t0}}})},
          {"storedVersions", storage.empty() ? json::array() : json::array({storage})}};
}

}  // namespace

StoreResult ObjectStore::create(Table& t, const std::string& ns, std::string_view body, double weight, bool dryRun) {
  StoreResult r;
  std::optional<json> parsed = parseObject(body);
  if (!parsed) {
    r.status = 400;
    r.reason = "BadRequest";
    r.body = statusBody(400, r.reason, "the request body is not a JSON object");
    return r;
  }
  json& obj = *parsed;
  json& meta = obj["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string name = meta.value("name", std::string());
  if (t.type.namespaced) {
    std::string bodyNs = meta.value("namespace", std::string());
    if (!bodyNs.empty() && bodyNs != ns) {
      r.status = 400;
      r.reason = "BadRequest";
      r.body = statusBody(400, r.reason,
                          "the namespace of the provided object does not match the namespace sent on the request");
      return r;
    }
    meta["namespace"] = ns;
    if (!namespaceExists(ns)) {
      r.status = 404;
      r.reason = "NotFound";
      r.body = statusBody(404, r.reason, "namespaces \"" + ns + "\" not found", &namespaces_->type, ns);
      return r;
    }
  } else {
    meta.erase("namespace");
  }
  if (name.empty()) {
    std::string prefix = meta.value("generateName", std::string());
    if (prefix.empty()) {
      r.status = 422;
      r.reason = "Invalid";
      r.body = statusBody(
          422, r.reason,
          t.type.kind + " \"\" is invalid: metadata.name: Required value: name or generateName is required", &t.type);
      return r;
    }
    static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    do {
      name = prefix;
      for (int i = 0; i < 5; ++i) name += kAlphabet[rng_.below(sizeof kAlphabet - 1)];
    } while (t.objects.count(objectKey(ns, name)) > 0);
    meta["name"] = name;
  }
  const std::string key = objectKey(t.type.namespaced ? ns : "", name);
  if (t.objects.count(key) > 0) {
    r.status = 409;
    r.reason = "AlreadyExists";
    r.body = statusBody(409, r.reason, t.type.qualified() + " \"" + name + "\" already exists", &t.type, name);
    return r;
  }
  if (&t == crds_) {
    const json& spec = obj.value("spec", json::object());
    std::string group = spec.value("group", std::string());
    std::string plural = spec.contains("names") ? spec["names"].value("plural", std::string()) : std::string();
    if (group.empty() || plural.empty() || name != plural + "." + group || !spec.contains("versions")) {
      r.status = 422;
      r.reason = "Invalid";
      r.body = statusBody(422, r.reason,
                          "CustomResourceDefinition.apiextensions.k8s.io \"" + name +
                              "\" is invalid: metadata.name must be spec.names.plural+\".\"+spec.group and "
                              "spec.versions is required",
                          &t.type, name);
      return r;
    }
  }
  meta["uid"] = newUid();
  meta["creationTimestamp"] = timestamp();
  meta.erase("deletionTimestamp");
  if (!obj.contains("apiVersion")) obj["apiVersion"] = t.type.apiVersion();
  if (!obj.contains("kind")) obj["kind"] = t.type.kind;
  if (t.type.custom && t.type.statusSubresource) obj.erase("status");
  if (&t == namespaces_) {
    obj["spec"]["finalizers"] = json::array({"kubernetes"});
    obj["status"] = {{"phase", "Active"}};
  }
  if (&t == crds_) {
    obj["status"] = establishedCrdStatus(obj, timestamp());
    meta["generation"] = 1;
  }
  StoreResult c = commit(t, key, obj, nullptr, weight, dryRun);
  if (&t == crds_ && !dryRun && c.status == 201) onCrdWritten(obj);
  return c;
}

StoreResult ObjectStore::get(Table& t, const std::string& ns, const std::string& name, std::string_view subresource) {
  StoreResult r;
  auto it = t.objects.find(objectKey(t.type.namespaced ? ns : "", name));
  if (it == t.objects.end()) {
    r.status = 404;
    r.reason = "NotFound";
    r.body = statusBody(404, r.reason, t.type.qualified() + " \"" + name + "\" not found", &t.type, name);
    return r;
  }
  (void)subresource;  // status: the whole object, as the apiserver answers it
  r.body = *it->second.text;
  r.items = 1;
  return r;
}

StoreResult ObjectStore::writeExisting(Table& t, const std::string& ns, const std::string& name,
                                       std::string_view subresource, json next, bool unconditional, double weight,
                                       bool dryRun) {
  StoreResult r;
  const std::string key = objectKey(t.type.namespaced ? ns : "", name);
  auto it = t.objects.find(key);
  if (it == t.objects.end()) {
    r.status = 404;
    r.reason = "NotFound";
    r.body = statusBody(404, r.reason, t.type.qualified() + " \"" + name + "\" not found", &t.type, name);
    return r;
  }
  StoredObject& old = it->second;
  if (!unconditional) {
    std::string rv = stringAt(next, "metadata", "resourceVersion");
    if (!rv.empty() && rv != std::string_view(*old.text).substr(old.rvPos, old.rvLen)) {
      r.status = 409;
      r.reason = "Conflict";
      r.body = statusBody(409, r.reason,
                          "Operation cannot be fulfilled on " + t.type.qualified() + " \"" + name +
                              "\": the object has been modified; please apply your changes to the latest version "
                              "and try again",
                          &t.type, name);
      return r;
    }
  }
  const bool statusOnly = subresource == "status";
  const bool finalize = subresource == "finalize" && &t == namespaces_;
  if (!subresource.empty() && !statusOnly && !finalize) {
    r.status = 404;
    r.reason = "NotFound";
    r.body = statusBody(404, r.reason, "the server could not find the requested resource");
    return r;
  }
  if (statusOnly || finalize || t.type.statusSubresource) {
    json before = json::parse(*old.text);
    if (statusOnly) {
      if (next.contains("status"))
        before["status"] = next["status"];
      else
        before.erase("status");
      next = std::move(before);
    } else if (finalize) {
      before["spec"]["finalizers"] = next.value("spec", json::object()).value("finalizers", json::array());
      next = std::move(before);
    } else if (before.contains("status")) {
      next["status"] = before["status"];
    } else {
      next.erase("status");
    }
  }
  json& meta = next["metadata"];
  if (!meta.is_object()) meta = json::object();
  meta["name"] = name;
  if (t.type.namespaced)
    meta["namespace"] = ns;
  else
    meta.erase("namespace");
  meta["uid"] = old.uid;
  meta["creationTimestamp"] = old.creationTimestamp;
  if (!next.contains("apiVersion")) next["apiVersion"] = t.type.apiVersion();
  if (!next.contains("kind")) next["kind"] = t.type.kind;
  StoreResult c = commit(t, key, next, &old, weight, dryRun);
  if (&t == crds_ && !dryRun && c.weightedWrites > 0) onCrdWritten(next);
  return c;
}

StoreResult ObjectStore::update(Table& t, const std::string& ns, const std::string& name, std::string_view subresource,
                                std::string_view body, double weight, bool dryRun) {
  if (subresource.empty()) {
    if (auto fast = fastUpdate(t, ns, name, body, weight, dryRun)) return std::move(*fast);
  }
  StoreResult r;
  std::optional<json> parsed = parseObject(body);
  if (!parsed) {
    r.status = 400;
    r.reason = "BadRequest";
    r.body = statusBody(400, r.reason, "the request body is not a JSON object");
    return r;
  }
  std::string bodyName = stringAt(*parsed, "metadata", "name");
  if (!bodyName.empty() && bodyName != name) {
    r.status = 400;
    r.reason = "BadRequest";
    r.body = statusBody(400, r.reason,
                        "the name of the object (" + bodyName + ") does not match the name on the URL (" + name + ")");
    return r;
  }
  return writeExisting(t, ns, name, subresource, std::move(*parsed), false, weight, dryRun);
}

std::optional<StoreResult> ObjectStore::fastPatch(Table& t, const std::string& ns, const std::string& name,
                                                  std::string_view subresource, bool strategic, const json& patch,
                                                  double weight, bool dryRun) {
  if (&t == crds_ || &t == namespaces_ || !patch.is_object()) return std::nullopt;
  const bool statusOnly = subresource == "status";
  if (!subresource.empty() && !statusOnly) return std::nullopt;
  const std::string key = objectKey(t.type.namespaced ? ns : "", name);
  auto it = t.objects.find(key);
  if (it == t.objects.end()) return std::nullopt;
  StoredObject& old = it->second;
  // What the patch may change: the status alone through /status; everything but the
  // status on the main resource of a kind with a status subresource.
  json effective;
  if (statusOnly) {
    effective = json::object();
    if (auto st = patch.find("status"); st != patch.end()) effective["status"] = *st;
  } else if (t.type.statusSubresource && patch.contains("status")) {
    effective = patch;
    effective.erase("status");
  }
  const json& p = effective.is_null() ? patch : effective;
  bool labelsChange = false;
  if (auto meta = p.find("metadata"); meta != p.end()) {
    if (!meta->is_object()) return std::nullopt;
    for (const char* owned : {"name", "namespace", "uid", "creationTimestamp"}) {
      if (meta->contains(owned)) return std::nullopt;
    }
    if (auto rv = meta->find("resourceVersion"); rv != meta->end()) {
      // A precondition, as for an update; the general path answers it.
      if (!rv->is_string() || *rv != std::string_view(*old.text).substr(old.rvPos, old.rvLen)) return std::nullopt;
    }
    labelsChange = meta->contains("labels");
  }
  // The old text with the placeholder for its resourceVersion, so it can be found again.
  std::string base = *old.text;
  base.replace(old.rvPos, old.rvLen, kRvPlaceholder);
  auto whole = jsontext::object(base);
  if (!whole) return std::nullopt;
  Prepared next;
  next.text.reserve(base.size() + 256);
  if (!mergeText(base, *whole, p, strategic, next.text)) return std::nullopt;
  next.rvPos = next.text.find(std::string("\"") + std::string(kRvPlaceholder) + "\"");
  if (next.rvPos == std::string::npos) return std::nullopt;
  ++next.rvPos;
  if (labelsChange) {
    json parsed = json::parse(next.text, nullptr, false);
    if (!parsed.is_object()) return std::nullopt;
    next.labels = labelsOf(parsed);
  } else {
    next.labels = *old.labels;
  }
  next.ns = t.type.namespaced ? ns : "";
  next.name = name;
  next.uid = old.uid;
  next.creationTimestamp = old.creationTimestamp;
  return commitText(t, key, std::move(next), &old, weight, dryRun);
}

StoreResult ObjectStore::patch(Table& t, const std::string& ns, const std::string& name, std::string_view subresource,
                               PatchKind kind, std::string_view body, double weight, bool dryRun) {
  StoreResult r;
  auto it = t.objects.find(objectKey(t.type.namespaced ? ns : "", name));
  if (it == t.objects.end()) {
    r.status = 404;
    r.reason = "NotFound";
    r.body = statusBody(404, r.reason, t.type.qualified() + " \"" + name + "\" not found", &t.type, name);
    return r;
  }
  json p = json::parse(body, nullptr, false);
  if (p.is_discarded() || (kind == PatchKind::kJson ? !p.is_array() : !p.is_object())) {
    r.status = 400;
    r.reason = "BadRequest";
    r.body = statusBody(400, r.reason,
                        "the patch is not a valid JSON " + std::string(kind == PatchKind::kJson ? "array" : "object"));
    return r;
  }
  if (kind != PatchKind::kJson) {
    if (auto fast = fastPatch(t, ns, name, subresource, kind == PatchKind::kStrategic, p, weight, dryRun)) {
      return std::move(*fast);
    }
  }
  json obj = json::parse(*it->second.text);
  try {
    switch (kind) {
      case PatchKind::kMerge: obj.merge_patch(p); break;
      case PatchKind::kStrategic: strategicMergePatch(obj, p); break;
      case PatchKind::kJson: obj = obj.patch(p); break;
    }
  } catch (const std::exception& e) {
    r.status = 422;
    r.reason = "Invalid";
    r.body = statusBody(422, r.reason, std::string("the patch could not be applied: ") + e.what(), &t.type, name);
    return r;
  }
  // A resourceVersion the patch sets is a precondition, as for an update.
  return writeExisting(t, ns, name, subresource, std::move(obj), false, weight, dryRun);
}

StoreResult ObjectStore::erase(Table& t, std::map<std::string, StoredObject>::iterator it) {
  StoreResult r;
  StoredObject& o = it->second;
  if (&t == namespaces_) removeNamespaceContents(it->first.substr(1));
  if (&t == crds_) onCrdDeleted(it->first.substr(1));
  const std::uint64_t rv = ++revision_;
  auto text = std::make_shared<std::string>(*o.text);
  text->replace(o.rvPos, o.rvLen, std::to_string(rv));
  Change c;
  c.rv = rv;
  c.type = ChangeType::kDeleted;
  c.weight = o.weight;
  c.object = text;
  c.uidHash = o.uidHash;
  c.labels = std::move(o.labels);
  c.at = now_;
  const std::size_t slash = it->first.find('/');
  c.ns = it->first.substr(0, slash);
  c.name = it->first.substr(slash + 1);
  t.weightedObjects -= o.weight;
  t.weightedBytes -= o.weight * static_cast<double>(o.text->size());
  r.weightedWrites = o.weight;
  r.items = 1;
  r.body = *text;
  t.objects.erase(it);
  record(t, std::move(c));
  return r;
}

StoreResult ObjectStore::remove(Table& t, const std::string& ns, const std::string& name, std::string_view body) {
  StoreResult r;
  auto it = t.objects.find(objectKey(t.type.namespaced ? ns : "", name));
  if (it == t.objects.end()) {
    r.status = 404;
    r.reason = "NotFound";
    r.body = statusBody(404, r.reason, t.type.qualified() + " \"" + name + "\" not found", &t.type, name);
    return r;
  }
  bool dryRun = false;
  std::optional<std::int64_t> grace;
  if (!body.empty()) {
    json opts = json::parse(body, nullptr, false);
    if (opts.is_object()) {
      dryRun = opts.contains("dryRun");
      if (auto g = opts.find("gracePeriodSeconds"); g != opts.end() && g->is_number_integer())
        grace = g->get<std::int64_t>();
      std::string uid = opts.contains("preconditions") ? opts["preconditions"].value("uid", std::string()) : "";
      std::string rv =
          opts.contains("preconditions") ? opts["preconditions"].value("resourceVersion", std::string()) : "";
      const StoredObject& o = it->second;
      std::string have(std::string_view(*o.text).substr(o.rvPos, o.rvLen));
      std::string why;
      if (!uid.empty() && uid != o.uid) {
        why = "Precondition failed: UID in precondition: " + uid + ", UID in object meta: " + o.uid;
      } else if (!rv.empty() && rv != have) {
        why =
            "Precondition failed: ResourceVersion in precondition: " + rv + ", ResourceVersion in object meta: " + have;
      }
      if (!why.empty()) {
        r.status = 409;
        r.reason = "Conflict";
        r.body = statusBody(409, r.reason,
                            "Operation cannot be fulfilled on " + t.type.qualified() + " \"" + name + "\": " + why,
                            &t.type, name);
        return r;
      }
    }
  }
  if (dryRun) {
    r.body = *it->second.text;
    return r;
  }
  if (grace == 0) {
    // Marked first (two revisions): the plane marks it when the request is admitted, so
    // watchers see the two apart; a caller that did not finds it marked here.
    StoreResult marked = markDeleting(t, ns, name);
    if (marked.status != 200) return marked;
    if (marked.weightedWrites > 0) {
      it = t.objects.find(objectKey(t.type.namespaced ? ns : "", name));
      r = erase(t, it);
      r.weightedWrites += marked.weightedWrites;
      r.weightedPuts += marked.weightedPuts;
      return r;
    }
  }
  return erase(t, it);
}

StoreResult ObjectStore::markDeleting(Table& t, const std::string& ns, const std::string& name) {
  StoreResult none;
  if (!t.type.group.empty() || t.type.resource != "pods") return none;
  auto it = t.objects.find(objectKey(ns, name));
  if (it == t.objects.end()) return none;
  json pod = json::parse(*it->second.text, nullptr, false);
  if (!pod.is_object()) return none;
  const std::string phase = pod.value("/status/phase"_json_pointer, std::string());
  if (pod.value("/spec/nodeName"_json_pointer, std::string()).empty() || phase == "Succeeded" || phase == "Failed" ||
      pod["metadata"].contains("deletionTimestamp"))
    return none;
  pod["metadata"]["deletionTimestamp"] = timestamp();
  pod["metadata"]["deletionGracePeriodSeconds"] = 0;
  return update(t, ns, name, "", pod.dump(), it->second.weight);
}

namespace {

struct ContinueToken {
  std::uint64_t rv = 0;
  std::string start;  // the last key served
};

std::string encodeContinue(const ContinueToken& c) {
  return kube::base64Encode(json({{"v", "meta.k8s.io/v1"}, {"rv", c.rv}, {"start", c.start}}).dump());
}

std::optional<ContinueToken> decodeContinue(std::string_view token) {
  auto raw = kube::base64Decode(token);
  if (!raw) return std::nullopt;
  json j = json::parse(*raw, nullptr, false);
  if (!j.is_object() || !j.contains("rv") || !j.contains("start")) return std::nullopt;
  ContinueToken c;
  c.rv = j.value("rv", std::uint64_t{0});
  c.start = j.value("start", std::string());
  return c;
}

}  // namespace

StoreResult ObjectStore::list(Table& t, const std::string& ns, const ListQuery& q) {
  StoreResult r;
  Watcher filter;  // a list selects as a watch does
  filter.ns = t.type.namespaced ? ns : "";
  std::string error;
  auto labels = LabelSelector::parse(q.labelSelector, &error);
  auto fields = labels ? FieldSelector::parse(q.fieldSelector, &error) : std::nullopt;
  std::optional<ShardRange> shard;
  if (fields && !q.shardSelector.empty()) {
    shard = ShardRange::parse(q.shardSelector, &error);
    if (!shard) fields.reset();
  }
  if (!labels || !fields) {
    r.status = 400;
    r.reason = "BadRequest";
    r.body = statusBody(400, r.reason, "unable to parse requirement: " + error);
    return r;
  }
  filter.labels = std::move(*labels);
  filter.fields = std::move(*fields);
  filter.shard = shard;
  std::uint64_t rv = revision_;
  auto it = filter.ns.empty() ? t.objects.begin() : t.objects.lower_bound(filter.ns + "/");
  if (!q.continueToken.empty()) {
    auto c = decodeContinue(q.continueToken);
    if (!c) {
      r.status = 400;
      r.reason = "BadRequest";
      r.body = statusBody(400, r.reason, "continue key is not valid: incorrect encoded start resourceVersion");
      return r;
    }
    rv = c->rv;
    it = t.objects.upper_bound(c->start);
  }
  const std::string end = filter.ns.empty() ? std::string() : filter.ns + "0";  // '0' follows '/'
  auto inRange = [&](auto i) { return i != t.objects.end() && (end.empty() || i->first < end); };
  std::string items;
  std::string last;
  std::size_t n = 0;
  bool more = false;
  for (; inRange(it); ++it) {
    if (q.limit > 0 && n >= static_cast<std::size_t>(q.limit)) {
      more = true;
      break;
    }
    const StoredObject& o = it->second;
    const std::size_t slash = it->first.find('/');
    std::string_view objNs(it->first.data(), slash);
    std::string_view name(it->first.data() + slash + 1, it->first.size() - slash - 1);
    if (!filter.selects(objNs, name, *o.labels, o.uidHash, *o.text)) continue;
    if (n++ > 0) items += ',';
    items += *o.text;
    last = it->first;
  }
  std::string body;
  body.reserve(items.size() + 160);
  body += R"({"kind":")" + t.type.kind + R"(List","apiVersion":")" + t.type.apiVersion() +
          R"(","metadata":{"resourceVersion":")" + std::to_string(rv) + "\"";
  if (more) body += R"(,"continue":")" + encodeContinue({rv, last}) + "\"";
  body += R"(},"items":[)";
  body += items;
  body += "]}";
  r.body = std::move(body);
  r.items = n;
  return r;
}

StoreResult ObjectStore::removeCollection(Table& t, const std::string& ns, const ListQuery& q, std::string_view body) {
  ListQuery all = q;
  all.limit = 0;
  all.continueToken.clear();
  StoreResult listed = list(t, ns, all);
  if (listed.status != 200) return listed;
  bool dryRun = false;
  if (!body.empty()) {
    json opts = json::parse(body, nullptr, false);
    dryRun = opts.is_object() && opts.contains("dryRun");
  }
  StoreResult r;
  json items = json::parse(listed.body)["items"];
  std::string out;
  for (const json& item : items) {
    std::string key =
        objectKey(t.type.namespaced ? stringAt(item, "metadata", "namespace") : "", stringAt(item, "metadata", "name"));
    auto it = t.objects.find(key);
    if (it == t.objects.end()) continue;  // went with an earlier one (a namespace's contents)
    StoreResult one;
    if (dryRun) {
      one.body = *it->second.text;
    } else {
      one = erase(t, it);
    }
    r.weightedWrites += one.weightedWrites;
    if (r.items++ > 0) out += ',';
    out += one.body;
  }
  r.body = R"({"kind":")" + t.type.kind + R"(List","apiVersion":")" + t.type.apiVersion() +
           R"(","metadata":{"resourceVersion":")" + std::to_string(revision_) + R"("},"items":[)" + out + "]}";
  return r;
}

void ObjectStore::removeNamespaceContents(const std::string& ns) {
  for (const auto& t : tables_) {
    if (!t->type.namespaced) continue;
    const std::string lo = ns + "/", hi = ns + "0";
    for (auto it = t->objects.lower_bound(lo); it != t->objects.end() && it->first < hi;) {
      auto next = std::next(it);
      erase(*t, it);
      it = next;
    }
  }
}

void ObjectStore::onCrdWritten(const json& crd) {
  const json& spec = crd.at("spec");
  ResourceType type;
  type.group = spec.value("group", std::string());
  type.resource = spec.at("names").value("plural", std::string());
  type.kind = spec.at("names").value("kind", std::string());
  type.namespaced = spec.value("scope", std::string("Namespaced")) == "Namespaced";
  type.custom = true;
  for (const json& v : spec.value("versions", json::array())) {
    std::string name = v.value("name", std::string());
    if (v.value("served", true)) type.versions.push_back(name);
    if (v.value("storage", false)) {
      type.version = name;
      type.statusSubresource = v.contains("subresources") && v["subresources"].contains("status");
    }
  }
  if (type.version.empty() && !type.versions.empty()) type.version = type.versions.front();
  if (Table* t = findByKey(type.group, type.resource)) {
    t->type = std::move(type);
    t->served = true;
    return;
  }
  addType(std::move(type));
}

void ObjectStore::onCrdDeleted(const std::string& name) {
  const std::size_t dot = name.find('.');
  if (dot == std::string::npos) return;
  Table* t = findByKey(name.substr(dot + 1), name.substr(0, dot));
  if (t == nullptr || !t->type.custom) return;
  while (!t->objects.empty()) erase(*t, t->objects.begin());
  t->served = false;
  if (onRemoved_) onRemoved_(*t);
}

std::optional<std::vector<const Change*>> ObjectStore::changesSince(const Table& t, std::uint64_t rv) const {
  if (rv < t.compactedRv) return std::nullopt;
  auto it = std::upper_bound(t.history.begin(), t.history.end(), rv,
                             [](std::uint64_t v, const Change& c) { return v < c.rv; });
  std::vector<const Change*> out;
  for (; it != t.history.end(); ++it) out.push_back(&*it);
  return out;
}

std::vector<const StoredObject*> ObjectStore::selected(const Table& t, const Watcher& w) const {
  std::vector<const StoredObject*> out;
  auto it = w.ns.empty() ? t.objects.begin() : t.objects.lower_bound(w.ns + "/");
  const std::string end = w.ns.empty() ? std::string() : w.ns + "0";
  for (; it != t.objects.end() && (end.empty() || it->first < end); ++it) {
    const std::size_t slash = it->first.find('/');
    std::string_view objNs(it->first.data(), slash);
    std::string_view name(it->first.data() + slash + 1, it->first.size() - slash - 1);
    if (w.selects(objNs, name, *it->second.labels, it->second.uidHash, *it->second.text)) out.push_back(&it->second);
  }
  return out;
}

}  // namespace cpscale::model
