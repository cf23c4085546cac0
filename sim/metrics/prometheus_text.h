// Parser for the Prometheus text exposition format 0.0.4, the format kube-apiserver
// and etcd serve on /metrics. A scrape body is parsed into metric families keyed by
// name; a malformed body yields an error naming the line and what is wrong, never a
// partial result, so a figure is never computed from half a scrape.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpscale::metrics {

enum class MetricType { kCounter, kGauge, kHistogram, kSummary, kUntyped };

std::string_view toString(MetricType t);

struct Label {
  std::string name;
  std::string value;  // unescaped
  auto operator<=>(const Label&) const = default;
};
// Sorted by name, names unique: two samples of a family with the same labels compare
// equal whatever order the server wrote them in.
using Labels = std::vector<Label>;

// The value of label `name`, or "" when absent (Prometheus treats both alike).
std::string_view labelValue(const Labels& labels, std::string_view name);

struct Sample {
  // The sample's own name: for a histogram family "x" one of x_bucket, x_sum, x_count.
  std::string name;
  Labels labels;
  double value = 0;
  std::optional<std::int64_t> timestampMs;
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;  // unescaped
  std::vector<Sample> samples;
};

// std::less<> so families can be looked up by string_view without a copy.
using FamilyMap = std::map<std::string, MetricFamily, std::less<>>;

struct ParseError {
  std::size_t line = 0;  // 1-based
  std::string message;
  // "line 12: <message>"
  std::string describe() const;
};

// Either the families or the first error; `families` is empty on error.
struct ParseResult {
  FamilyMap families;
  std::optional<ParseError> error;
  bool ok() const { return !error.has_value(); }
};

// Decides, once per family name, whether its samples are kept. Samples of dropped
// families are still checked for syntax (a malformed body is rejected as a whole) but
// cost no allocation, which is what keeps a 3 MB apiserver scrape cheap.
using FamilyFilter = std::function<bool(std::string_view familyName)>;

// Parses a complete 0.0.4 text body. Accepted as the reference parsers do: blank
// lines, comments other than HELP/TYPE, a trailing comma in a label set, samples of a
// family that are not contiguous, a missing final newline, \r\n line ends.
// Rejected, each with its line: a bad metric or label name, an unterminated or badly
// escaped label value (only \\ \" \n are escapes), a duplicate label, a value or
// timestamp that is not a number, an unknown TYPE, a second TYPE or HELP for one
// family, a TYPE after that family's samples, a histogram bucket without a numeric
// `le`, a summary quantile without a numeric `quantile`, trailing garbage.
ParseResult parsePrometheusText(std::string_view body, const FamilyFilter& keep = {});

}  // namespace cpscale::metrics
