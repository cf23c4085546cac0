// Strict, position-aware reading of YAML input files (profiles, scenarios). Every
// error names the file, the line and the dotted field path, e.g.
//   profiles/x.yaml:7: field 'etcds[1].resources[0]': expected "group/resource"
// and unknown fields are errors, so a typo never silently falls back to a default.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/common/error.h"

namespace cpscale {

class YamlField {
 public:
  YamlField(YAML::Node node, std::string file, std::string path)
      : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {}

  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return file_; }  // the document it was read from
  bool isMap() const { return node_.IsMap(); }
  bool isSequence() const { return node_.IsSequence(); }
  bool isNull() const { return !node_ || node_.IsNull(); }

  // "file:line" of this node (line is 1-based), or just the file when unknown.
  std::string where() const;
  ConfigError error(const std::string& what) const { return ConfigError(where(), path_, what); }

  // Requires a map whose keys are all in `known`.
  void expectMap(std::initializer_list<std::string_view> known) const;
  std::optional<YamlField> get(std::string_view key) const;
  YamlField require(std::string_view key) const;
  std::vector<YamlField> items() const;  // requires a sequence
  // Key/value pairs of a map, keys as strings.
  std::vector<std::pair<std::string, YamlField>> entries() const;

  std::string asString() const;
  bool asBool() const;
  long long asInt() const;
  double asDouble() const;  // finite: .nan, .inf and out-of-range numbers are errors
  // Integer within [lo, hi].
  long long asInt(long long lo, long long hi) const;
  std::vector<std::string> asStrings() const;

 private:
  YamlField child(const YAML::Node& n, std::string path) const { return {n, file_, std::move(path)}; }
  YAML::Node node_;
  std::string file_;
  std::string path_;
};

// Parses `path` as one YAML document. A missing file or a syntax error becomes a
// ConfigError naming the file (and line/column for syntax errors).
YamlField loadYamlFile(const std::filesystem::path& path);
// Same, from text already in memory; `name` is what errors call it.
YamlField loadYamlString(const std::string& text, const std::string& name);

}  // namespace cpscale
