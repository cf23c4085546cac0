#include "sim/common/duration.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>

namespace cpscale {

std::optional<Duration> parseDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  if (s == "0") return Duration{0};
  long double total = 0;
  bool any = false;
  while (!s.empty()) {
    std::size_t i = 0;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == 0) return std::nullopt;
    std::string number(s.substr(0, i));
    if (number.find('.') != number.rfind('.') || number == ".") return std::nullopt;
    s.remove_prefix(i);
    std::size_t j = 0;
    while (j < s.size() && std::isalpha(static_cast<unsigned char>(s[j]))) ++j;
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    long double scale;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "µs")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else
      return std::nullopt;
    // strtold, not std::stold: a number past long double's range is bad input, not an
    // exception.
    long double n = std::strtold(number.c_str(), nullptr);
    if (!std::isfinite(n)) return std::nullopt;
    total += n * scale;
    if (!std::isfinite(total)) return std::nullopt;
    any = true;
  }
  if (!any || total > static_cast<long double>(INT64_MAX)) return std::nullopt;
  auto ns = static_cast<std::int64_t>(std::llround(total));
  return Duration{ns};
}

std::string formatDuration(Duration d) {
  std::int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string out = ns < 0 ? "-" : "";
  std::uint64_t v = ns < 0 ? static_cast<std::uint64_t>(-ns) : static_cast<std::uint64_t>(ns);
  if (v % 1'000'000'000 != 0) {
    // Sub-second: one unit, the largest that is exact.
    if (v % 1'000'000 == 0) return out + std::to_string(v / 1'000'000) + "ms";
    if (v % 1'000 == 0) return out + std::to_string(v / 1'000) + "us";
    return out + std::to_string(v) + "ns";
  }
  std::uint64_t s = v / 1'000'000'000;
  if (s >= 3600) out += std::to_string(s / 3600) + "h", s %= 3600;
  if (s >= 60) out += std::to_string(s / 60) + "m", s %= 60;
  if (s > 0) out += std::to_string(s) + "s";
  return out;
}

Duration asDuration(const YamlField& field, bool positive) {
  std::string text = field.asString();
  auto d = parseDuration(text);
  if (!d) throw field.error("expected a duration such as 250ms, 10s or 5m, found '" + text + "'");
  if (positive && d->count() <= 0) throw field.error("must be a positive duration, found '" + text + "'");
  return *d;
}

std::int64_t unixNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string utcNowRfc3339() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<std::chrono::system_clock::time_point> parseRfc3339(std::string_view text) {
  std::tm tm{};
  std::string s(text);
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!rest) return std::nullopt;
  std::chrono::nanoseconds fraction{0};
  if (*rest == '.') {
    long long scale = 100'000'000;
    for (++rest; *rest >= '0' && *rest <= '9'; ++rest, scale /= 10)
      if (scale > 0) fraction += std::chrono::nanoseconds((*rest - '0') * scale);
  }
  if (std::string_view(rest) != "Z") return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm)) +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(fraction);
}

}  // namespace cpscale
