#include "reports/capacity_report.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "reports/format.h"
#include "reports/html.h"
#include "reports/summary.h"
#include "reports/svg.h"
#include "sim/result/json_io.h"

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

std::string capacityResultText(const result::CapacitySearch& s) {
  auto knob = [&](double v) { return formatKnobValue(v, s.unit); };
  switch (s.limit) {
    case result::CapacityLimit::kServer: return s.held ? knob(*s.held) : "none held";
    case result::CapacityLimit::kMaxReached: return s.held ? "at least " + knob(*s.held) : "none held";
    case result::CapacityLimit::kGenerator: {
      const result::CapacityStep* at = breakingStep(s);
      return "generator-limited" + (at ? " at " + knob(at->value) : std::string()) + " (" +
             (s.held ? "held " + formatKnobValue(*s.held, "") : std::string("none held")) + ")";
    }
    case result::CapacityLimit::kInterrupted:
      return s.held ? "at least " + knob(*s.held) + " (interrupted)" : "none held (interrupted)";
    case result::CapacityLimit::kFailed:
      return s.held ? "at least " + knob(*s.held) + " (the search failed)" : "none held (the search failed)";
  }
  return "?";
}

std::string describeLimit(result::CapacityLimit l) {
  switch (l) {
    case result::CapacityLimit::kServer:
      return "a step failed a hold gate with the generator on schedule: the recipe's limit";
    case result::CapacityLimit::kGenerator:
      return "the generator fell behind its schedule: that step says nothing of the server, so what held is a lower "
             "bound, not a capacity";
    case result::CapacityLimit::kMaxReached:
      return "every step up to the search's max held: the capacity is at least the max";
    case result::CapacityLimit::kInterrupted: return "the search was interrupted before it found a limit";
    case result::CapacityLimit::kFailed: return "the run could not go on (setup timed out, a member exited, an error)";
  }
  return "";
}

std::string_view stepHeldText(const result::CapacityStep& step) {
  if (step.held) return "yes";
  return step.generatorLimited ? "generator-limited" : "no";
}

std::vector<const result::CapacityStep*> stepsByValue(const result::CapacitySearch& s) {
  std::vector<const result::CapacityStep*> out;
  for (const result::CapacityStep& st : s.steps) out.push_back(&st);
  std::stable_sort(out.begin(), out.end(),
                   [](const result::CapacityStep* a, const result::CapacityStep* b) { return a->value < b->value; });
  return out;
}

std::size_t bisectionSteps(const result::CapacitySearch& s) {
  std::size_t n = 0;
  double largest = 0;
  bool first = true;
  for (const result::CapacityStep& st : s.steps) {
    if (!first && st.value < largest) ++n;
    largest = first ? st.value : std::max(largest, st.value);
    first = false;
  }
  return n;
}

const result::CapacityStep* breakingStep(const result::CapacitySearch& s) {
  auto lowest = [&](auto pred) -> const result::CapacityStep* {
    for (const result::CapacityStep* st : stepsByValue(s))
      if (!st->held && pred(*st)) return st;
    return nullptr;
  };
  if (s.limit == result::CapacityLimit::kServer)
    if (const result::CapacityStep* st = lowest([](const result::CapacityStep& x) { return !x.generatorLimited; }))
      return st;
  if (s.limit == result::CapacityLimit::kGenerator)
    if (const result::CapacityStep* st = lowest([](const result::CapacityStep& x) { return x.generatorLimited; }))
      return st;
  return lowest([](const result::CapacityStep&) { return true; });
}

std::string_view breakLabel(const result::CapacityStep& step) {
  return step.generatorLimited ? "generator-limited" : "broke";
}

std::string brokeFirst(const result::CapacitySearch& s) {
  const result::CapacityStep* st = breakingStep(s);
  if (!st) return s.brokeBy;
  if (st->generatorLimited) return "generator_limited_by_schedule";
  for (const auto& g : st->gates)
    if (!g.passed) return figureKey(g.gate.figure, g.gate.selector);
  return st->brokeBy.empty() ? s.brokeBy : st->brokeBy;
}

StepFigures stepFigures(const result::CapacityStep& step, std::string_view axis) {
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

// ---- the capacity index ----

namespace {

constexpr std::string_view kIndexAxes[] = {"node", "churn", "state"};

std::vector<const result::CapacitySearch*> searchesOf(const result::CapacityIndex& idx, std::string_view recipe,
                                                      std::string_view axis) {
  std::vector<const result::CapacitySearch*> out;
  for (const result::CapacitySearch& s : idx.searches)
    if (s.profile == recipe && s.axis == axis) out.push_back(&s);
  return out;
}

// What broke first, in words for the notes and cells.
std::string brokeFirstText(const result::CapacitySearch& s) {
  std::string key = brokeFirst(s);
  switch (s.limit) {
    case result::CapacityLimit::kMaxReached: return "nothing broke up to the search's max";
    case result::CapacityLimit::kGenerator:
      return "the generator fell behind (" + (key.empty() ? std::string("generator_limited_by_schedule") : key) +
             "), not the server";
    case result::CapacityLimit::kServer:
      return key.empty() ? "the search recorded no reason for the break" : "broke first: " + key;
    case result::CapacityLimit::kInterrupted:
    case result::CapacityLimit::kFailed:
      return "the search stopped before a step broke: " + (s.detail.empty() ? describeLimit(s.limit) : s.detail);
  }
  return "";
}

// "axis_pressure{axis=node} at 900 nodes: 0.750", or why there is none.
std::string pressureText(const result::CapacitySearch& s) {
  if (!s.held) return "no axis pressure: no step held";
  std::vector<metrics::Figure> at = result::pressureAtHeld(s);
  std::string where = " at " + formatKnobValue(*s.held, s.unit);
  if (at.empty()) return "no " + pressureKey(s.axis) + where + ": the step's figures have none";
  std::string out;
  for (const metrics::Figure& f : at)
    out += (out.empty() ? "" : ", ") + figureKey(f) + where + ": " + formatFigureValue(f);
  return out;
}

// Escaped for HTML, with a break opportunity after the characters keys and paths are
// made of, so a long key wraps where a reader expects instead of widening its column.
std::string breakable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    out += svg::escape(text.substr(i, 1));
    bool digitNext = i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]));
    // Not inside a number: 0.750 and 12,000 stay whole.
    if ((c == '.' || c == ',' || c == '/' || c == '{' || c == ';') && !digitNext) out += "<wbr>";
  }
  return out;
}

std::string orUnrecorded(const std::string& v, const std::string& what) {
  return v.empty() ? what + " not recorded" : v;
}

}  // namespace

std::string measuredOnLine(const result::CapacityIndex& idx) {
  if (!idx.projection.is_null()) {
    // A projection: what it assumed and how far its model was from live runs.
    const auto& p = idx.projection;
    std::string s = "projected by cpscale's model (virtual time), calibrated on " +
                    p.value("calibrationMachine", std::string("a machine not recorded")) + " (" +
                    p.value("calibrationMeasuredAt", std::string("date not recorded")) + ", " +
                    p.value("calibration", std::string("?")) + "), Kubernetes " +
                    orUnrecorded(idx.kubernetesVersion, "version") + ", etcd " +
                    orUnrecorded(idx.etcdVersion, "version");
    if (auto c = p.find("coresPerMember"); c != p.end() && c->is_number())
      s += "; each kube-apiserver and each etcd on " + formatGrouped(c->get<double>()) +
           " cores of its own, the load's clients off the plane";
    if (auto e = p.find("maxValidationError"); e != p.end() && e->is_number())
      s += "; the model's error against live runs on the calibration's machine up to " +
           formatValue(e->get<double>(), "ratio");
    else
      s += "; the model's error against live runs was not measured";
    return s + "; cpscale " + orUnrecorded(idx.cpscaleVersion, "version") + ", " + orUnrecorded(idx.measuredAt, "date");
  }
  std::string machine = idx.machine;
  if (machine.empty() && !idx.host.empty())
    machine = idx.host + (idx.cpus ? " (" + std::to_string(idx.cpus) + " CPUs)" : "");
  if (machine.empty() && idx.cpus) machine = std::to_string(idx.cpus) + " CPUs";
  return "measured on " + (machine.empty() ? std::string("a machine the index did not record") : machine) +
         ", Kubernetes " + orUnrecorded(idx.kubernetesVersion, "version") + ", etcd " +
         orUnrecorded(idx.etcdVersion, "version") + ", cpscale " + orUnrecorded(idx.cpscaleVersion, "version") + ", " +
         orUnrecorded(idx.measuredAt, "date");
}

std::vector<std::string> indexRecipes(const result::CapacityIndex& idx) {
  std::vector<std::string> out;
  for (const result::CapacitySearch& s : idx.searches)
    if (std::find(out.begin(), out.end(), s.profile) == out.end()) out.push_back(s.profile);
  return out;
}

std::string renderCapacityIndexMarkdown(const result::CapacityIndex& idx) {
  const std::size_t W = kSummaryColumns;
  std::string out = std::string(idx.projection.is_null() ? "# Capacity index" : "# Capacity index (projected)") +
                    "\n\n" + wrapText(measuredOnLine(idx), W, "") + "\n";
  if (idx.searches.empty()) return out + "The index holds no search.\n";
  out += wrapText(
             "The largest load each recipe held along each axis, one knob stepped at a time; under the table, "
             "numbered, what broke first, the axis pressure at what held and each search's result.",
             W, "") +
         "\n";
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  std::size_t n = 0;
  for (const std::string& recipe : indexRecipes(idx)) {
    std::vector<std::string> row{recipe};
    for (std::string_view axis : kIndexAxes) {
      std::string cell;
      for (const result::CapacitySearch* s : searchesOf(idx, recipe, axis)) {
        std::string mark = "[" + std::to_string(++n) + "]";
        cell += (cell.empty() ? "" : "; ") + capacityResultText(*s) + " " + mark;
        std::string link = s->resultFile.empty() ? "no result file was recorded"
                                                 : "result: [" + s->resultFile + "](" + s->resultFile + ")";
        notes += wrapText("- " + mark + " " + recipe + ", " + std::string(axis) + " axis, " + s->knob + ": " +
                              brokeFirstText(*s) + "; " + pressureText(*s) + "; " + link,
                          W, "  ");
      }
      row.push_back(cell.empty() ? "not searched" : cell);
    }
    rows.push_back(std::move(row));
  }
  out += markdownTable({"recipe", "node", "churn", "state"}, rows, {}, W);
  return out + "\n" + notes;
}

std::string renderCapacityIndexHtml(const result::CapacityIndex& idx) {
  using svg::escape;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src "
         "data:\">\n"
      << "<title>cpscale: capacity index</title>\n<style>" << reportStyle()
      << "table.capacity-index tbody th,table.searches td:first-child{white-space:nowrap}\n"
         "table.searches td.detail{min-width:16em}\n.held{font-size:16px;font-weight:600}\n"
         "td.limit-generator .held,td.limit-interrupted .held,td.limit-failed .held{color:var(--warn)}\n"
         "td.none-held .held{color:var(--bad)}\n</style>\n</head>\n<body>\n<main>\n";
  out << "<header>\n<h1>Capacity index</h1>\n<p class=\"sub\" id=\"measured-on\">" << escape(measuredOnLine(idx))
      << "</p>\n</header>\n";
  out << "<section id=\"capacity-index\">\n<h2>Largest load held, per recipe and axis</h2>\n<p class=\"lede\">One knob "
         "stepped at a time on one plane, each step held for a steady window and judged by the search's gates; a "
         "generator-limited result is a lower bound, not a capacity.</p>\n";
  if (idx.searches.empty()) {
    out << "<p class=\"note\">The index holds no search.</p>\n</section>\n";
  } else {
    out << "<table class=\"capacity-index\"><thead><tr><th>recipe</th>";
    for (std::string_view axis : kIndexAxes) out << "<th>" << axis << "</th>";
    out << "</tr></thead><tbody>\n";
    for (const std::string& recipe : indexRecipes(idx)) {
      out << "<tr><th>" << escape(recipe) << "</th>";
      for (std::string_view axis : kIndexAxes) {
        std::vector<const result::CapacitySearch*> found = searchesOf(idx, recipe, axis);
        if (found.empty()) {
          out << "<td class=\"muted\">not searched</td>";
          continue;
        }
        out << "<td class=\"limit-" << toString(found.front()->limit) << (found.front()->held ? "" : " none-held")
            << "\">";
        for (const result::CapacitySearch* s : found) {
          out << "<div class=\"held\">" << escape(capacityResultText(*s)) << "</div><div class=\"why\">"
              << breakable(brokeFirstText(*s)) << "</div><div class=\"why\">" << breakable(pressureText(*s))
              << "</div><div class=\"src\">knob <code>" << breakable(s->knob) << "</code> · ";
          if (s->resultFile.empty())
            out << "no result file was recorded";
          else
            out << "<a href=\"" << escape(s->resultFile) << "\">" << breakable(s->resultFile) << "</a>";
          out << "</div>";
        }
        out << "</td>";
      }
      out << "</tr>\n";
    }
    out << "</tbody></table>\n</section>\n";
    out << "<section id=\"searches\">\n<h2>Searches</h2>\n<table class=\"searches\"><thead><tr><th>recipe</th><th>axis"
           "</th><th>knob</th><th>scenario</th><th class=\"num\">steps</th><th>result</th><th>limit</th><th>detail</th>"
           "</tr></thead><tbody>\n";
    for (const result::CapacitySearch& s : idx.searches)
      out << "<tr><td>" << escape(s.profile) << "</td><td>" << escape(s.axis) << "</td><td><code>" << breakable(s.knob)
          << "</code></td><td>" << escape(s.scenario) << "</td><td class=\"num\">" << s.steps.size() << "</td><td>"
          << escape(capacityResultText(s)) << "</td><td title=\"" << escape(describeLimit(s.limit)) << "\">"
          << toString(s.limit) << "</td><td class=\"detail\">" << breakable(s.detail) << "</td></tr>\n";
    out << "</tbody></table>\n</section>\n";
  }
  out << "<footer>cpscale " << escape(idx.cpscaleVersion) << " · capacity index schema " << idx.schemaVersion
      << "</footer>\n</main>\n</body>\n</html>\n";
  return out.str();
}

void writeCapacityIndexOutputs(const result::CapacityIndex& idx, const std::filesystem::path& dir) {
  result::writeCapacityIndex(idx, dir / result::kCapacityIndexFile);
  result::jsonio::writeFile(dir / kCapacityIndexMarkdownFile, renderCapacityIndexMarkdown(idx));
  result::jsonio::writeFile(dir / kCapacityIndexHtmlFile, renderCapacityIndexHtml(idx));
}

}  // namespace cpscale::reports
