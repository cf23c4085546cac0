#include "workloads/params.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "workloads/workload.h"

namespace cpscale::workloads {

engine::Duration readDuration(const YamlField& f, engine::Duration lo, engine::Duration hi) {
  auto d = parseDuration(f.asString());
  if (!d) throw f.error("expected a duration like \"250ms\", \"10s\" or \"5m\", found '" + f.asString() + "'");
  if (*d < lo || *d > hi) {
    throw f.error("must be between " + formatDuration(lo) + " and " + formatDuration(hi) + ", found " + f.asString());
  }
  return *d;
}

// ---- Distribution ----------------------------------------------------------------

namespace {

double readQuantity(const YamlField& f, bool durations, double lo, double hi) {
  double v;
  if (durations) {
    v = static_cast<double>(readDuration(f, engine::Duration{static_cast<engine::Duration::rep>(lo)},
                                         engine::Duration{static_cast<engine::Duration::rep>(hi)})
                                .count());
  } else {
    v = f.asDouble();
    if (!(v >= lo && v <= hi)) {
      throw f.error("must be between " + std::to_string(static_cast<long long>(lo)) + " and " +
                    std::to_string(static_cast<long long>(hi)));
    }
  }
  return v;
}

}  // namespace

Distribution Distribution::read(const YamlField& f, bool durations, double lo, double hi) {
  if (!f.isMap()) return fixed(readQuantity(f, durations, lo, hi));
  f.expectMap({"exponential", "lognormal", "uniform", "max"});
  std::optional<Distribution> d;
  auto once = [&](const YamlField& field) {
    if (d) throw field.error("give exactly one of exponential, lognormal, uniform");
  };
  if (auto e = f.get("exponential")) {
    once(*e);
    d = exponential(readQuantity(*e, durations, lo, hi));
  }
  if (auto l = f.get("lognormal")) {
    once(*l);
    l->expectMap({"median", "sigma"});
    double sigma = l->require("sigma").asDouble();
    if (!(sigma >= 0 && sigma <= 5)) throw l->require("sigma").error("must be between 0 and 5");
    d = lognormal(readQuantity(l->require("median"), durations, lo, hi), sigma);
  }
  if (auto u = f.get("uniform")) {
    once(*u);
    auto bounds = u->items();
    if (bounds.size() != 2) throw u->error("expected [low, high]");
    double a = readQuantity(bounds[0], durations, lo, hi);
    double b = readQuantity(bounds[1], durations, lo, hi);
    if (b < a) throw u->error("high bound is below the low bound");
    d = uniform(a, b);
  }
  if (!d) throw f.error("give one of exponential, lognormal, uniform (or a plain value)");
  if (auto m = f.get("max")) d->capAt(readQuantity(*m, durations, lo, hi));
  return *d;
}

double Distribution::sample(engine::RandomStream& rng) const {
  double v = a_;
  switch (shape_) {
    case Shape::kFixed: break;
    case Shape::kExponential: v = rng.exponential(a_); break;
    case Shape::kLognormal: v = rng.lognormal(std::log(std::max(a_, 1e-9)), b_); break;
    case Shape::kUniform: v = rng.uniform(a_, b_); break;
  }
  if (max_ > 0 && v > max_) v = max_;
  return v < 0 ? 0 : v;
}

double Distribution::mean() const {
  switch (shape_) {
    case Shape::kFixed: return a_;
    case Shape::kExponential: return a_;
    case Shape::kLognormal: return a_ * std::exp(b_ * b_ / 2);
    case Shape::kUniform: return (a_ + b_) / 2;
  }
  return a_;
}

// ---- TokenBucket -----------------------------------------------------------------

TokenBucket::TokenBucket(double qps, double burst, engine::TimePoint start)
    : qps_(qps), burst_(std::max(1.0, burst)), tokens_(std::max(1.0, burst)), last_(start) {}

engine::TimePoint TokenBucket::reserve(engine::TimePoint now) {
  if (qps_ <= 0) return now;
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + std::chrono::duration<double>(now - last_).count() * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return last_ > now ? last_ : now;
  // The deficit is paid back at qps: this token exists -tokens/qps after `last_`.
  auto wait = engine::Duration{static_cast<engine::Duration::rep>(std::ceil(-tokens_ / qps_ * 1e9))};
  return last_ + wait;
}

RateLimit readRateLimit(const YamlField& entry, std::string_view qpsKey, std::string_view burstKey, double defaultQps) {
  RateLimit r;
  r.qps = defaultQps;
  if (auto q = entry.get(qpsKey)) {
    r.qps = q->asDouble();
    if (!(r.qps > 0 && r.qps <= 1e6)) throw q->error("must be a rate above 0 (and at most 1e6)");
  }
  r.burst = std::max(1.0, std::ceil(r.qps));
  if (auto b = entry.get(burstKey)) r.burst = static_cast<double>(b->asInt(1, 1'000'000));
  return r;
}

// ---- names, labels, time ---------------------------------------------------------

bool isDnsLabel(std::string_view s, std::size_t maxLen) {
  if (s.empty() || s.size() > maxLen) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

void validateRunId(const std::string& runId) {
  // Room for "cpscale-<run>-<workload>-<kind>-<index>" within a 63-character label.
  if (!isDnsLabel(runId, 20)) {
    throw ConfigError("", "run",
                      "run id '" + runId +
                          "' must be 1-20 lower-case letters, digits or '-', starting and "
                          "ending with a letter or digit");
  }
}

std::string runSelector(const std::string& runId) { return std::string(kRunLabel) + "=" + runId; }

nlohmann::json runLabels(const std::string& runId, const std::string& workload) {
  return {{kRunLabel, runId}, {kWorkloadLabel, workload}};
}

namespace {

// Howard Hinnant's days_from_civil inverse: civil date from days since 1970-01-01.
void civilFromDays(std::int64_t z, int& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t yy = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int>(yy + (m <= 2));
}

void put(char*& p, unsigned v, int digits) {
  for (int i = digits - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  p += digits;
}

}  // namespace

void formatMicroTime(std::int64_t unixNanos, char* out) {
  std::int64_t secs = unixNanos >= 0 ? unixNanos / 1'000'000'000 : (unixNanos - 999'999'999) / 1'000'000'000;
  unsigned micros = static_cast<unsigned>((unixNanos - secs * 1'000'000'000) / 1000);
  std::int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  unsigned sod = static_cast<unsigned>(secs - days * 86400);
  int y;
  unsigned m, d;
  civilFromDays(days, y, m, d);
  char* p = out;
  put(p, static_cast<unsigned>(y), 4);
  *p++ = '-';
  put(p, m, 2);
  *p++ = '-';
  put(p, d, 2);
  *p++ = 'T';
  put(p, sod / 3600, 2);
  *p++ = ':';
  put(p, sod / 60 % 60, 2);
  *p++ = ':';
  put(p, sod % 60, 2);
  *p++ = '.';
  put(p, micros, 6);
  *p = 'Z';
}

std::string microTime(std::int64_t unixNanos) {
  std::string s(kMicroTimeLength, ' ');
  formatMicroTime(unixNanos, s.data());
  return s;
}

std::string rfc3339(std::int64_t unixNanos) {
  std::string s = microTime(unixNanos);
  return s.substr(0, 19) + "Z";
}

std::string filler(std::size_t bytes, std::uint64_t seed) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(bytes, 'x');
  engine::SplitMix64 rng(seed);
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t r = rng.next();
    for (std::size_t j = i; j < std::min(bytes, i + 8); ++j, r >>= 8) s[j] = kAlphabet[(r & 0xff) % 36];
  }
  return s;
}

}  // namespace cpscale::workloads
