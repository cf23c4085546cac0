#include "workloads/templates.h"

#include <cstdlib>
#include <fstream>

#include "sim/common/error.h"

#ifndef CPSCALE_WORKLOADS_TEMPLATE_DIR
#define CPSCALE_WORKLOADS_TEMPLATE_DIR "workloads/templates"
#endif

namespace cpscale::workloads {

std::filesystem::path templateDir() {
  if (const char* env = std::getenv("CPSCALE_TEMPLATE_DIR"); env != nullptr && *env != '\0') return env;
  return CPSCALE_WORKLOADS_TEMPLATE_DIR;
}

namespace {

nlohmann::json plainScalar(const std::string& s) {
  if (s.empty() || s == "null" || s == "~" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  // JSON numbers only: YAML 1.1 forms like 0x1f or 1_000 stay strings.
  nlohmann::json n = nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
  if (!n.is_discarded() && n.is_number()) return n;
  return s;
}

void substitute(nlohmann::json& j, const std::map<std::string, nlohmann::json>& values) {
  if (j.is_object() || j.is_array()) {
    for (auto& child : j) substitute(child, values);
    return;
  }
  if (!j.is_string()) return;
  const std::string& s = j.get_ref<const std::string&>();
  if (s.find("{{") == std::string::npos) return;
  if (s.size() > 4 && s.rfind("{{", 0) == 0 && s.find("}}") == s.size() - 2) {
    if (auto it = values.find(s.substr(2, s.size() - 4)); it != values.end()) {
      j = it->second;
      return;
    }
  }
  std::string out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t open = s.find("{{", pos);
    std::size_t close = open == std::string::npos ? std::string::npos : s.find("}}", open);
    if (close == std::string::npos) {
      out.append(s, pos, std::string::npos);
      break;
    }
    out.append(s, pos, open - pos);
    auto it = values.find(s.substr(open + 2, close - open - 2));
    if (it == values.end()) {
      out.append(s, open, close + 2 - open);
    } else {
      out += it->second.is_string() ? it->second.get<std::string>() : it->second.dump();
    }
    pos = close + 2;
  }
  j = out;
}

}  // namespace

nlohmann::json yamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!": those are strings whatever they look like.
      return node.Tag() == "!" ? nlohmann::json(node.Scalar()) : plainScalar(node.Scalar());
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& n : node) a.push_back(yamlToJson(n));
      return a;
    }
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : node) o[kv.first.Scalar()] = yamlToJson(kv.second);
      return o;
    }
  }
  return nullptr;
}

ObjectTemplate ObjectTemplate::load(const std::filesystem::path& file, const YamlField* field) {
  // A relative path: beside the document that names it (a captured scenario's CRDs),
  // else among the shipped templates.
  std::filesystem::path path = file.is_absolute() ? file : templateDir() / file;
  if (!file.is_absolute() && field != nullptr && !field->file().empty()) {
    const std::filesystem::path beside = std::filesystem::path(field->file()).parent_path() / file;
    if (std::filesystem::is_regular_file(beside)) path = beside;
  }
  std::string fieldPath = field ? field->path() : "";
  std::string fieldWhere = field ? field->where() : "";
  if (!std::filesystem::is_regular_file(path)) {
    throw ConfigError(fieldWhere.empty() ? path.string() : fieldWhere, fieldPath,
                      "template file " + path.string() + " not found");
  }
  YamlField doc = [&] {
    try {
      return loadYamlFile(path);
    } catch (const ConfigError& e) {
      // The syntax error names the template's own file and line; say who asked for it.
      throw ConfigError(e.where(), fieldPath, std::string("invalid template: ") + e.what());
    }
  }();
  if (!doc.isMap()) throw ConfigError(doc.where(), fieldPath, "template " + path.string() + " is not an object");
  for (const char* key : {"apiVersion", "kind", "metadata"}) {
    if (!doc.get(key)) {
      throw ConfigError(doc.where(), fieldPath, "template " + path.string() + " has no '" + key + "'");
    }
  }
  ObjectTemplate t;
  t.object_ = yamlToJson(doc.node());
  t.file_ = path.string();
  return t;
}

ObjectTemplate ObjectTemplate::load(const YamlField& field) { return load(field.asString(), &field); }

nlohmann::json ObjectTemplate::fill(const std::map<std::string, nlohmann::json>& values) const {
  nlohmann::json j = object_;
  substitute(j, values);
  return j;
}

}  // namespace cpscale::workloads
