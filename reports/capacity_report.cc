#include "reports/capacity_report.h"

#include <algorithm>

#include "reports/format.h"

namespace cpscale::reports {

using metrics::Figure;
using metrics::labelValue;

namespace {

// The figure with this name and exactly these labels, the steady window's first.
const Figure* exact(const std::vector<Figure>& figures, std::string_view name, const metrics::Labels& labels) {
  const Figure* any = nullptr;
  for (const Figure& f : figures) {
    if (f.name != name || f.labels != labels) continue;
    if (f.window == metrics::Window::kSteady) return &f;
    if (!any) any = &f;
  }
  return any;
}

}  // namespace

std::string capacityResultText(const CapacitySearch& s) {
  auto knob = [&](double v) { return formatKnobValue(v, s.unit); };
  switch (s.limit) {
    case CapacityLimit::kServer: return s.held ? knob(*s.held) : "none held";
    case CapacityLimit::kMaxReached: return s.held ? "at least " + knob(*s.held) : "none held";
    case CapacityLimit::kGenerator: {
      const CapacityStep* at = breakingStep(s);
      return "generator-limited" + (at ? " at " + knob(at->value) : std::string()) + " (" +
             (s.held ? "held " + formatKnobValue(*s.held, "") : std::string("none held")) + ")";
    }
    case CapacityLimit::kInterrupted:
      return s.held ? "at least " + knob(*s.held) + " (interrupted)" : "none held (interrupted)";
    case CapacityLimit::kFailed:
      return s.held ? "at least " + knob(*s.held) + " (the search failed)" : "none held (the search failed)";
  }
  return "?";
}

std::string describeLimit(CapacityLimit l) {
  switch (l) {
    case CapacityLimit::kServer:
      return "a step failed a hold gate with the generator on schedule: the recipe's limit";
    case CapacityLimit::kGenerator:
      return "the generator fell behind its schedule: that step says nothing of the server, so what held is a lower "
             "bound, not a capacity";
    case CapacityLimit::kMaxReached: return "every step up to the search's max held: the capacity is at least the max";
    case CapacityLimit::kInterrupted: return "the search was interrupted before it found a limit";
    case CapacityLimit::kFailed: return "the run could not go on (setup timed out, a member exited, an error)";
  }
  return "";
}

std::string_view stepHeldText(const CapacityStep& step) {
  if (step.held) return "yes";
  return step.generatorLimited ? "generator-limited" : "no";
}

std::vector<const CapacityStep*> stepsByValue(const CapacitySearch& s) {
  std::vector<const CapacityStep*> out;
  for (const CapacityStep& st : s.steps) out.push_back(&st);
  std::stable_sort(out.begin(), out.end(), [](const CapacityStep* a, const CapacityStep* b) { return a->value < b->value; });
  return out;
}

std::size_t bisectionSteps(const CapacitySearch& s) {
  std::size_t n = 0;
  double largest = 0;
  bool first = true;
  for (const CapacityStep& st : s.steps) {
    if (!first && st.value < largest) ++n;
    largest = first ? st.value : std::max(largest, st.value);
    first = false;
  }
  return n;
}

const CapacityStep* breakingStep(const CapacitySearch& s) {
  auto lowest = [&](auto pred) -> const CapacityStep* {
    for (const CapacityStep* st : stepsByValue(s))
      if (!st->held && pred(*st)) return st;
    return nullptr;
  };
  if (s.limit == CapacityLimit::kServer)
    if (const CapacityStep* st = lowest([](const CapacityStep& x) { return !x.generatorLimited; })) return st;
  if (s.limit == CapacityLimit::kGenerator)
    if (const CapacityStep* st = lowest([](const CapacityStep& x) { return x.generatorLimited; })) return st;
  return lowest([](const CapacityStep&) { return true; });
}

std::string_view breakLabel(const CapacityStep& step) { return step.generatorLimited ? "generator-limited" : "broke"; }

std::string brokeFirst(const CapacitySearch& s) {
  const CapacityStep* st = breakingStep(s);
  if (!st) return s.brokeBy;
  if (st->generatorLimited) return "generator_limited_by_schedule";
  for (const auto& g : st->gates)
    if (!g.passed) return figureKey(g.gate.figure, g.gate.selector);
  return st->brokeBy.empty() ? s.brokeBy : st->brokeBy;
}

StepFigures stepFigures(const CapacityStep& step, std::string_view axis) {
  StepFigures out;
  for (const Figure& f : step.figures)
    if (f.name == "axis_pressure" && labelValue(f.labels, "axis") == axis &&
        (!out.pressure || (out.pressure->window != metrics::Window::kSteady && f.window == metrics::Window::kSteady)))
      out.pressure = &f;
  out.writeQps = exact(step.figures, kStepWriteQpsKey, {});
  out.leaseShare = exact(step.figures, kStepLeaseShareKey, {});
  out.heap = exact(step.figures, kStepHeapKey, {});
  for (const Figure& f : step.figures) {
    if (f.name != "client_latency_p99" || labelValue(f.labels, "measured_from") != "scheduled") continue;
    if (f.window == metrics::Window::kSetup) continue;
    if (!out.clientP99 || (f.available() && (!out.clientP99->available() || *f.value > *out.clientP99->value)))
      out.clientP99 = &f;
  }
  return out;
}

std::string pressureKey(std::string_view axis) { return "axis_pressure{axis=" + std::string(axis) + "}"; }

std::string notInStep(std::string_view key) { return "the step's figures have no " + std::string(key); }

std::string verbResource(const Figure& f) {
  std::string verb(labelValue(f.labels, "verb")), resource(labelValue(f.labels, "resource"));
  return verb + (verb.empty() || resource.empty() ? "" : " ") + resource;
}

}  // namespace cpscale::reports
