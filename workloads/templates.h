// The object and CRD templates the workloads create, read at startup from
// workloads/templates/ (or a file a scenario names). Templates are JSON or YAML with
// "{{name}}" placeholders filled per object; a template that does not parse, or that
// is not a Kubernetes object, is a ConfigError naming the file and line.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "sim/common/yaml_reader.h"

namespace cpscale::workloads {

// Where the built-in templates live: $CPSCALE_TEMPLATE_DIR when set, else the source
// tree's workloads/templates (a compile-time default).
std::filesystem::path templateDir();

// A YAML node as JSON: plain scalars become numbers, booleans or null where YAML 1.2's
// core schema says so; quoted scalars stay strings.
nlohmann::json yamlToJson(const YAML::Node& node);

// A parsed template. `fill` returns a copy with every "{{key}}" in a string replaced;
// a string that is exactly one placeholder takes the value's JSON type (numbers stay
// numbers).
class ObjectTemplate {
 public:
  // Loads `file` (absolute, or relative to templateDir()). Throws ConfigError naming
  // `field` and the file (with line for syntax errors) when it is missing, does not
  // parse, or lacks apiVersion/kind/metadata.
  static ObjectTemplate load(const std::filesystem::path& file, const YamlField* field = nullptr);
  // The file named by a scenario field, e.g. `nodeTemplate: my-node.yaml`.
  static ObjectTemplate load(const YamlField& field);

  nlohmann::json fill(const std::map<std::string, nlohmann::json>& values) const;
  const nlohmann::json& raw() const { return object_; }
  const std::string& file() const { return file_; }

 private:
  nlohmann::json object_;
  std::string file_;
};

}  // namespace cpscale::workloads
