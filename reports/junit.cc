#include "reports/junit.h"

#include <cstdio>
#include <sstream>

#include "reports/summary.h"

namespace cpscale::reports {

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

std::string renderJunit(const result::RunResult& r) {
  std::size_t failures = 0;
  for (const auto& g : r.gates) failures += !g.passed;
  bool completed = r.status == result::RunStatus::kCompleted;
  failures += !completed;
  std::size_t tests = r.gates.size() + 1;
  std::string suite = "cpscale." + r.scenario.name;
  std::string cls = xmlEscape(suite);

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"cpscale\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\"0\" time=\""
      << seconds(r.measuredSeconds) << "\">\n";
  out << "  <testsuite name=\"" << cls << "\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"0\" skipped=\"0\" time=\"" << seconds(r.measuredSeconds) << "\"";
  if (!r.environment.startedAt.empty()) out << " timestamp=\"" << xmlEscape(r.environment.startedAt) << "\"";
  if (!r.environment.host.empty()) out << " hostname=\"" << xmlEscape(r.environment.host) << "\"";
  out << ">\n";
  out << "    <properties>\n";
  auto property = [&](std::string_view name, const std::string& value) {
    out << "      <property name=\"" << name << "\" value=\"" << xmlEscape(value) << "\"/>\n";
  };
  property("runId", r.runId);
  property("scenario", r.scenario.name);
  property("profile", r.profile.name);
  property("target", r.target.kind + (r.target.server.empty() ? "" : " " + r.target.server));
  property("status", std::string(toString(r.status)));
  property("kubernetesVersion", r.target.kubernetesVersion);
  property("etcdVersion", r.target.etcdVersion);
  property("cpscaleVersion", r.environment.cpscaleVersion);
  out << "    </properties>\n";

  // Gate time is 0: a gate is judged after the run, not timed; the suite carries the
  // measured duration.
  out << "    <testcase classname=\"" << cls << "\" name=\"run completed\" time=\"" << seconds(r.measuredSeconds)
      << "\">\n";
  if (!completed) {
    std::string msg = "run " + std::string(toString(r.status)) + (r.statusDetail.empty() ? "" : ": " + r.statusDetail);
    out << "      <failure type=\"RunNotCompleted\" message=\"" << xmlEscape(msg) << "\">" << xmlEscape(msg)
        << "</failure>\n";
  }
  out << "    </testcase>\n";

  for (const auto& g : r.gates) {
    std::string measured = formatGateMeasured(r, g);
    std::string line = "measured " + measured + ", threshold " + formatGateThreshold(g) + ": " +
                       (g.passed ? "passed" : "failed") + (g.reason.empty() ? "" : " (" + g.reason + ")");
    out << "    <testcase classname=\"" << cls << ".gates\" name=\"" << xmlEscape(g.gate.text) << "\" time=\"0\">\n";
    if (!g.passed)
      out << "      <failure type=\"GateFailed\" message=\"" << xmlEscape(line) << "\">" << xmlEscape(line)
          << "</failure>\n";
    // Passed gates keep their numbers too: a CI page then shows how close each was.
    out << "      <system-out>" << xmlEscape(line) << "</system-out>\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace cpscale::reports
