// One home per workload kind. A kind (the scenario's `kind:`) declares here what the rest
// of cpscale asks of it: the axis it loads, the knobs a capacity search may step and
// their units, how its entry is read, the RBAC its actors need in a cluster, the figures
// it reports of itself from its summary, and (through its axis) where the headline shows
// it. Scenario loading, the workloads' figures, `cpscale job`'s role, the headline and
// the model's runs all find kinds here and nowhere else.
//
// Adding a kind: its workload (a Workload and its instances) in a file of its own, a
// `const WorkloadKind& fooKind()` beside it, and one line in workloadKinds()
// (workloads/kinds.cc). test/CONTRIBUTING.md ("Adding a workload kind") walks through it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/yaml_reader.h"
#include "sim/kube/rbac.h"
#include "sim/metrics/figures.h"
#include "sim/result/result.h"
#include "workloads/workload.h"

namespace cpscale::workloads {

// A field of a kind's entry that a capacity search may step, and the unit its values are
// reported in ("nodes", "sessions/min").
struct Knob {
  std::string field;
  std::string unit;
};

// A number read from a workload's merged summary, or why there is none: a summary that
// lacks a key (one written by another version, or a workload that never got that far)
// makes the figure drawn from it unavailable, never 0.
struct SummaryNumber {
  std::optional<double> value;
  std::string why;  // set when value is empty
};
SummaryNumber operator+(const SummaryNumber& a, const SummaryNumber& b);

// The figures one workload reports of itself, from its summary: labelled {workload:
// NAME}, window run, source client.
class SummaryFigures {
 public:
  SummaryFigures(const result::WorkloadSummary& w, std::vector<metrics::Figure>& out);
  // The summary's number at `key` (a path of keys into nested objects).
  SummaryNumber number(std::initializer_list<std::string_view> key) const;
  SummaryNumber number(std::string_view key) const { return number({key}); }
  // A number array at `key`, sorted; empty when absent.
  std::vector<double> samples(std::string_view object, std::string_view key) const;
  const nlohmann::json& summary() const;
  // `name` measured in `unit`, or unavailable with the number's reason.
  // `extra`: labels beside {workload: NAME} (e.g. {resource: endpointslices}).
  void add(const char* name, const SummaryNumber& v, const char* unit = "count", const metrics::Labels& extra = {});
  void unavailable(const char* name, const std::string& why, const char* unit = "count",
                   const metrics::Labels& extra = {});

 private:
  const result::WorkloadSummary& w_;
  std::vector<metrics::Figure>& out_;
  metrics::Labels labels_;
};

struct WorkloadKind {
  std::string name;  // the scenario's `kind`
  std::string axis;  // "node" | "churn" | "state"
  std::vector<Knob> knobs;
  // The figures it reports of itself (figures()), and whether a figure name belongs to
  // its families (lease_renewals_*, session_*), so that a misspelt one is refused as not
  // one of its own rather than taken for a server figure.
  std::vector<std::string> figureNames;
  std::function<bool(std::string_view figure)> ownsFamily;
  // Reads one entry of a scenario's `workloads:` list (ConfigError naming file, line and
  // field); touches no server.
  std::function<WorkloadPtr(const YamlField& spec)> read;
  // What the entry's actors send, for a role that grants exactly that.
  std::function<void(const Workload& w, kube::RuleSet& rules)> grant;
  // Its figures, from its summary merged across workers (and shards).
  std::function<void(SummaryFigures& f)> figures;
  // Optional: drops from the summary what figures() took in full (per-actor samples), so
  // that result.json does not carry one number per node; counts stay.
  std::function<void(nlohmann::json& summary)> trim = nullptr;

  const Knob* knob(std::string_view field) const;
};

// Every kind cpscale knows, built-in first; registerKind() adds more.
std::vector<const WorkloadKind*> workloadKinds();
// The kind named `name`, or null.
const WorkloadKind* findKind(std::string_view name);
// "kubelets, churn, dormant" for messages.
std::string kindNames();

// Registers `kind` for as long as the returned handle lives (a kind defined outside the
// built-in list: a test's, or a plug-in's). Throws std::invalid_argument when the name is
// taken.
class KindRegistration {
 public:
  explicit KindRegistration(const WorkloadKind& kind);
  ~KindRegistration();
  KindRegistration(const KindRegistration&) = delete;
  KindRegistration& operator=(const KindRegistration&) = delete;

 private:
  const WorkloadKind* kind_;
};

// The custom resources (not core, RBAC or coordination) among a workload's resources():
// the CRD kinds it installs.
std::vector<kube::GroupVersionResource> customResources(const Workload& w);

// The built-in kinds (workloads/kubelets_kind.cc, churn_kind.cc, dormant_kind.cc).
const WorkloadKind& kubeletsKind();
const WorkloadKind& churnKind();
const WorkloadKind& dormantKind();

}  // namespace cpscale::workloads
