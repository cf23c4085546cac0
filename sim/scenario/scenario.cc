#include "sim/scenario/scenario.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "sim/common/yaml_reader.h"
#include "sim/scenario/gate_check.h"
#include "workloads/kind.h"

namespace cpscale::scenario {

// The file's text, read once, and the changes made to its tree before validation, in
// order: the --set overrides, then each variation's (whose errors name the scenario's
// file instead of --set).
struct Scenario::Parsed {
  struct Edit {
    Override o;
    std::string origin;
  };
  std::string text;
  std::vector<Edit> edits;
};

namespace {
using Edit = Scenario::Parsed::Edit;

std::vector<std::string> splitPath(const std::string& path) {
  // "workloads[0].count" -> {"workloads", "[0]", "count"}
  std::vector<std::string> out;
  std::string cur;
  for (char c : path) {
    if (c == '.') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c == '[') {
      if (!cur.empty()) out.push_back(cur);
      cur = "[";
    } else if (c == ']') {
      out.push_back(cur + "]");
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The value of --set path=value, parsed as YAML ("[1, 2]", "{a: 1}", "5s").
YAML::Node overrideValue(const Edit& e) {
  try {
    return YAML::Load(e.o.value);
  } catch (const YAML::Exception& x) {
    std::string at = x.mark.line >= 0 ? " (at column " + std::to_string(x.mark.column + 1) + ")" : "";
    throw ConfigError(e.origin, e.o.path, "value '" + e.o.value + "' is not valid YAML: " + x.msg + at);
  }
}

void applyOverride(YAML::Node root, const Edit& edit) {
  const Override& o = edit.o;
  auto fail = [&](const std::string& what) { return ConfigError(edit.origin, o.path, what); };
  auto segments = splitPath(o.path);
  if (segments.empty()) throw fail("empty path");
  YAML::Node node = root;
  std::string walked;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const std::string& seg = segments[i];
    bool last = i + 1 == segments.size();
    YAML::Node next;
    if (seg.front() == '[') {
      if (!node.IsSequence()) throw fail("'" + walked + "' is not a list");
      std::size_t idx;
      try {
        idx = std::stoul(seg.substr(1, seg.size() - 2));
      } catch (...) {
        throw fail("bad list index " + seg);
      }
      if (idx >= node.size()) throw fail("'" + walked + "' has " + std::to_string(node.size()) + " items, no " + seg);
      if (last) {
        node[idx] = overrideValue(edit);
        return;
      }
      next = node[idx];
    } else if (node.IsSequence()) {
      // A named item of a list (workloads.fleet): match `name`, then `kind`.
      std::string names;
      bool found = false;  // (a default YAML::Node is a defined null: track it apart)
      for (const char* key : {"name", "kind"}) {
        for (std::size_t k = 0; k < node.size() && !found; ++k)
          if (node[k].IsMap() && node[k][key] && node[k][key].Scalar() == seg) {
            next = node[k];
            found = true;
          }
      }
      if (!found) {
        for (std::size_t k = 0; k < node.size(); ++k)
          if (node[k].IsMap() && node[k]["name"]) names += (names.empty() ? "" : ", ") + node[k]["name"].Scalar();
        throw fail("no item named '" + seg + "' in '" + walked + "'" +
                   (names.empty() ? "" : " (names: " + names + ")"));
      }
    } else {
      if (!node.IsMap() && !(node.IsNull() || !node.IsDefined())) throw fail("'" + walked + "' is not a map");
      if (last) {
        node[seg] = overrideValue(edit);
        return;
      }
      if (!node[seg]) node[seg] = YAML::Node(YAML::NodeType::Map);
      next = node[seg];
    }
    if (last) throw fail("names a whole list item; set one of its fields instead");
    walked += (walked.empty() || seg.front() == '[' ? "" : ".") + seg;
    node.reset(next);
  }
}

std::string readAll(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "", "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Override parseOverride(const std::string& text) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set", text, "expected path.to.field=value (e.g. workloads.fleet.count=500)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

nlohmann::json yamlToJson(const YAML::Node& node) {
  if (!node || node.IsNull()) return nullptr;
  if (node.IsSequence()) {
    auto arr = nlohmann::json::array();
    for (const auto& n : node) arr.push_back(yamlToJson(n));
    return arr;
  }
  if (node.IsMap()) {
    auto obj = nlohmann::json::object();
    for (const auto& kv : node) obj[kv.first.Scalar()] = yamlToJson(kv.second);
    return obj;
  }
  const std::string& s = node.Scalar();
  if (node.Tag() == "!") return s;  // quoted in the file: keep as a string
  long long i;
  double d;
  bool b;
  if (YAML::convert<long long>::decode(node, i)) return i;
  if (YAML::convert<double>::decode(node, d)) return d;
  if (YAML::convert<bool>::decode(node, b)) return b;
  return s;
}

namespace {

CapacitySpec readCapacity(const YamlField& f, const Scenario& s) {
  f.expectMap({"knob", "axis", "start", "factor", "max", "hold", "settle", "bisect", "gates"});
  CapacitySpec c;
  c.where = f.where();
  auto knob = f.require("knob");
  c.knob = knob.asString();
  // workloads.<name>.<field>: the one knob shape a search can grow in place.
  const auto first = c.knob.find('.'), last = c.knob.rfind('.');
  if (c.knob.substr(0, first) != "workloads" || first == last || last + 1 >= c.knob.size())
    throw knob.error("'" + c.knob + "' is not a workload knob (workloads.<name>.<field>, e.g. workloads.fleet.count)");
  c.workload = c.knob.substr(first + 1, last - first - 1);
  c.field = c.knob.substr(last + 1);
  const workloads::Workload* w = nullptr;
  for (const auto& wl : s.workloads)
    if (wl->name() == c.workload) w = wl.get();
  if (!w) {
    std::string known;
    for (const auto& wl : s.workloads) known += (known.empty() ? "" : ", ") + wl->name();
    throw knob.error("no workload named '" + c.workload + "' (the scenario has " + known + ")");
  }
  // Only a field the workload grows in place can be stepped on one plane.
  const auto fields = w->growableFields();
  if (std::find(fields.begin(), fields.end(), c.field) == fields.end()) {
    std::string can;
    for (const auto& g : fields) can += (can.empty() ? "" : ", ") + g;
    throw knob.error("'" + c.field + "' of this " + w->kind() +
                     " workload cannot grow in place (it can: " + (can.empty() ? "none" : can) + ")");
  }
  c.axis = axisOfKind(w->kind());
  if (auto a = f.get("axis")) {
    c.axis = a->asString();
    if (c.axis != "node" && c.axis != "churn" && c.axis != "state")
      throw a->error("'" + c.axis + "' is not an axis (node, churn or state)");
  }
  c.unit = unitOfKnob(w->kind(), c.field);
  auto start = f.require("start");
  c.start = start.asDouble();
  if (c.start <= 0) throw start.error("must be > 0");
  if (auto g = f.get("factor")) {
    c.factor = g->asDouble();
    if (c.factor <= 1) throw g->error("must be > 1 (each step grows the load)");
  }
  auto max = f.require("max");
  c.max = max.asDouble();
  if (c.max < c.start) throw max.error("must be >= start");
  // Each step is a run of its own: start 1, factor 1.0000001 and max 1e300 made a ladder
  // that exhausted memory before the first step.
  constexpr double kMaxSteps = 100;
  const double steps = std::ceil(std::log(c.max / c.start) / std::log(c.factor)) + 1;
  if (!(steps <= kMaxSteps)) {
    auto factor = f.get("factor");
    throw max.error("start " + start.node().Scalar() + ", factor " + (factor ? factor->node().Scalar() : "2") +
                    " and max " + max.node().Scalar() + " make a ladder of more than " +
                    std::to_string(static_cast<int>(kMaxSteps)) + " steps (raise factor or lower max)");
  }
  c.hold = s.duration;
  if (auto g = f.get("hold")) c.hold = asDuration(*g);
  if (auto g = f.get("settle")) c.settle = asDuration(*g, false);
  if (auto g = f.get("bisect")) c.bisect = static_cast<int>(g->asInt(0, 10));
  // What "holds" means: the block's gates, else the scenario's.
  if (auto gates = f.get("gates")) {
    for (const auto& g : gates->items()) c.gates.push_back(metrics::parseGate(g.asString(), g.where(), g.path()));
    if (c.gates.empty()) throw gates->error("at least one gate is needed to say what holds means");
  } else {
    for (const auto& g : s.gates)
      if (g.figure != "capacity") c.gates.push_back(g);
    if (c.gates.empty()) throw f.error("no gates: give capacity.gates (what holds means) or the scenario's gates");
  }
  return c;
}

std::vector<FaultSpec> readFaults(const YamlField& f, const Scenario& s) {
  std::vector<FaultSpec> out;
  for (const auto& item : f.items()) {
    item.expectMap({"kill", "stop", "at", "restartAfter", "for"});
    FaultSpec fs;
    fs.where = item.where();
    fs.path = item.path();
    auto kill = item.get("kill"), stop = item.get("stop");
    if (kill.has_value() == stop.has_value()) throw item.error("give exactly one of kill: MEMBER or stop: MEMBER");
    fs.action = kill ? FaultSpec::Action::kKill : FaultSpec::Action::kStop;
    const YamlField& member = kill ? *kill : *stop;
    fs.member = member.asString();
    if (fs.member.empty()) throw member.error("names no member (e.g. kube-apiserver-0, etcd-main)");
    auto at = item.require("at");
    fs.at = asDuration(at, false);
    if (fs.at >= s.duration)
      throw at.error("is not inside the steady window (duration " + formatDuration(s.duration) + ")");
    if (fs.action == FaultSpec::Action::kKill) {
      if (auto g = item.get("for")) throw g->error("`for` is for stop; a killed member comes back with restartAfter");
      if (auto g = item.get("restartAfter")) fs.restartAfter = asDuration(*g);
    } else {
      if (auto g = item.get("restartAfter")) throw g->error("a stopped member is resumed after `for`, not restarted");
      fs.stopFor = asDuration(item.require("for"));
    }
    out.push_back(std::move(fs));
  }
  return out;
}

// Parse, apply the edits to the tree, then validate: an edit is checked exactly like the
// file's own fields.
Scenario parseScenario(std::shared_ptr<const Scenario::Parsed> from, const std::string& source) {
  YamlField parsed = loadYamlString(from->text, source);
  YAML::Node root = parsed.node();
  if (!root.IsMap()) throw parsed.error("a scenario file must be a map");
  for (const auto& e : from->edits) applyOverride(root, e);
  YamlField top(root, source, "");

  top.expectMap({"apiVersion", "kind", "name", "description", "duration", "seed", "workers", "scrapeInterval", "driver",
                 "drain", "setupTimeout", "warmup", "workloads", "gates", "capacity", "faults"});
  if (auto f = top.get("apiVersion"); f && f->asString() != "cpscale.io/v1alpha1")
    throw f->error("unsupported apiVersion '" + f->asString() + "' (expected cpscale.io/v1alpha1)");
  if (auto f = top.get("kind"); f && f->asString() != "Scenario")
    throw f->error("expected kind Scenario, found '" + f->asString() + "'");

  Scenario s;
  s.source = source;
  s.parsed = std::move(from);
  s.name = top.require("name").asString();
  if (auto f = top.get("description")) s.description = f->asString();
  s.duration = asDuration(top.require("duration"));
  if (auto f = top.get("seed")) s.seed = static_cast<std::uint64_t>(f->asInt(0, INT64_MAX));
  if (auto f = top.get("workers")) s.workers = static_cast<std::size_t>(f->asInt(1, 64));
  if (auto f = top.get("scrapeInterval")) s.scrapeInterval = asDuration(*f);
  if (auto f = top.get("drain")) s.drain = asDuration(*f, false);
  if (auto f = top.get("setupTimeout")) s.setupTimeout = asDuration(*f);
  if (auto f = top.get("warmup")) s.warmup = asDuration(*f, false);
  if (auto f = top.get("driver")) {
    f->expectMap({"maxInFlight", "connections", "maxInFlightPerConnection", "lagThreshold", "lagQuantile"});
    if (auto g = f->get("maxInFlight")) s.driver.maxInFlight = static_cast<std::size_t>(g->asInt(1, 1'000'000));
    if (auto g = f->get("connections")) s.driver.connections = static_cast<std::size_t>(g->asInt(1, 1024));
    if (auto g = f->get("maxInFlightPerConnection"))
      s.driver.maxInFlightPerConnection = static_cast<std::size_t>(g->asInt(1, 100'000));
    if (auto g = f->get("lagThreshold")) s.driver.lagThreshold = asDuration(*g);
    if (auto g = f->get("lagQuantile")) {
      double q = g->asDouble();
      if (q <= 0 || q >= 1) throw g->error("must be between 0 and 1 (exclusive)");
      s.driver.lagQuantile = q;
    }
  }
  auto list = top.require("workloads").items();
  if (list.empty()) throw top.require("workloads").error("at least one workload is required");
  std::set<std::string> names;
  for (const auto& w : list) {
    auto workload = workloads::makeWorkload(w);
    if (!names.insert(workload->name()).second)
      throw w.error("duplicate workload name '" + workload->name() + "' (give each a distinct `name`)");
    s.workloads.push_back(std::move(workload));
  }
  if (auto f = top.get("gates")) {
    for (const auto& g : f->items()) {
      // A gate is a string, or {expr: "..."} for room to grow (names, descriptions).
      std::string text;
      if (g.isMap()) {
        g.expectMap({"expr"});
        text = g.require("expr").asString();
      } else {
        text = g.asString();
      }
      s.gates.push_back(metrics::parseGate(text, g.where(), g.path()));
    }
  }
  if (auto f = top.get("capacity")) s.capacity = readCapacity(*f, s);
  if (auto f = top.get("faults")) {
    s.faults = readFaults(*f, s);
    if (s.capacity && !s.faults.empty())
      throw f->error(
          "faults and a capacity search do not mix: a step that breaks under a fault says nothing about capacity");
  }
  checkGatesCanBeJudged(s);
  s.effective = yamlToJson(root);
  return s;
}

}  // namespace

std::string_view toString(FaultSpec::Action a) { return a == FaultSpec::Action::kKill ? "kill" : "stop"; }

Scenario loadScenario(const std::filesystem::path& path, const std::vector<Override>& overrides) {
  auto parsed = std::make_shared<Scenario::Parsed>();
  parsed->text = readAll(path);
  for (const auto& o : overrides) parsed->edits.push_back({o, "--set"});
  return parseScenario(std::move(parsed), path.string());
}

Variation& Variation::setKnob(std::string path, double value) {
  knobs.emplace_back(std::move(path), value);
  return *this;
}

Variation& Variation::setDuration(engine::Duration d) {
  duration = d;
  return *this;
}

Variation& Variation::setWarmup(engine::Duration d) {
  warmup = d;
  return *this;
}

Scenario vary(const Scenario& base, const Variation& variation) {
  if (!base.parsed) throw std::logic_error("scenario '" + base.name + "' was not parsed from a file: it cannot vary");
  auto parsed = std::make_shared<Scenario::Parsed>(*base.parsed);
  // Onto the tree as the file would say it (counts whole, durations in seconds), so that
  // the result records a step's or a sample's values as a --set of them would.
  auto edit = [&](std::string path, std::string text) {
    parsed->edits.push_back({{std::move(path), std::move(text)}, base.source});
  };
  for (const auto& [path, value] : variation.knobs) edit(path, knobText(value));
  auto seconds = [](engine::Duration d) { return knobText(std::chrono::duration<double>(d).count()) + "s"; };
  if (variation.duration) edit("duration", seconds(*variation.duration));
  if (variation.warmup) edit("warmup", seconds(*variation.warmup));
  return parseScenario(std::move(parsed), base.source);
}

std::string knobText(double v) {
  std::ostringstream os;
  os.precision(15);
  os << v;
  return os.str();
}

std::string axisOfKind(const std::string& kind) {
  const workloads::WorkloadKind* k = workloads::findKind(kind);
  return k ? k->axis : "";
}

std::string unitOfKnob(const std::string& kind, const std::string& field) {
  const workloads::WorkloadKind* k = workloads::findKind(kind);
  const workloads::Knob* knob = k ? k->knob(field) : nullptr;
  return knob ? knob->unit : field;
}

std::vector<double> capacityLadder(const CapacitySpec& spec, bool whole) {
  std::vector<double> out;
  for (double v = spec.start;; v *= spec.factor) {
    double step = std::min(v, spec.max);
    if (whole) step = std::round(step);
    if (out.empty() || step > out.back()) out.push_back(step);
    if (v >= spec.max) break;
  }
  return out;
}

}  // namespace cpscale::scenario
