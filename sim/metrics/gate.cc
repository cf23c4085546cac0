#include "sim/metrics/gate.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <set>

#include "sim/common/error.h"

namespace cpscale::metrics {

std::string_view toString(GateOp op) {
  switch (op) {
    case GateOp::kLt: return "<";
    case GateOp::kLe: return "<=";
    case GateOp::kGt: return ">";
    case GateOp::kGe: return ">=";
    case GateOp::kEq: return "==";
    case GateOp::kNe: return "!=";
  }
  return "?";
}

std::string_view toString(GateFold fold) {
  switch (fold) {
    case GateFold::kNone: return "";
    case GateFold::kMax: return "max";
    case GateFold::kMin: return "min";
    case GateFold::kSum: return "sum";
  }
  return "?";
}

namespace {

std::string trim(std::string s) {
  auto notSpace = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), notSpace));
  s.erase(std::find_if(s.rbegin(), s.rend(), notSpace).base(), s.end());
  return s;
}

std::optional<double> parseThreshold(const std::string& text) {
  if (text == "true") return 1.0;
  if (text == "false") return 0.0;
  static const std::regex re(R"(^([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z%]*)$)");
  std::smatch m;
  if (!std::regex_match(text, m, re)) return std::nullopt;
  // strtod, not std::stod: "1e999" or a 400-digit number is bad input, not an
  // exception that escapes as an outage.
  const std::string number = m[1];
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (errno == ERANGE || end != number.c_str() + number.size() || !std::isfinite(v)) return std::nullopt;
  std::string unit = m[2];
  static const std::pair<const char*, double> units[] = {
      {"", 1},     {"ns", 1e-9},    {"us", 1e-6},       {"ms", 1e-3},
      {"s", 1},    {"m", 60},       {"%", 0.01},        {"K", 1e3},
      {"M", 1e6},  {"G", 1e9},      {"KB", 1e3},        {"MB", 1e6},
      {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
      {"k", 1e3},
  };
  for (const auto& [name, scale] : units)
    if (unit == name) return std::isfinite(v * scale) ? std::optional<double>(v * scale) : std::nullopt;
  return std::nullopt;
}

bool additive(const std::string& unit) {
  return unit == "1/s" || unit == "count" || unit == "bytes" || unit == "objects";
}

std::string labelsText(const Labels& labels) {
  std::string s = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) s += (i ? "," : "") + labels[i].name + "=" + labels[i].value;
  return s + "}";
}

bool includes(const Labels& have, const Labels& want) {
  for (const auto& w : want) {
    bool found = false;
    for (const auto& h : have) found = found || (h.name == w.name && h.value == w.value);
    if (!found) return false;
  }
  return true;
}

std::set<std::string> keysOf(const Labels& labels) {
  std::set<std::string> k;
  for (const auto& l : labels) k.insert(l.name);
  return k;
}

bool compare(double measured, GateOp op, double threshold) {
  switch (op) {
    case GateOp::kLt: return measured < threshold;
    case GateOp::kLe: return measured <= threshold;
    case GateOp::kGt: return measured > threshold;
    case GateOp::kGe: return measured >= threshold;
    case GateOp::kEq: return measured == threshold;
    case GateOp::kNe: return measured != threshold;
  }
  return false;
}

}  // namespace

Gate parseGate(const std::string& text, const std::string& where, const std::string& field) {
  // std::regex matches by recursion, a stack frame or more per character: a gate of
  // some 100,000 characters overflowed the stack. A real gate is one line.
  constexpr std::size_t kMaxGateLength = 1024;
  if (text.size() > kMaxGateLength)
    throw ConfigError(where, field,
                      "gate is " + std::to_string(text.size()) + " characters long (at most " +
                          std::to_string(kMaxGateLength) + "): '" + text.substr(0, 60) + "...'");
  static const std::regex re(
      R"(^\s*(?:(max|min|sum)\s*\(\s*)?([a-zA-Z_:][a-zA-Z0-9_:.]*)\s*(\{[^}]*\})?\s*(\))?\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, re) || m[1].matched != m[4].matched)
    throw ConfigError(
        where, field,
        "expected 'figure{label=value,...} OP threshold' or 'max|min|sum(figure{...}) OP threshold' (OP one "
        "of < <= > >= == !=), found '" +
            text + "'");
  Gate g;
  g.text = trim(text);
  g.where = where;
  g.field = field;
  for (GateFold f : {GateFold::kMax, GateFold::kMin, GateFold::kSum})
    if (m[1].str() == toString(f)) g.fold = f;
  g.figure = m[2];
  if (m[3].matched) {
    std::string inner = m[3].str().substr(1, m[3].length() - 2);
    std::size_t start = 0;
    while (start <= inner.size()) {
      std::size_t comma = inner.find(',', start);
      std::string part = trim(inner.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (!part.empty()) {
        auto eq = part.find('=');
        if (eq == std::string::npos || eq == 0)
          throw ConfigError(where, field, "label selector '" + part + "' is not name=value");
        std::string value = trim(part.substr(eq + 1));
        if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
        g.selector.push_back({trim(part.substr(0, eq)), value});
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    std::sort(g.selector.begin(), g.selector.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  }
  std::string op = m[5];
  g.op = op == "<"    ? GateOp::kLt
         : op == "<=" ? GateOp::kLe
         : op == ">"  ? GateOp::kGt
         : op == ">=" ? GateOp::kGe
         : op == "==" ? GateOp::kEq
                      : GateOp::kNe;
  g.thresholdText = m[6];
  auto t = parseThreshold(g.thresholdText);
  if (!t)
    throw ConfigError(where, field,
                      "threshold '" + g.thresholdText +
                          "' is not a finite number in range (units: ms, s, KiB, MiB, GiB, %, true, false)");
  g.threshold = *t;
  return g;
}

GateResult evaluateGate(const Gate& gate, std::span<const Figure> figures) {
  GateResult r{gate, std::nullopt, false, ""};
  // `window` selects the part of the run (steady, setup, run); without it a gate reads
  // the measured window (and whole-run figures), never the setup ramp.
  std::string window;
  Labels selector;
  for (const auto& l : gate.selector) {
    if (l.name == "window")
      window = l.value;
    else
      selector.push_back(l);
  }
  auto inWindow = [&](const Figure& f) {
    return window.empty() ? f.window != Window::kSetup : toString(f.window) == window;
  };
  std::vector<const Figure*> matches;
  const Figure* exact = nullptr;
  bool nameSeen = false;
  for (const auto& f : figures) {
    if (f.name != gate.figure || !inWindow(f)) continue;
    nameSeen = true;
    if (!includes(f.labels, selector)) continue;
    if (f.labels.size() == selector.size()) exact = &f;
    matches.push_back(&f);
  }
  if (exact && gate.fold == GateFold::kNone) matches = {exact};
  if (matches.empty()) {
    r.reason = nameSeen ? "no " + gate.figure + " figure has labels " + labelsText(gate.selector)
                        : "the run produced no figure named " + gate.figure;
    return r;
  }
  if (gate.fold == GateFold::kSum && !additive(matches.front()->unit)) {
    r.reason = gate.figure + " is in " + (matches.front()->unit.empty() ? "no unit" : matches.front()->unit) +
               ", which does not add up: use max(...) or min(...)";
    return r;
  }
  if (matches.size() > 1 && gate.fold == GateFold::kNone) {
    auto shape = keysOf(matches.front()->labels);
    bool sameShape = std::all_of(matches.begin(), matches.end(), [&](auto* f) { return keysOf(f->labels) == shape; });
    if (!sameShape || !additive(matches.front()->unit)) {
      r.reason = std::to_string(matches.size()) + " figures match, e.g. " + gate.figure +
                 labelsText(matches[0]->labels) + " and " + gate.figure + labelsText(matches[1]->labels) +
                 ": add labels to pick one";
      return r;
    }
  }
  double folded = 0;
  for (std::size_t i = 0; i < matches.size(); ++i) {
    const Figure* f = matches[i];
    if (!f->available()) {
      r.reason = "unavailable: " + (matches.size() > 1 ? gate.figure + labelsText(f->labels) + ": " : "") +
                 f->unavailableReason;
      return r;
    }
    const double v = *f->value;
    folded = i == 0                        ? v
             : gate.fold == GateFold::kMax ? std::max(folded, v)
             : gate.fold == GateFold::kMin ? std::min(folded, v)
                                           : folded + v;
  }
  r.measured = folded;
  r.passed = compare(folded, gate.op, gate.threshold);
  return r;
}

}  // namespace cpscale::metrics
