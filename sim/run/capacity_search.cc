#include "sim/run/capacity_search.h"

#include <cmath>
#include <sstream>

#include "reports/format.h"

namespace cpscale::run {

namespace {

bool flagged(std::span<const metrics::Figure> figures, std::string_view name) {
  const metrics::Figure* f = metrics::findFigure(figures, name);
  return f && f->value && *f->value != 0;
}

// "client_latency_p99{...} <= 1s: measured 1.69 s", in the figure's unit.
std::string describe(const metrics::GateResult& g, std::span<const metrics::Figure> figures) {
  if (!g.measured) return g.gate.text + ": " + (g.reason.empty() ? "unavailable" : g.reason);
  return g.gate.text + ": measured " + reports::formatValue(*g.measured, reports::unitOf(figures, g.gate.figure));
}

}  // namespace

result::CapacityStep judgeStep(double value, double startSeconds, double endSeconds,
                               std::vector<metrics::Figure> figures, std::span<const metrics::Gate> gates) {
  result::CapacityStep step;
  step.value = value;
  step.startSeconds = startSeconds;
  step.endSeconds = endSeconds;
  for (const auto& g : gates) step.gates.push_back(metrics::evaluateGate(g, figures));
  step.generatorLimited = flagged(figures, "generator_limited_by_schedule");
  step.figures = std::move(figures);
  step.held = !step.generatorLimited;
  for (const auto& g : step.gates) step.held = step.held && g.passed;
  if (step.generatorLimited) {
    step.brokeBy =
        "the generator fell behind its own schedule (generator_limited_by_schedule): the step measures "
        "the generator, not the server";
  } else {
    for (const auto& g : step.gates)
      if (!g.passed) {
        step.brokeBy = describe(g, step.figures);
        break;
      }
  }
  return step;
}

result::CapacitySearch searchCapacity(const scenario::CapacitySpec& spec, const StepRunner& run,
                                      const std::string& profile, const std::string& scenarioName, bool whole) {
  result::CapacitySearch s;
  s.profile = profile;
  s.scenario = scenarioName;
  s.axis = spec.axis;
  s.knob = spec.knob;
  s.unit = spec.unit;

  const std::vector<double> ladder = scenario::capacityLadder(spec, whole);
  StepsOutcome ladderRun = run(ladder);
  s.steps = ladderRun.steps;
  std::optional<double> lo;
  const result::CapacityStep* broken = nullptr;
  for (const auto& st : s.steps) {
    if (st.held) {
      lo = st.value;
    } else {
      broken = &st;
      break;
    }
  }
  s.held = lo;
  if (broken) {
    s.brokeBy = broken->brokeBy;
    s.limit = broken->generatorLimited ? result::CapacityLimit::kGenerator : result::CapacityLimit::kServer;
  } else if (ladderRun.stopped) {
    s.limit = *ladderRun.stopped;
    s.detail = ladderRun.detail;
  } else {
    s.limit = result::CapacityLimit::kMaxReached;
  }

  // Bisection between the last pass and a server-side break (a generator-limited break
  // says nothing about where the server would have broken).
  std::string bisectNote;
  if (s.limit == result::CapacityLimit::kServer && spec.bisect > 0) {
    double low = lo.value_or(0), high = broken->value;
    for (int round = 0; round < spec.bisect; ++round) {
      double mid = (low + high) / 2;
      if (whole) mid = std::round(mid);
      if (mid <= low || mid >= high) break;
      StepsOutcome one = run({mid});
      if (one.steps.empty()) {
        bisectNote = "bisection stopped at " + knobText(mid) + ": " + one.detail;
        break;
      }
      const result::CapacityStep& st = one.steps.front();
      s.steps.push_back(st);
      if (st.generatorLimited) {
        bisectNote = "bisection stopped at " + knobText(mid) + ": the generator fell behind";
        break;
      }
      if (st.held) {
        low = mid;
        s.held = mid;
      } else {
        high = mid;
        s.brokeBy = st.brokeBy;
      }
    }
  }

  std::ostringstream d;
  const std::string unit = s.unit.empty() ? "" : " " + s.unit;
  switch (s.limit) {
    case result::CapacityLimit::kServer:
      if (s.held)
        d << "held at " << knobText(*s.held) << unit << "; broke at the next step on the server: " << s.brokeBy;
      else
        d << "the first step (" << knobText(ladder.front()) << unit << ") already broke: " << s.brokeBy;
      break;
    case result::CapacityLimit::kGenerator:
      d << "the generator, not the server, was the limit at " << knobText(broken->value) << unit
        << (s.held ? "; the recipe held at least " + knobText(*s.held) + unit : std::string())
        << " (run the generator on more cores or in shards to find the server's limit)";
      break;
    case result::CapacityLimit::kMaxReached:
      d << "every step held up to the search's max (" << knobText(ladder.back()) << unit
        << "): capacity is at least that";
      break;
    case result::CapacityLimit::kInterrupted:
    case result::CapacityLimit::kFailed:
      d << "the search stopped: " << ladderRun.detail;
      if (s.held) d << " (it held " << knobText(*s.held) << unit << " before)";
      break;
  }
  if (!bisectNote.empty()) d << "; " << bisectNote;
  s.detail = d.str();
  return s;
}

metrics::Figure capacityFigure(const result::CapacitySearch& s) {
  metrics::Labels labels = metrics::sortedLabels({{"axis", s.axis}, {"knob", s.knob}});
  if (!s.held) {
    std::string why = s.limit == result::CapacityLimit::kServer ? "the first step did not hold: " + s.brokeBy
                                                                : "no step held: " + s.detail;
    return metrics::Figure::unavailable("capacity", labels, s.unit, metrics::Source::kApiserver, why);
  }
  if (s.limit == result::CapacityLimit::kMaxReached)
    labels = metrics::sortedLabels({{"at_least", "true"}, {"axis", s.axis}, {"knob", s.knob}});
  return metrics::Figure::measured("capacity", labels, *s.held, s.unit, metrics::Source::kApiserver);
}

}  // namespace cpscale::run
