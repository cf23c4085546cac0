#include "reports/summary.h"

#include <algorithm>
#include <sstream>

#include "reports/format.h"

namespace cpscale::reports {

using metrics::Figure;

namespace {

// Display width of UTF-8 text: one column per code point ("µs" is two bytes, one
// column per character), which is what keeps the raw table aligned.
std::size_t width(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string escapeCell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string targetLine(const RunResult& r) {
  std::string s = r.target.kind == "local" ? "local plane" : "cluster";
  if (!r.target.context.empty()) s += " (context " + r.target.context + ")";
  if (!r.target.server.empty()) s += ", " + r.target.server;
  std::string versions;
  if (!r.target.kubernetesVersion.empty()) versions += "kubernetes " + r.target.kubernetesVersion;
  if (!r.target.etcdVersion.empty()) versions += (versions.empty() ? "" : ", ") + ("etcd " + r.target.etcdVersion);
  if (!versions.empty()) s += " (" + versions + ")";
  return s;
}

std::vector<std::string> figureRow(const Figure& f) {
  return {figureKey(f), formatFigureValue(f), std::string(metrics::toString(f.source))};
}

}  // namespace

std::string markdownTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                          const std::vector<bool>& rightAligned) {
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
  for (std::size_t i = 0; i < w.size(); ++i) out += right(i) ? " " + std::string(w[i] - 1, '-') + ": |" : " " + std::string(w[i], '-') + " |";
  out += "\n";
  for (std::size_t i = 1; i < cells.size(); ++i) line(cells[i]);
  return out;
}

std::string formatGateMeasured(const RunResult& r, const scenario::GateResult& g) {
  if (!g.measured) return "unavailable";
  return formatValue(*g.measured, unitOf(r.figures, g.gate.figure));
}

std::string formatGateThreshold(const scenario::GateResult& g) {
  std::string t = g.gate.thresholdText.empty() ? formatValue(g.gate.threshold, "") : g.gate.thresholdText;
  return std::string(scenario::toString(g.gate.op)) + " " + t;
}

std::string renderSummary(const RunResult& r) {
  std::ostringstream out;
  out << "# " << r.scenario.name << " on " << r.profile.name << " (" << (r.target.kind == "local" ? "local plane" : "cluster")
      << "): " << toString(r.status) << "\n\n";
  out << "- run: " << r.runId << "\n";
  out << "- scenario: " << r.scenario.name;
  if (!r.scenario.sourceFile.empty()) out << " (" << r.scenario.sourceFile << ")";
  out << "\n";
  out << "- profile: " << r.profile.name
      << (r.profile.applied ? " (applied to the local plane)" : " (recorded only: the target was not set up from it)")
      << "\n";
  out << "- target: " << targetLine(r) << "\n";
  out << "- status: " << toString(r.status);
  if (!r.statusDetail.empty()) out << " (" << r.statusDetail << ")";
  out << "\n";
  out << "- measured: " << formatElapsed(r.measuredSeconds);
  if (!r.environment.startedAt.empty()) out << ", " << r.environment.startedAt << " to " << r.environment.endedAt;
  out << "\n\n";

  out << "## Headline\n\n";
  std::vector<std::vector<std::string>> rows;
  for (Axis axis : kAllAxes) {
    AxisFigures af = axisFigures(r.figures, axis);
    std::string label(toString(axis));
    if (af.figures.empty()) rows.push_back({label, "(no figures for this axis in the result)", "", ""});
    for (const Figure* f : af.figures) {
      std::vector<std::string> row = figureRow(*f);
      row.insert(row.begin(), label);
      rows.push_back(std::move(row));
      label.clear();  // the axis names its group once, as a section heading would
    }
    if (af.omitted) rows.push_back({"", "... " + std::to_string(af.omitted) + " more under All figures", "", ""});
  }
  out << markdownTable({"axis", "figure", "value", "source"}, rows, {false, false, false, false}) << "\n";

  out << "## Gates\n\n";
  if (r.gates.empty()) {
    out << "No gates were set.\n\n";
  } else {
    std::vector<std::vector<std::string>> gates;
    std::size_t passed = 0;
    for (const auto& g : r.gates) {
      passed += g.passed;
      gates.push_back({g.gate.text, formatGateMeasured(r, g), formatGateThreshold(g), g.passed ? "pass" : "FAIL", g.reason});
    }
    out << markdownTable({"gate", "measured", "threshold", "verdict", "reason"}, gates, {false, true, false, false, false})
        << "\n"
        << passed << " of " << r.gates.size() << " gates passed.\n\n";
  }

  out << "## Generator health\n\n";
  std::vector<const Figure*> health = generatorHealthFigures(r.figures);
  if (health.empty()) {
    out << "The result has no generator health figures.\n\n";
  } else {
    std::vector<std::vector<std::string>> hrows;
    for (const Figure* f : health) {
      hrows.push_back(figureRow(*f));
    }
    out << markdownTable({"figure", "value", "source"}, hrows) << "\n";
    for (const Figure* f : health)
      if (f->name == "generator_limited" && f->value && *f->value != 0) {
        const Figure* bySchedule = metrics::findFigure(r.figures, "generator_limited_by_schedule");
        bool schedule = bySchedule && bySchedule->value && *bySchedule->value != 0;
        out << "The generator, not the server, set the pace ("
            << (schedule ? "it fell behind its schedule" : "the in-flight bound held requests back")
            << "): latency and rates here describe cpscale's limits as much as the control plane's.\n\n";
      }
  }

  out << "## All figures (" << r.figures.size() << ")\n\n";
  std::vector<std::vector<std::string>> all;
  for (const Figure& f : r.figures) {
    all.push_back(figureRow(f));
  }
  out << markdownTable({"figure", "value", "source"}, all);
  return out.str();
}

}  // namespace cpscale::reports
