// The registry of workload kinds (workloads/kind.h) and what is asked of it by name:
// reading an entry, a kind's own figures, and a figure's kind.
#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "sim/common/error.h"
#include "workloads/kind.h"

namespace cpscale::workloads {

namespace {

// Kinds registered at run time, after the built-in ones.
struct Registered {
  std::mutex mu;
  std::vector<const WorkloadKind*> kinds;
};
Registered& registered() {
  static Registered r;
  return r;
}

}  // namespace

std::vector<const WorkloadKind*> workloadKinds() {
  // The built-in kinds: one line each.
  std::vector<const WorkloadKind*> all = {
      &kubeletsKind(),
      &churnKind(),
      &dormantKind(),
  };
  std::lock_guard lock(registered().mu);
  all.insert(all.end(), registered().kinds.begin(), registered().kinds.end());
  return all;
}

const WorkloadKind* findKind(std::string_view name) {
  for (const WorkloadKind* k : workloadKinds())
    if (k->name == name) return k;
  return nullptr;
}

std::string kindNames() {
  std::string out;
  for (const WorkloadKind* k : workloadKinds()) out += (out.empty() ? "" : ", ") + k->name;
  return out;
}

KindRegistration::KindRegistration(const WorkloadKind& kind) : kind_(&kind) {
  if (findKind(kind.name)) throw std::invalid_argument("workload kind '" + kind.name + "' is registered already");
  std::lock_guard lock(registered().mu);
  registered().kinds.push_back(kind_);
}

KindRegistration::~KindRegistration() {
  std::lock_guard lock(registered().mu);
  auto& v = registered().kinds;
  v.erase(std::remove(v.begin(), v.end(), kind_), v.end());
}

const Knob* WorkloadKind::knob(std::string_view field) const {
  for (const Knob& k : knobs)
    if (k.field == field) return &k;
  return nullptr;
}

WorkloadPtr makeWorkload(const YamlField& spec) {
  if (!spec.isMap()) throw spec.error("expected a workload entry (a map with 'kind')");
  const YamlField kind = spec.require("kind");
  const std::string k = kind.asString();
  if (const WorkloadKind* found = findKind(k)) return found->read(spec);
  throw kind.error("unknown workload kind '" + k + "' (known: " + kindNames() + ")");
}

const std::vector<std::string>& ownFigures(const std::string& kind) {
  static const std::vector<std::string> kNone;
  const WorkloadKind* k = findKind(kind);
  return k ? k->figureNames : kNone;
}

std::string notOwnFigure(const std::string& kind, const std::string& figure) {
  const auto& own = ownFigures(kind);
  if (std::find(own.begin(), own.end(), figure) != own.end()) return "";
  std::string list;
  for (const auto& f : own) list += (list.empty() ? "" : ", ") + f;
  return "a " + kind + " workload reports no figure named " + figure + " (its own: " + list + ")";
}

std::string figureKindOf(const std::string& figure) {
  for (const WorkloadKind* k : workloadKinds())
    if (k->ownsFamily && k->ownsFamily(figure)) return k->name;
  return "";
}

std::vector<kube::GroupVersionResource> customResources(const Workload& w) {
  std::vector<kube::GroupVersionResource> out;
  for (const auto& r : w.resources())
    if (!r.group.empty() && r.group != kube::kRbacGroup && r.group != kube::gvr::kLeases.group) out.push_back(r);
  return out;
}

SummaryNumber operator+(const SummaryNumber& a, const SummaryNumber& b) {
  if (!a.value) return a;
  if (!b.value) return b;
  return {*a.value + *b.value, ""};
}

SummaryFigures::SummaryFigures(const result::WorkloadSummary& w, std::vector<metrics::Figure>& out)
    : w_(w), out_(out), labels_(metrics::sortedLabels({{"workload", w.name}})) {}

const nlohmann::json& SummaryFigures::summary() const { return w_.summary; }

SummaryNumber SummaryFigures::number(std::initializer_list<std::string_view> key) const {
  const nlohmann::json* at = &w_.summary;
  std::string path;
  for (std::string_view k : key) {
    path += (path.empty() ? "" : ".") + std::string(k);
    auto it = at->is_object() ? at->find(k) : at->end();
    if (!at->is_object() || it == at->end())
      return {std::nullopt, "the " + w_.kind + " workload's summary has no '" + path + "'"};
    at = &*it;
  }
  if (!at->is_number())
    return {std::nullopt, "the " + w_.kind + " workload's summary's '" + path + "' is not a number"};
  return {at->get<double>(), ""};
}

std::vector<double> SummaryFigures::samples(std::string_view object, std::string_view key) const {
  std::vector<double> out;
  auto o = w_.summary.find(object);
  if (o == w_.summary.end() || !o->is_object()) return out;
  auto it = o->find(key);
  if (it == o->end() || !it->is_array()) return out;
  for (const auto& v : *it)
    if (v.is_number()) out.push_back(v.get<double>());
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

metrics::Labels withExtra(const metrics::Labels& base, const metrics::Labels& extra) {
  if (extra.empty()) return base;
  metrics::Labels all = base;
  all.insert(all.end(), extra.begin(), extra.end());
  std::sort(all.begin(), all.end());
  return all;
}

}  // namespace

void SummaryFigures::add(const char* name, const SummaryNumber& v, const char* unit, const metrics::Labels& extra) {
  if (!v.value) return unavailable(name, v.why, unit, extra);
  out_.push_back(metrics::Figure::measured(name, withExtra(labels_, extra), *v.value, unit, metrics::Source::kClient));
}

void SummaryFigures::unavailable(const char* name, const std::string& why, const char* unit,
                                 const metrics::Labels& extra) {
  out_.push_back(metrics::Figure::unavailable(name, withExtra(labels_, extra), unit, metrics::Source::kClient, why));
}

}  // namespace cpscale::workloads
