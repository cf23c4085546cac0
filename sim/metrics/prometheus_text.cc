#include "sim/metrics/prometheus_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace cpscale::metrics {

std::string_view toString(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kUntyped: return "untyped";
  }
  return "untyped";
}

std::string_view labelValue(const Labels& labels, std::string_view name) {
  for (const Label& l : labels) {
    if (l.name == name) return l.value;
  }
  return {};
}

std::string ParseError::describe() const { return "line " + std::to_string(line) + ": " + message; }

namespace {

bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || (c >= '0' && c <= '9'); }
bool isMetricNameStart(char c) { return isNameStart(c) || c == ':'; }
bool isMetricNameChar(char c) { return isNameChar(c) || c == ':'; }
bool isBlank(char c) { return c == ' ' || c == '\t'; }

// Shows an offending token in a message without flooding it.
std::string quote(std::string_view s) {
  constexpr std::size_t kMax = 40;
  std::string out = "'";
  out.append(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// Go's strconv.ParseFloat, which the reference parser uses, accepts a leading '+',
// "Inf"/"+Inf"/"-Inf" and "NaN" in any case; from_chars accepts all but the '+'.
bool parseDouble(std::string_view s, double& out) {
  if (s.empty()) return false;
  bool negate = false;
  if (s.front() == '+' || s.front() == '-') {
    negate = s.front() == '-';
    s.remove_prefix(1);
    if (s.empty() || s.front() == '+' || s.front() == '-') return false;
  }
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::general);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    // Go returns +-Inf or 0 here rather than failing; so do we.
    out = std::numeric_limits<double>::infinity();
  } else if (ec != std::errc{}) {
    return false;
  }
  if (negate) out = -out;
  return true;
}

bool parseInt64(std::string_view s, std::int64_t& out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && end == s.data() + s.size();
}

struct FamilyState {
  bool typed = false;
  bool hasHelp = false;
  bool hasSamples = false;
  bool keep = false;
  MetricType type = MetricType::kUntyped;
  MetricFamily* family = nullptr;  // in the result map when kept
};

class Parser {
 public:
  Parser(std::string_view body, const FamilyFilter& keep) : body_(body), keep_(keep) {}

  ParseResult run() {
    std::size_t pos = 0;
    while (pos < body_.size()) {
      ++lineNo_;
      const char* nl = static_cast<const char*>(std::memchr(body_.data() + pos, '\n', body_.size() - pos));
      std::size_t end = nl ? static_cast<std::size_t>(nl - body_.data()) : body_.size();
      std::string_view line = body_.substr(pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      pos = end + 1;
      if (!parseLine(line)) {
        ParseResult r;
        r.error = ParseError{lineNo_, std::move(error_)};
        return r;
      }
    }
    return ParseResult{std::move(result_), std::nullopt};
  }

 private:
  bool fail(std::string msg) {
    error_ = std::move(msg);
    return false;
  }

  bool parseLine(std::string_view line) {
    std::size_t i = 0;
    while (i < line.size() && isBlank(line[i])) ++i;
    if (i == line.size()) return true;
    if (line[i] == '#') return parseComment(line.substr(i + 1));
    return parseSample(line.substr(i));
  }

  // Splits off the next blank-separated token.
  static std::string_view nextToken(std::string_view& s) {
    std::size_t i = 0;
    while (i < s.size() && isBlank(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !isBlank(s[j])) ++j;
    std::string_view tok = s.substr(i, j - i);
    s.remove_prefix(j);
    return tok;
  }

  static bool validMetricName(std::string_view n) {
    if (n.empty() || !isMetricNameStart(n[0])) return false;
    return std::all_of(n.begin() + 1, n.end(), isMetricNameChar);
  }

  FamilyState& stateFor(std::string_view name) {
    auto it = states_.find(name);
    if (it != states_.end()) return it->second;
    FamilyState st;
    st.keep = !keep_ || keep_(name);
    if (st.keep) {
      auto [fit, inserted] = result_.try_emplace(std::string(name));
      fit->second.name = std::string(name);
      st.family = &fit->second;
    }
    return states_.emplace(std::string(name), st).first->second;
  }

  bool parseComment(std::string_view rest) {
    std::string_view keyword = nextToken(rest);
    if (keyword != "HELP" && keyword != "TYPE") return true;  // an ordinary comment
    std::string_view name = nextToken(rest);
    if (!validMetricName(name)) {
      return fail(name.empty() ? std::string(keyword) + " line without a metric name"
                               : "invalid metric name " + quote(name) + " in " + std::string(keyword) + " line");
    }
    FamilyState& st = stateFor(name);
    if (keyword == "TYPE") {
      std::string_view typeTok = nextToken(rest);
      std::string_view extra = nextToken(rest);
      if (!extra.empty()) return fail("unexpected " + quote(extra) + " after the type in TYPE line");
      MetricType t;
      if (typeTok == "counter")
        t = MetricType::kCounter;
      else if (typeTok == "gauge")
        t = MetricType::kGauge;
      else if (typeTok == "histogram")
        t = MetricType::kHistogram;
      else if (typeTok == "summary")
        t = MetricType::kSummary;
      else if (typeTok == "untyped")
        t = MetricType::kUntyped;
      else
        return fail("unknown metric type " + quote(typeTok) + " for " + std::string(name));
      if (st.typed) return fail("second TYPE line for " + std::string(name));
      if (st.hasSamples) return fail("TYPE line for " + std::string(name) + " after its samples");
      st.typed = true;
      st.type = t;
      if (st.family) st.family->type = t;
      current_ = &st;
      currentName_ = name;
      return true;
    }
    if (st.hasHelp) return fail("second HELP line for " + std::string(name));
    st.hasHelp = true;
    if (st.family) {
      // Docstrings are free text for people: unknown escapes are kept as written
      // rather than failing a whole scrape over documentation.
      std::size_t i = 0;
      while (i < rest.size() && isBlank(rest[i])) ++i;
      std::string help;
      help.reserve(rest.size() - i);
      for (; i < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 1 < rest.size() && (rest[i + 1] == '\\' || rest[i + 1] == 'n')) {
          help += rest[i + 1] == 'n' ? '\n' : '\\';
          ++i;
        } else {
          help += rest[i];
        }
      }
      st.family->help = std::move(help);
    }
    current_ = &st;
    currentName_ = name;
    return true;
  }

  // Which family a sample named `name` belongs to: the current family if the name is
  // the family's or one of its type's suffixed names, else a family declared earlier
  // under the name without such a suffix, else a new untyped family of that name.
  FamilyState& familyOf(std::string_view name, std::string_view& familyName) {
    auto matches = [&](std::string_view fam, const FamilyState& st) {
      if (name == fam) return true;
      if (name.size() <= fam.size() || name.substr(0, fam.size()) != fam) return false;
      std::string_view suffix = name.substr(fam.size());
      if (st.type == MetricType::kHistogram) return suffix == "_bucket" || suffix == "_sum" || suffix == "_count";
      if (st.type == MetricType::kSummary) return suffix == "_sum" || suffix == "_count";
      return false;
    };
    if (current_ && matches(currentName_, *current_)) {
      familyName = currentName_;
      return *current_;
    }
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
        std::string_view base = name.substr(0, name.size() - suffix.size());
        auto it = states_.find(base);
        if (it != states_.end() && matches(it->first, it->second)) {
          familyName = it->first;
          return it->second;
        }
      }
    }
    FamilyState& st = stateFor(name);
    familyName = states_.find(name)->first;
    return st;
  }

  // Parses `{name="value",...}` starting at s[0] == '{' into labels_; advances s.
  bool parseLabels(std::string_view& s) {
    std::size_t i = 1;
    std::size_t n = 0;  // labels used in the reusable scratch vector
    for (;;) {
      while (i < s.size() && isBlank(s[i])) ++i;
      if (i >= s.size()) return fail("unterminated label set: missing '}'");
      if (s[i] == '}') {
        ++i;
        break;
      }
      std::size_t ns = i;
      if (!isNameStart(s[i])) return fail("invalid label name starting at " + quote(s.substr(i)));
      while (i < s.size() && isNameChar(s[i])) ++i;
      std::string_view lname = s.substr(ns, i - ns);
      while (i < s.size() && isBlank(s[i])) ++i;
      if (i >= s.size() || s[i] != '=') return fail("expected '=' after label name " + quote(lname));
      ++i;
      while (i < s.size() && isBlank(s[i])) ++i;
      if (i >= s.size() || s[i] != '"') return fail("expected '\"' to open the value of label " + quote(lname));
      ++i;
      if (n == labels_.size()) labels_.emplace_back();
      Label& l = labels_[n++];
      l.name.assign(lname);
      l.value.clear();
      bool closed = false;
      while (i < s.size()) {
        char c = s[i];
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        if (c == '\\') {
          if (i + 1 >= s.size()) break;
          char e = s[i + 1];
          if (e == '\\' || e == '"')
            l.value += e;
          else if (e == 'n')
            l.value += '\n';
          else
            return fail("invalid escape sequence '\\" + std::string(1, e) + "' in the value of label " + quote(lname));
          i += 2;
          continue;
        }
        // Copy the run of ordinary characters at once.
        std::size_t j = i;
        while (j < s.size() && s[j] != '"' && s[j] != '\\') ++j;
        l.value.append(s.data() + i, j - i);
        i = j;
      }
      if (!closed) return fail("unterminated value of label " + quote(lname));
      while (i < s.size() && isBlank(s[i])) ++i;
      if (i < s.size() && s[i] == ',') {
        ++i;
      } else if (i < s.size() && s[i] != '}') {
        return fail("expected ',' or '}' after the value of label " + quote(lname));
      }
    }
    labelCount_ = n;
    s.remove_prefix(i);
    // Sort (insertion sort: label sets are small) and reject duplicates.
    for (std::size_t a = 1; a < n; ++a) {
      for (std::size_t b = a; b > 0 && labels_[b].name < labels_[b - 1].name; --b)
        std::swap(labels_[b], labels_[b - 1]);
    }
    for (std::size_t a = 1; a < n; ++a) {
      if (labels_[a].name == labels_[a - 1].name) return fail("duplicate label " + quote(labels_[a].name));
    }
    return true;
  }

  const std::string* findLabel(std::string_view name) const {
    for (std::size_t k = 0; k < labelCount_; ++k) {
      if (labels_[k].name == name) return &labels_[k].value;
    }
    return nullptr;
  }

  bool parseSample(std::string_view s) {
    std::size_t i = 0;
    if (!isMetricNameStart(s[0])) return fail("invalid metric name starting at " + quote(s));
    while (i < s.size() && isMetricNameChar(s[i])) ++i;
    std::string_view name = s.substr(0, i);
    s.remove_prefix(i);
    while (!s.empty() && isBlank(s.front())) s.remove_prefix(1);
    labelCount_ = 0;
    if (!s.empty() && s.front() == '{') {
      if (!parseLabels(s)) return false;
    }
    std::string_view valueTok = nextToken(s);
    if (valueTok.empty()) return fail("missing value for " + std::string(name));
    double value;
    if (!parseDouble(valueTok, value)) return fail("invalid value " + quote(valueTok) + " for " + std::string(name));
    std::optional<std::int64_t> ts;
    std::string_view tsTok = nextToken(s);
    if (!tsTok.empty()) {
      std::int64_t t;
      if (!parseInt64(tsTok, t)) return fail("invalid timestamp " + quote(tsTok) + " for " + std::string(name));
      ts = t;
    }
    std::string_view extra = nextToken(s);
    if (!extra.empty()) return fail("unexpected " + quote(extra) + " after the sample of " + std::string(name));

    std::string_view familyName;
    FamilyState& st = familyOf(name, familyName);
    if (st.type == MetricType::kHistogram && name.size() == familyName.size() + 7) {  // _bucket
      const std::string* le = findLabel("le");
      double bound;
      if (!le) return fail("histogram bucket " + std::string(name) + " without an 'le' label");
      if (!parseDouble(*le, bound))
        return fail("histogram bucket " + std::string(name) + " has a non-numeric le=" + quote(*le));
    } else if (st.type == MetricType::kHistogram && name == familyName) {
      return fail("sample " + std::string(name) + " of histogram " + std::string(familyName) +
                  " must end in _bucket, _sum or _count");
    } else if (st.type == MetricType::kSummary && name == familyName) {
      const std::string* q = findLabel("quantile");
      double qv;
      if (!q) return fail("summary sample " + std::string(name) + " without a 'quantile' label");
      if (!parseDouble(*q, qv))
        return fail("summary sample " + std::string(name) + " has a non-numeric quantile=" + quote(*q));
    }
    st.hasSamples = true;
    current_ = &st;
    currentName_ = familyName;
    if (!st.keep) return true;

    Sample& out = st.family->samples.emplace_back();
    out.name.assign(name);
    out.labels.assign(labels_.begin(), labels_.begin() + static_cast<std::ptrdiff_t>(labelCount_));
    out.value = value;
    out.timestampMs = ts;
    return true;
  }

  std::string_view body_;
  const FamilyFilter& keep_;
  std::size_t lineNo_ = 0;
  std::string error_;
  FamilyMap result_;
  // Every family seen, kept or not (one entry per family, not per sample), for the
  // TYPE/HELP consistency checks. std::map: node addresses are stable.
  std::map<std::string, FamilyState, std::less<>> states_;
  FamilyState* current_ = nullptr;
  std::string_view currentName_;  // points into states_' key
  Labels labels_;                 // scratch, reused across samples
  std::size_t labelCount_ = 0;
};

}  // namespace

ParseResult parsePrometheusText(std::string_view body, const FamilyFilter& keep) { return Parser(body, keep).run(); }

}  // namespace cpscale::metrics
