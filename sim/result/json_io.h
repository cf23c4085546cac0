// The JSON reading and writing the result documents share (result.json, the capacity
// index): figures, gates and numbers JSON cannot hold, a reader whose every accessor
// knows its JSON path (so an error names the field), and atomic file writes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/common/error.h"
#include "sim/metrics/figures.h"
#include "sim/metrics/gate.h"

namespace cpscale::result::jsonio {

using nlohmann::json;

// NaN and infinities as Prometheus spells them ("NaN", "+Inf", "-Inf").
json number(double v);
json labelsJson(const metrics::Labels& labels);
double secondsSinceStart(engine::TimePoint t);
engine::TimePoint fromSeconds(double s);
json figureJson(const metrics::Figure& f);
json gateJson(const metrics::GateResult& g);

class Reader {
 public:
  Reader(const json& j, std::string where, std::string path = "")
      : j_(j), where_(std::move(where)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(where_, path_.empty() ? "/" : path_, what);
  }
  const json& raw() const { return j_; }
  const std::string& path() const { return path_; }

  Reader at(std::string_view key) const {
    if (!j_.is_object()) fail("expected an object");
    auto it = j_.find(key);
    std::string p = path_ + "/" + std::string(key);
    if (it == j_.end()) throw ConfigError(where_, p, "is missing");
    return Reader(*it, where_, p);
  }
  bool has(std::string_view key) const { return j_.is_object() && j_.contains(key); }
  Reader at(std::size_t i) const { return Reader(j_.at(i), where_, path_ + "/" + std::to_string(i)); }

  const json& array() const {
    if (!j_.is_array()) fail("expected an array");
    return j_;
  }
  const json& object() const {
    if (!j_.is_object()) fail("expected an object");
    return j_;
  }
  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false");
    return j_.get<bool>();
  }
  double num() const {
    if (j_.is_number()) return j_.get<double>();
    if (j_.is_string()) {
      const auto& s = j_.get_ref<const std::string&>();
      if (s == "NaN") return std::nan("");
      if (s == "+Inf") return INFINITY;
      if (s == "-Inf") return -INFINITY;
    }
    fail("expected a number (or \"NaN\", \"+Inf\", \"-Inf\")");
  }
  std::optional<double> optionalNum() const {
    if (j_.is_null()) return std::nullopt;
    return num();
  }
  std::int64_t integer() const {
    if (!j_.is_number_integer()) fail("expected an integer");
    return j_.get<std::int64_t>();
  }
  std::uint64_t unsignedInteger() const {
    if (!j_.is_number_unsigned() && !(j_.is_number_integer() && j_.get<std::int64_t>() >= 0))
      fail("expected a non-negative integer");
    return j_.get<std::uint64_t>();
  }
  // Optional members default: an older writer of the same schema may leave them out.
  std::string strOr(std::string_view key, std::string dflt = "") const { return has(key) ? at(key).str() : dflt; }
  json jsonOr(std::string_view key) const { return has(key) ? j_.at(std::string(key)) : json(); }

 private:
  const json& j_;
  std::string where_;
  std::string path_;
};

metrics::Labels readLabels(const Reader& r);

template <typename Enum, std::size_t N>
Enum readEnum(const Reader& r, const Enum (&all)[N], std::string_view what) {
  std::string s = r.str();
  std::string known;
  for (Enum e : all) {
    if (toString(e) == s) return e;
    known += (known.empty() ? "" : ", ") + std::string(toString(e));
  }
  r.fail("unknown " + std::string(what) + " '" + s + "' (one of " + known + ")");
}

metrics::Figure readFigure(const Reader& r);
metrics::GateResult readGate(const Reader& r);

bool sameNumber(double a, double b);
bool sameNumber(const std::optional<double>& a, const std::optional<double>& b);
bool sameFigure(const metrics::Figure& a, const metrics::Figure& b);
bool sameGate(const metrics::GateResult& a, const metrics::GateResult& b);
template <typename T, typename Eq>
bool sameAll(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), eq);
}

// The JSON document in `path`. Throws ConfigError naming the file when it cannot be
// read or is not JSON.
json readJsonFile(const std::filesystem::path& path);

// Writes atomically (a temporary file renamed into place), creating parent directories.
// Throws std::runtime_error naming the file.
void writeFile(const std::filesystem::path& path, std::string_view content);

}  // namespace cpscale::result::jsonio
