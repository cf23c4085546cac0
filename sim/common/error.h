// Project-wide error type for invalid input and the process exit codes the CLI maps
// outcomes to. Invalid configuration fails at construction with ConfigError; runtime
// outcomes (a 409, a timeout) are values, not exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace cpscale {

// Exit codes shared by every subcommand (see README "Exit codes").
enum class ExitCode : int {
  kOk = 0,
  kGateFailed = 1,
  kBadInput = 2,
  kUnavailable = 3,  // target unreachable, a child failed, or the run was aborted
  // cpscale run --publish-result: the result is written locally but could not be stored
  // in the cluster for `cpscale collect`.
  kNotPublished = 4,
};

// Bad input: names where (file and line when known) and which field is wrong.
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string where, std::string field, const std::string& what)
      : std::runtime_error(format(where, field, what)), where_(std::move(where)), field_(std::move(field)) {}

  const std::string& where() const { return where_; }
  const std::string& field() const { return field_; }

 private:
  static std::string format(const std::string& where, const std::string& field, const std::string& what) {
    std::string s = where;
    if (!field.empty()) s += (s.empty() ? "" : ": ") + std::string("field '") + field + "'";
    return s + (s.empty() ? "" : ": ") + what;
  }
  std::string where_;
  std::string field_;
};

// The target or an external resource could not be used (unreachable server, missing
// binary, port in use, crashed child). Maps to ExitCode::kUnavailable.
class UnavailableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace cpscale
