#include "reports/summary.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "reports/capacity_report.h"
#include "reports/format.h"
#include "reports/headline.h"

namespace cpscale::reports {

using metrics::Figure;

namespace {

std::size_t width(std::string_view s) { return displayWidth(s); }

// The code points of UTF-8 text, so a line is never broken inside a character.
std::vector<std::string> codePoints(std::string_view s) {
  std::vector<std::string> out;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80 && !out.empty())
      out.back() += c;
    else
      out.emplace_back(1, c);
  }
  return out;
}

std::string join(const std::vector<std::string>& cps, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to; ++i) out += cps[i];
  return out;
}

// A cell cut into pieces of at most `w` columns; continuation pieces are indented by
// two so the eye sees they belong to the row above.
std::vector<std::string> breakCell(const std::string& cell, std::size_t w) {
  if (width(cell) <= w) return {cell};
  std::vector<std::string> cps = codePoints(cell);
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < cps.size()) {
    std::string indent = out.empty() ? "" : "  ";
    std::size_t limit = w > indent.size() + 4 ? w - indent.size() : w;
    while (pos < cps.size() && !out.empty() && cps[pos] == " ") ++pos;
    if (cps.size() - pos <= limit) {
      out.push_back(indent + join(cps, pos, cps.size()));
      break;
    }
    std::size_t cut = 0;
    // Labels on a line of their own read better than labels split anywhere: break
    // before "{" when what follows then fits on one continuation line.
    if (out.empty())
      for (std::size_t i = pos + 1; i <= pos + limit && i < cps.size(); ++i)
        if (cps[i] == "{" && cps.size() - i <= w - 2) {
          out.push_back(join(cps, pos, i));
          pos = i;
          break;
        }
    if (!out.empty() && pos > 0 && cps[pos] == "{") {
      if (cps.size() - pos <= w - 2) {
        out.push_back("  " + join(cps, pos, cps.size()));
        break;
      }
    }
    for (std::size_t i = pos + 1; i <= pos + limit; ++i) {
      const std::string& prev = cps[i - 1];
      if (prev == "," || prev == " " || prev == ";" || (i < cps.size() && cps[i] == "{")) cut = i;
    }
    if (cut == 0) cut = pos + limit;
    std::string piece = join(cps, pos, cut);
    while (!piece.empty() && piece.back() == ' ') piece.pop_back();
    out.push_back(indent + piece);
    pos = cut;
  }
  return out;
}

std::string escapeCell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string targetLine(const result::RunResult& r) {
  std::string s = result::targetKindText(r.target.kind);
  if (!r.target.context.empty()) s += " (context " + r.target.context + ")";
  if (!r.target.server.empty()) s += ", " + r.target.server;
  std::string versions;
  if (!r.target.kubernetesVersion.empty()) versions += "kubernetes " + r.target.kubernetesVersion;
  if (!r.target.etcdVersion.empty()) versions += (versions.empty() ? "" : ", ") + ("etcd " + r.target.etcdVersion);
  if (!versions.empty()) s += " (" + versions + ")";
  return s;
}

// Reasons of unavailable figures, numbered under their table: a reason inline would
// make the value column as wide as the longest sentence.
struct Notes : NumberedNotes {
  Notes() { prefix = "unavailable: "; }
};

std::string valueCell(const Figure& f, Notes& notes, std::span<const Figure> all = {}) {
  if (!f.available()) return "unavailable " + notes.mark(f.unavailableReason);
  std::string v = formatFigureValue(f);
  std::string detail = bytesPerObjectDetail(all, f);
  return detail.empty() ? v : v + " " + detail;
}

std::vector<std::string> figureRow(const Figure& f, std::string key, Notes& notes, std::span<const Figure> all = {}) {
  return {std::move(key), valueCell(f, notes, all), std::string(metrics::toString(f.window)),
          std::string(metrics::toString(f.source))};
}

const std::vector<std::string> kFigureHeader{"figure", "value", "window", "source"};

// A headline table: short keys (the group only where a resource name is ambiguous),
// each row with its window and source, the reasons of unavailable rows underneath.
std::string headlineTable(const result::RunResult& r, const std::vector<const Figure*>& figures, std::size_t omitted) {
  std::vector<std::string> ambiguous = ambiguousResourceNames(r.figures);
  // Context labels with one value in every row that has them (the replica the counts
  // come from, the heap measure, the workload, the controller process) are said once
  // under the table.
  std::vector<metrics::Label> common;
  for (const char* key : {"apiserver", "heap", "workload", "component"}) {
    std::optional<std::string> value;
    bool same = true;
    for (const Figure* f : figures)
      for (const auto& l : f->labels)
        if (l.name == key) {
          if (value && *value != l.value) same = false;
          value = l.value;
        }
    if (value && same) common.push_back({key, *value});
  }
  Notes notes;
  std::vector<std::vector<std::string>> rows;
  for (const Figure* original : figures) {
    Figure copy;
    copy.name = original->name;
    std::erase_if(copy.labels = original->labels, [&](const metrics::Label& l) {
      return std::any_of(common.begin(), common.end(), [&](const metrics::Label& c) { return c.name == l.name; });
    });
    Figure* f = &copy;
    f->window = original->window;
    std::string resource(metrics::labelValue(f->labels, "resource"));
    if (std::string kind(metrics::labelValue(f->labels, "kind")); resource.empty() && !kind.empty())
      resource = kind.substr(kind.rfind('/') + 1);
    bool keepGroup = std::find(ambiguous.begin(), ambiguous.end(), resource) != ambiguous.end();
    rows.push_back(figureRow(*original, shortKey(*f, keepGroup), notes, r.figures));
  }
  if (omitted) rows.push_back({"... " + std::to_string(omitted) + " more under All figures", "", "", ""});
  std::string under;
  if (!common.empty()) {
    std::string list;
    for (const auto& c : common) list += (list.empty() ? "" : ", ") + c.name + "=" + c.value;
    under =
        "\n" + wrapText("Left out of the keys above, the same wherever present: " + list + ".", kSummaryColumns, "");
  }
  return markdownTable(kFigureHeader, rows, {}, kSummaryColumns) + under + notes.render();
}

std::string replicaTable(const result::RunResult& r, const std::vector<std::string>& replicas) {
  auto columns = replicaColumns(r, replicas);
  std::vector<std::string> header{"apiserver"};
  std::vector<bool> right{false};
  for (const auto& [name, title] : columns) header.push_back(title), right.push_back(true);
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : replicas) {
    std::vector<std::string> row{a};
    for (const auto& [name, title] : columns) {
      const Figure* f = replicaFigure(r, name, a);
      row.push_back(!f ? "-" : f->available() ? formatFigureValue(*f) : "unavailable");
    }
    rows.push_back(std::move(row));
  }
  return markdownTable(header, rows, right, kSummaryColumns);
}

std::string workqueueTable(const ControllersHeadline& c) {
  Notes notes;
  auto cell = [&](const Figure* f) -> std::string {
    if (!f) return "-";
    return f->available() ? formatFigureValue(*f) : "unavailable " + notes.mark(f->unavailableReason);
  };
  std::vector<std::vector<std::string>> rows;
  for (const WorkqueueRow& q : c.workqueues) rows.push_back({q.queue, q.component, cell(q.depthMax), cell(q.adds)});
  if (c.omittedWorkqueues)
    rows.push_back({"... " + std::to_string(c.omittedWorkqueues) + " more under All figures", "", "", ""});
  return markdownTable({"workqueue", "component", "depth max", "adds"}, rows, {false, false, true, true},
                       kSummaryColumns) +
         notes.render();
}

std::string workloadsLine(const result::RunResult& r) {
  std::string s;
  for (const auto& w : r.workloads) {
    if (w.kind == "cleanup") continue;
    s += (s.empty() ? "" : ", ") + w.kind + (w.name.empty() || w.name == w.kind ? "" : " " + w.name);
  }
  return s;
}

// A capacity run: what was stepped, what it held, why it stopped, and the steps in
// order of value with the figures the search is read by.
std::string capacitySection(const result::CapacitySearch& s) {
  const std::size_t W = kSummaryColumns;
  std::string out = "## Capacity\n\n";
  auto bullet = [&](const std::string& text) { out += wrapText("- " + text, W, "  "); };
  std::vector<const result::CapacityStep*> steps = stepsByValue(s);
  std::string knob = s.knob + (s.unit.empty() ? "" : " (" + s.unit + ")") + " on the " + s.axis + " axis";
  if (!steps.empty()) {
    std::size_t bisected = bisectionSteps(s);
    knob += steps.size() == 1
                ? ", 1 step at " + formatKnobValue(steps.front()->value, s.unit)
                : ", " + std::to_string(steps.size()) + " steps from " + formatKnobValue(steps.front()->value, s.unit) +
                      " to " + formatKnobValue(steps.back()->value, s.unit);
    if (bisected) knob += " (" + std::to_string(bisected) + " by bisection)";
  }
  bullet("knob: " + knob);
  bullet("result: " + capacityResultText(s) +
         (s.held && s.limit == result::CapacityLimit::kServer ? ", the largest value that held" : ""));
  bullet("limit: " + std::string(toString(s.limit)) + " (" + describeLimit(s.limit) + ")");
  if (!s.brokeBy.empty() && s.detail.find(s.brokeBy) == std::string::npos) bullet("broke by: " + s.brokeBy);
  if (!s.detail.empty()) bullet("detail: " + s.detail);
  if (s.held)
    bullet("the headline, gates and figures below are those of the last step that held (" +
           formatKnobValue(*s.held, s.unit) + ")");
  out += "\n";
  if (steps.empty()) return out + "No step was measured.\n\n";

  out += wrapText(
             "Each step held the knob at its value for a steady window; rows in order of value, each with "
             "that window's figures.",
             W, "") +
         "\n";
  NumberedNotes notes;
  auto cell = [&](const Figure* f, std::string_view key) -> std::string {
    if (!f) return "n/a " + notes.mark("n/a: " + notInStep(key));
    if (!f->available()) return "n/a " + notes.mark("n/a: " + f->unavailableReason);
    return formatFigureValue(*f);
  };
  std::vector<std::vector<std::string>> rows;
  for (const result::CapacityStep* st : steps) {
    StepFigures f = stepFigures(*st, s.axis);
    std::string held(stepHeldText(*st));
    if (!st->held)
      held += " " + notes.mark("broke by: " +
                               (st->brokeBy.empty() ? "the step did not hold and recorded no reason" : st->brokeBy));
    std::string p99 = cell(f.clientP99, kStepClientP99Key);
    if (f.clientP99 && f.clientP99->available()) p99 += " " + verbResource(*f.clientP99);
    rows.push_back({formatKnobValue(st->value, ""), held, cell(f.pressure, pressureKey(s.axis)),
                    cell(f.writeQps, kStepWriteQpsKey), cell(f.leaseShare, kStepLeaseShareKey), p99,
                    cell(f.heap, kStepHeapKey)});
  }
  // Short headers keep the table inside a terminal; the line under it names the figures.
  out += markdownTable(
      {s.unit.empty() ? "value" : s.unit, "held / broke by", "pressure", "writes", "leases", "client p99", "heap"},
      rows, {true, false, true, true, true, false, true}, W);
  out += "\n" + wrapText("pressure: " + pressureKey(s.axis) + "; writes: " + std::string(kStepWriteQpsKey) +
                             "; leases: " + std::string(kStepLeaseShareKey) + "; client p99: the worst " +
                             std::string(kStepClientP99Key) +
                             " of any verb and resource; heap: " + std::string(kStepHeapKey) + ".",
                         W, "");
  return out + notes.render() + "\n";
}

}  // namespace

std::size_t displayWidth(std::string_view s) {
  // One column per code point ("µs" is two bytes, one column per character), which is
  // what keeps the raw table aligned.
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string wrapText(std::string_view text, std::size_t w, std::string_view indent) {
  std::string out, line;
  std::istringstream words{std::string(text)};
  // Leading spaces (a nested list item) belong to the first line.
  std::size_t lead = text.find_first_not_of(' ');
  line = std::string(text.substr(0, lead == std::string_view::npos ? 0 : lead));
  bool empty = true;
  for (std::string word; words >> word;) {
    if (!empty && width(line) + 1 + width(word) > w) {
      out += line + "\n";
      line = std::string(indent) + std::string(text.substr(0, lead == std::string_view::npos ? 0 : lead));
      empty = true;
    }
    line += (empty ? "" : " ") + word;
    empty = false;
  }
  return out + line + "\n";
}

std::string markdownTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& rightAligned, std::size_t maxWidth) {
  std::vector<std::vector<std::string>> cells;
  cells.push_back({});
  for (const auto& h : header) cells.back().push_back(escapeCell(h));
  for (const auto& row : rows) {
    cells.push_back({});
    for (std::size_t i = 0; i < header.size(); ++i) cells.back().push_back(i < row.size() ? escapeCell(row[i]) : "");
  }
  std::vector<std::size_t> w(header.size(), 3);
  for (const auto& row : cells)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  auto right = [&](std::size_t i) { return i < rightAligned.size() && rightAligned[i]; };
  if (maxWidth > 0) {
    // Narrow the widest text column one step at a time: the columns end up as even as
    // the content allows, and numbers are never broken.
    constexpr std::size_t kNarrowest = 12;
    std::size_t total = 1;
    for (std::size_t x : w) total += x + 3;
    while (total > maxWidth) {
      std::size_t widest = w.size();
      for (std::size_t i = 0; i < w.size(); ++i)
        if (!right(i) && w[i] > kNarrowest && (widest == w.size() || w[i] > w[widest])) widest = i;
      if (widest == w.size()) break;
      --w[widest];
      --total;
    }
    std::vector<std::vector<std::string>> broken;
    for (const auto& row : cells) {
      std::vector<std::vector<std::string>> pieces;
      std::size_t lines = 1;
      for (std::size_t i = 0; i < row.size(); ++i) {
        pieces.push_back(right(i) ? std::vector<std::string>{row[i]} : breakCell(row[i], w[i]));
        lines = std::max(lines, pieces.back().size());
      }
      for (std::size_t l = 0; l < lines; ++l) {
        broken.push_back({});
        for (auto& p : pieces) broken.back().push_back(l < p.size() ? p[l] : "");
      }
      if (&row == &cells.front()) {
        // A broken header would put its tail among the rows: keep the header one line.
        broken.resize(1);
        for (std::size_t i = 0; i < row.size(); ++i) broken[0][i] = pieces[i][0];
      }
    }
    cells = std::move(broken);
    for (std::size_t i = 0; i < w.size(); ++i) {
      w[i] = 3;
      for (const auto& row : cells) w[i] = std::max(w[i], width(row[i]));
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& row) {
    out += "|";
    for (std::size_t i = 0; i < row.size(); ++i) {
      std::string pad(w[i] - width(row[i]), ' ');
      out += " " + (right(i) ? pad + row[i] : row[i] + pad) + " |";
    }
    out += "\n";
  };
  line(cells[0]);
  out += "|";
  for (std::size_t i = 0; i < w.size(); ++i)
    out += right(i) ? " " + std::string(w[i] - 1, '-') + ": |" : " " + std::string(w[i], '-') + " |";
  out += "\n";
  for (std::size_t i = 1; i < cells.size(); ++i) line(cells[i]);
  return out;
}

std::string formatGateMeasured(const result::RunResult& r, const metrics::GateResult& g) {
  if (!g.measured) return "unavailable";
  return formatValue(*g.measured, unitOf(r.figures, g.gate.figure));
}

std::string formatGateThreshold(const metrics::GateResult& g) {
  std::string t = g.gate.thresholdText.empty() ? formatValue(g.gate.threshold, "") : g.gate.thresholdText;
  return std::string(metrics::toString(g.gate.op)) + " " + t;
}

// A simulated run: which calibration, its measured error, and the sampling.
std::string modelLine(const result::RunResult& r) {
  if (r.model.is_null()) return "";
  const auto& m = r.model;
  std::string s = "model: calibrated on " + m.value("calibrationMachine", std::string("?")) + " (" +
                  m.value("calibrationMeasuredAt", std::string("?")) + ", " + m.value("calibration", std::string("?")) +
                  ")";
  if (auto e = m.find("maxValidationError"); e != m.end() && e->is_number())
    s += "; measured error against live runs up to " + formatValue(e->get<double>(), "ratio");
  else
    s += "; its error against live runs was not measured";
  if (auto h = m.find("host"); h != m.end() && h->is_object()) {
    if (auto c = h->find("sharedCores"); c != h->end() && c->is_number())
      s += "; cores: " + formatGrouped(c->get<double>()) + " shared by every member and the load generator";
    else if (h->contains("apiserverCores") && h->contains("etcdCores"))
      s += "; cores: " + formatGrouped(h->value("apiserverCores", 0.0)) + " per kube-apiserver, " +
           formatGrouped(h->value("etcdCores", 0.0)) + " per etcd";
    else if (auto p = h->find("placement"); p != h->end() && p->is_array()) {
      // A pinned calibration's host: each set of CPUs and who shared it.
      std::string sets;
      for (const auto& set : *p) {
        std::string roles;
        for (const auto& role : set.value("roles", nlohmann::json::array()))
          roles += (roles.empty() ? "" : ", ") + role.get<std::string>();
        sets += (sets.empty() ? "" : "; ") + roles + " on " + formatGrouped(set.value("cores", 0.0)) + " core" +
                (set.value("cores", 0.0) == 1 ? "" : "s") + " (CPU " + set.value("cpus", std::string("?")) + ")";
      }
      s += "; cores as the calibration pinned them: " + sets;
    }
  }
  if (m.value("generator", std::string()) == "off-plane")
    s += "; load generator off the plane (not modelled: never generator-limited)";
  else if (m.value("generator", std::string()) == "host")
    s += "; load generator on the modelled host (its CPU and in-flight bound count)";
  if (double w = m.value("weight", 1.0); w > 1) s += "; sampled: each simulated actor stands for " + formatGrouped(w);
  return s;
}

std::string renderTerminalSummary(const result::RunResult& r) {
  std::string summary = renderSummary(r);
  if (auto all = summary.find("\n## All figures"); all != std::string::npos) summary.resize(all + 1);
  return summary;
}

std::string renderSummary(const result::RunResult& r) {
  std::ostringstream out;
  const std::size_t W = kSummaryColumns;
  out << "# " << r.scenario.name << " on " << r.profile.name << " (" << result::targetKindText(r.target.kind)
      << "): " << toString(r.status) << "\n\n";
  auto bullet = [&](const std::string& text) { out << wrapText("- " + text, W, "  "); };
  bullet("run: " + r.runId);
  if (std::string s = result::shardLine(r); !s.empty()) bullet(s);
  bullet("scenario: " + r.scenario.name + (r.scenario.sourceFile.empty() ? "" : " (" + r.scenario.sourceFile + ")"));
  bullet("profile: " + r.profile.name +
         (r.target.kind == "model" ? " (the modelled plane's shape: replicas, etcd split)"
          : r.profile.applied      ? " (applied to the local plane)"
                                   : " (recorded only: the target was not set up from it)"));
  bullet("target: " + targetLine(r));
  if (std::string m = modelLine(r); !m.empty()) bullet(m);
  bullet("status: " + std::string(toString(r.status)) + (r.statusDetail.empty() ? "" : " (" + r.statusDetail + ")"));
  if (std::string w = workloadsLine(r); !w.empty()) bullet("workloads: " + w);
  bullet("measured: " + formatElapsed(r.measuredSeconds) +
         (r.environment.startedAt.empty() ? "" : ", " + r.environment.startedAt + " to " + r.environment.endedAt));
  for (const std::string& line : phaseLines(r)) {
    bool nested = line.starts_with("  ");
    out << wrapText(nested ? line : "- " + line, W, nested ? "    " : "  ");
  }
  if (!r.incidents.empty()) {
    bullet("incidents: " + std::to_string(r.incidents.size()) + " (figures after them may describe a smaller plane)");
    for (const result::Incident& i : r.incidents) out << wrapText("  - " + incidentLine(i), W, "    ");
  } else if (!r.phases.empty()) {
    bullet("incidents: none");
  }
  out << "\n";
  if (r.capacity) out << capacitySection(*r.capacity);

  Headline h = headline(r);
  out << "## Headline\n\n";
  const result::Phase* steady = result::findPhase(r, "steady");
  out << wrapText("Steady-window figures" + (steady ? ", " + formatSpan(*steady) + "," : std::string()) +
                      " of the axes whose workloads ran; setup figures under Setup, everything under All figures.",
                  W, "");
  out << "\n";
  if (!h.writes.empty()) out << "### All writes\n\n" << headlineTable(r, h.writes, 0) << "\n";
  for (const AxisHeadline& a : h.axes) {
    std::string what(describe(a.axis));
    if (!what.empty()) what[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(what[0])));
    out << "### " << toString(a.axis) << "\n\n" << wrapText(what + ".", W, "") << "\n";
    if (a.figures.figures.empty())
      out << "No figures for this axis in the result.\n\n";
    else
      out << headlineTable(r, a.figures.figures, a.figures.omitted) << "\n";
  }
  if (!h.replicas.empty())
    out << "### Load per kube-apiserver replica (steady)\n\n" << replicaTable(r, h.replicas) << "\n";
  if (!h.controllers.empty()) {
    out << "### Controllers\n\n"
        << wrapText(
               "How kube-controller-manager and kube-scheduler kept up with the load: their workqueues, the node "
               "lifecycle controller and the scheduling queue.",
               W, "")
        << "\n";
    if (!h.controllers.figures.empty()) out << headlineTable(r, h.controllers.figures, 0) << "\n";
    if (!h.controllers.workqueues.empty())
      out << wrapText("The workqueues that got deepest, then took the most items (steady):", W, "") << "\n"
          << workqueueTable(h.controllers) << "\n";
  }
  if (!h.setup.figures.empty()) {
    const result::Phase* setup = result::findPhase(r, "setup");
    out << "### Setup\n\n"
        << wrapText(
               "Registration, population ramps and the bytes-per-object fit (with its confidence interval and r²)" +
                   (setup ? ", " + formatSpan(*setup) : std::string()) + ": recorded, not the headline.",
               W, "")
        << "\n"
        << headlineTable(r, h.setup.figures, h.setup.omitted) << "\n";
  }

  out << "## Gates\n\n";
  if (r.gates.empty()) {
    out << "No gates were set.\n\n";
  } else {
    std::vector<std::vector<std::string>> gates;
    std::size_t passed = 0;
    std::string reasons;  // numbered under the table: a sentence would widen it past W
    std::size_t n = 0;
    for (const auto& g : r.gates) {
      passed += g.passed;
      std::string mark;
      if (!g.reason.empty()) {
        mark = "[" + std::to_string(++n) + "]";
        reasons += wrapText("- " + mark + " " + g.reason, W, "  ");
      }
      gates.push_back(
          {g.gate.text, formatGateMeasured(r, g), formatGateThreshold(g), g.passed ? "pass" : "FAIL", mark});
    }
    out << markdownTable({"gate", "measured", "threshold", "verdict", "why"}, gates, {false, true, false, false, false},
                         W)
        << (reasons.empty() ? "" : "\n" + reasons) << "\n"
        << passed << " of " << r.gates.size() << " gates passed.\n\n";
  }

  out << "## Generator health\n\n";
  std::vector<const Figure*> health = generatorHealthFigures(r.figures);
  if (health.empty()) {
    out << "The result has no generator health figures.\n\n";
  } else {
    Notes notes;
    std::vector<std::vector<std::string>> hrows;
    for (const Figure* f : health) hrows.push_back(figureRow(*f, figureKey(*f), notes));
    out << markdownTable(kFigureHeader, hrows, {}, W) << notes.render() << "\n";
    bool limited = false, bySchedule = false;
    for (const Figure* f : health) {
      if (!f->value || *f->value == 0) continue;
      if (f->name == "generator_limited") limited = true;
      if (f->name == "generator_limited_by_schedule" ||
          (f->name == "generator_limited" && metrics::labelValue(f->labels, "limit") == "schedule"))
        bySchedule = true;
    }
    if (limited)
      out << wrapText(std::string("The generator, not the server, set the pace (") +
                          (bySchedule ? "it fell behind its schedule" : "the in-flight bound held requests back") +
                          "): latency and rates here describe cpscale's limits as much as the control plane's.",
                      W, "")
          << "\n";
  }

  out << "## All figures (" << r.figures.size() << ")\n\n";
  out << wrapText("Grouped by name, each with the window it describes; keys are exact, as gates name them.", W, "")
      << "\n";
  Notes notes;
  std::vector<std::vector<std::string>> all;
  for (const Figure* f : groupedFigures(r.figures)) all.push_back(figureRow(*f, figureKey(*f), notes));
  out << markdownTable(kFigureHeader, all, {}, W) << notes.render();
  return out.str();
}

std::string NumberedNotes::mark(const std::string& reason) {
  auto it = std::find(reasons.begin(), reasons.end(), reason);
  if (it == reasons.end()) it = reasons.insert(reasons.end(), reason);
  return "[" + std::to_string(it - reasons.begin() + 1) + "]";
}

std::string NumberedNotes::render() const {
  std::string out;
  for (std::size_t i = 0; i < reasons.size(); ++i)
    out += wrapText("- [" + std::to_string(i + 1) + "] " + prefix + reasons[i], kSummaryColumns, "  ");
  // A blank line first: a line right under a table would be read as one more row.
  return out.empty() ? out : "\n" + out;
}

}  // namespace cpscale::reports
