#include "sim/common/yaml_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace cpscale {

namespace {

std::string typeName(const YAML::Node& n) {
  if (!n || n.IsNull()) return "nothing";
  if (n.IsMap()) return "a map";
  if (n.IsSequence()) return "a list";
  return "'" + n.Scalar() + "'";
}

std::string joinPath(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

}  // namespace

std::string YamlField::where() const {
  if (node_ && node_.Mark().line >= 0) return file_ + ":" + std::to_string(node_.Mark().line + 1);
  return file_;
}

void YamlField::expectMap(std::initializer_list<std::string_view> known) const {
  if (!node_.IsMap()) throw error("expected a map, found " + typeName(node_));
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    bool ok = false;
    for (auto k : known) ok = ok || k == key;
    if (!ok) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw ConfigError(YamlField(kv.first, file_, "").where(), joinPath(path_, key),
                        "unknown field (known: " + list + ")");
    }
  }
}

std::optional<YamlField> YamlField::get(std::string_view key) const {
  if (!node_.IsMap()) throw error("expected a map, found " + typeName(node_));
  YAML::Node n = node_[std::string(key)];
  if (!n || n.IsNull()) return std::nullopt;
  return child(n, joinPath(path_, key));
}

YamlField YamlField::require(std::string_view key) const {
  auto f = get(key);
  if (!f) throw ConfigError(where(), joinPath(path_, key), "is required");
  return *f;
}

std::vector<YamlField> YamlField::items() const {
  if (!node_.IsSequence()) throw error("expected a list, found " + typeName(node_));
  std::vector<YamlField> out;
  std::size_t i = 0;
  for (const auto& n : node_) out.push_back(child(n, path_ + "[" + std::to_string(i++) + "]"));
  return out;
}

std::vector<std::pair<std::string, YamlField>> YamlField::entries() const {
  if (!node_.IsMap()) throw error("expected a map, found " + typeName(node_));
  std::vector<std::pair<std::string, YamlField>> out;
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    out.emplace_back(key, child(kv.second, joinPath(path_, key)));
  }
  return out;
}

std::string YamlField::asString() const {
  if (!node_.IsScalar()) throw error("expected a string, found " + typeName(node_));
  return node_.Scalar();
}

bool YamlField::asBool() const {
  bool v;
  if (!node_.IsScalar() || !YAML::convert<bool>::decode(node_, v))
    throw error("expected true or false, found " + typeName(node_));
  return v;
}

long long YamlField::asInt() const {
  long long v;
  if (!node_.IsScalar() || !YAML::convert<long long>::decode(node_, v))
    throw error("expected an integer, found " + typeName(node_));
  return v;
}

long long YamlField::asInt(long long lo, long long hi) const {
  long long v = asInt();
  if (v < lo || v > hi)
    throw error("must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", found " +
                std::to_string(v));
  return v;
}

double YamlField::asDouble() const {
  double v;
  if (!node_.IsScalar() || !YAML::convert<double>::decode(node_, v))
    throw error("expected a number, found " + typeName(node_));
  // .nan would pass every range check (all comparisons are false); .inf and 1e999 are
  // never a meaningful rate, fraction or weight.
  if (!std::isfinite(v)) throw error("expected a finite number, found " + typeName(node_));
  return v;
}

std::vector<std::string> YamlField::asStrings() const {
  std::vector<std::string> out;
  for (const auto& item : items()) out.push_back(item.asString());
  return out;
}

YamlField loadYamlString(const std::string& text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    return YamlField(root, name, "");
  } catch (const YAML::Exception& e) {
    std::string where = name;
    if (e.mark.line >= 0) where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    throw ConfigError(where, "", "invalid YAML: " + e.msg);
  }
}

YamlField loadYamlFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path.string(), "", "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return loadYamlString(ss.str(), path.string());
}

}  // namespace cpscale
