#include "sim/model/calibration.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <system_error>

#include "sim/common/error.h"

namespace cpscale::model {

namespace {

using nlohmann::json;

constexpr const char* kKind = "Calibration";

// The parameters in the order the file lists them, with their members.
struct ParamField {
  const char* name;
  Param Calibration::*member;
};
constexpr ParamField kParams[] = {
    {"apiserverIdleCores", &Calibration::apiserverIdleCores},
    {"apiserverCpuLeaseWrite", &Calibration::apiserverCpuLeaseWrite},
    {"apiserverCpuWrite", &Calibration::apiserverCpuWrite},
    {"apiserverCpuRead", &Calibration::apiserverCpuRead},
    {"apiserverCpuWatchEvent", &Calibration::apiserverCpuWatchEvent},
    {"etcdIdleCores", &Calibration::etcdIdleCores},
    {"etcdCpuPerProposal", &Calibration::etcdCpuPerProposal},
    {"generatorCpuPerRequest", &Calibration::generatorCpuPerRequest},
    {"latencyRead", &Calibration::latencyRead},
    {"latencyWrite", &Calibration::latencyWrite},
    {"heapBaseBytes", &Calibration::heapBaseBytes},
    {"heapPerObject", &Calibration::heapPerObject},
    {"heapPerObjectByte", &Calibration::heapPerObjectByte},
    {"etcdDbBaseBytes", &Calibration::etcdDbBaseBytes},
    {"etcdDbBytesPerWrite", &Calibration::etcdDbBytesPerWrite},
    {"etcdFsyncSeconds", &Calibration::etcdFsyncSeconds},
};

json paramJson(const Param& p) { return {{"value", p.value}, {"low", p.low}, {"high", p.high}}; }

// A JSON value and its path in the file: every accessor names the field it fails on.
class Field {
 public:
  Field(const json& j, const std::string& file, std::string path) : j_(j), file_(file), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const { throw ConfigError(file_, path_.empty() ? "/" : path_, what); }

  Field at(const std::string& key) const {
    if (!j_.is_object()) fail("expected an object");
    auto it = j_.find(key);
    if (it == j_.end()) throw ConfigError(file_, path_ + "/" + key, "is missing");
    return Field(*it, file_, path_ + "/" + key);
  }
  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key); }
  Field at(std::size_t i) const { return Field(j_.at(i), file_, path_ + "/" + std::to_string(i)); }
  std::size_t size() const {
    if (!j_.is_array()) fail("expected an array");
    return j_.size();
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
    if (!j_.is_number()) fail("expected a number");
    double v = j_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    return v;
  }
  double nonNegative() const {
    double v = num();
    if (v < 0) fail("must not be negative (is " + std::to_string(v) + ")");
    return v;
  }
  std::int64_t integer() const {
    if (!j_.is_number_integer()) fail("expected an integer");
    return j_.get<std::int64_t>();
  }

 private:
  const json& j_;
  const std::string& file_;
  std::string path_;
};

Param readParam(const Field& f) {
  f.object();
  Param p{f.at("value").num(), f.at("low").num(), f.at("high").num()};
  if (p.low > p.value) f.at("low").fail("is above value (" + std::to_string(p.low) + " > " + std::to_string(p.value) + ")");
  if (p.high < p.value)
    f.at("high").fail("is below value (" + std::to_string(p.high) + " < " + std::to_string(p.value) + ")");
  return p;
}

void writeAtomically(const std::filesystem::path& path, const std::string& content) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw std::runtime_error("cannot create directory " + path.parent_path().string() + ": " + ec.message());
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw std::runtime_error("cannot write " + path.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
  }
}

}  // namespace

std::filesystem::path defaultCalibrationPath() {
  return std::filesystem::path(CPSCALE_SOURCE_DIR) / "profiles" / "calibration" / "default.json";
}

json toJson(const Calibration& c) {
  json j = {
      {"kind", kKind},
      {"version", c.version},
      {"measuredAt", c.measuredAt},
      {"host", c.host},
      {"cpus", c.cpus},
      {"cpuModel", c.cpuModel},
      {"kubernetesVersion", c.kubernetesVersion},
      {"etcdVersion", c.etcdVersion},
      {"profile", c.profile},
      {"hostCores", c.hostCores},
      {"sharedHost", c.sharedHost},
      {"apiserverCores", c.apiserverCores},
      {"etcdCores", c.etcdCores},
  };
  for (const ParamField& f : kParams) j[f.name] = paramJson(c.*f.member);
  json byResource = json::object();
  for (const auto& [resource, bytes] : c.heapBytesPerObjectByResource) byResource[resource] = bytes;
  j["heapBytesPerObjectByResource"] = std::move(byResource);
  j["rssOverHeap"] = c.rssOverHeap;
  json background = json::array();
  for (const BackgroundRate& b : c.background)
    background.push_back({{"resource", b.resource}, {"group", b.group}, {"verb", b.verb}, {"perSecond", b.perSecond}});
  j["background"] = std::move(background);
  json fits = json::array();
  for (const FitQuality& f : c.fits)
    fits.push_back({{"name", f.name},
                    {"observations", f.observations},
                    {"parameters", f.parameters},
                    {"r2", f.r2},
                    {"residualStd", f.residualStd}});
  j["fits"] = std::move(fits);
  json validation = json::array();
  for (const ValidationEntry& v : c.validation)
    validation.push_back({{"figure", v.figure},
                          {"live", v.live},
                          {"model", v.model},
                          {"relativeError", v.relativeError},
                          {"tolerance", v.tolerance}});
  j["validation"] = std::move(validation);
  if (!c.notes.empty()) j["notes"] = c.notes;
  return j;
}

Calibration calibrationFromJson(const json& j, const std::filesystem::path& file) {
  const std::string where = file.string();
  Field root(j, where, "");
  root.object();
  // Identify the document first: a wrong file should say so, not complain about a field.
  if (std::string k = root.at("kind").str(); k != kKind)
    root.at("kind").fail("is '" + k + "', not a " + std::string(kKind));
  Calibration c;
  c.version = static_cast<int>(root.at("version").integer());
  if (c.version != kCalibrationVersion)
    root.at("version").fail("is " + std::to_string(c.version) + "; this cpscale reads version " +
                            std::to_string(kCalibrationVersion) + " (re-run `cpscale calibrate`)");
  c.source = file;
  c.measuredAt = root.at("measuredAt").str();
  c.host = root.at("host").str();
  c.cpus = static_cast<int>(root.at("cpus").integer());
  if (c.cpus < 0) root.at("cpus").fail("must not be negative");
  c.cpuModel = root.at("cpuModel").str();
  c.kubernetesVersion = root.at("kubernetesVersion").str();
  c.etcdVersion = root.at("etcdVersion").str();
  c.profile = root.at("profile").str();
  auto positive = [&](const char* name) {
    double v = root.at(name).num();
    if (v <= 0) root.at(name).fail("must be positive (is " + std::to_string(v) + ")");
    return v;
  };
  c.hostCores = positive("hostCores");
  c.sharedHost = root.at("sharedHost").boolean();
  c.apiserverCores = positive("apiserverCores");
  c.etcdCores = positive("etcdCores");
  for (const ParamField& f : kParams) c.*f.member = readParam(root.at(f.name));

  Field byResource = root.at("heapBytesPerObjectByResource");
  for (const auto& [resource, v] : byResource.object().items()) {
    (void)v;
    c.heapBytesPerObjectByResource[resource] = byResource.at(resource).nonNegative();
  }
  c.rssOverHeap = positive("rssOverHeap");

  Field background = root.at("background");
  for (std::size_t i = 0; i < background.size(); ++i) {
    Field b = background.at(i);
    c.background.push_back({b.at("resource").str(), b.at("group").str(), b.at("verb").str(),
                            b.at("perSecond").nonNegative()});
  }
  Field fits = root.at("fits");
  for (std::size_t i = 0; i < fits.size(); ++i) {
    Field f = fits.at(i);
    FitQuality q;
    q.name = f.at("name").str();
    auto count = [&](const char* name) {
      std::int64_t v = f.at(name).integer();
      if (v < 0) f.at(name).fail("must not be negative");
      return static_cast<std::size_t>(v);
    };
    q.observations = count("observations");
    q.parameters = count("parameters");
    q.r2 = f.at("r2").num();
    q.residualStd = f.at("residualStd").nonNegative();
    c.fits.push_back(std::move(q));
  }
  Field validation = root.at("validation");
  for (std::size_t i = 0; i < validation.size(); ++i) {
    Field v = validation.at(i);
    c.validation.push_back({v.at("figure").str(), v.at("live").num(), v.at("model").num(),
                            v.at("relativeError").nonNegative(), v.at("tolerance").nonNegative()});
  }
  if (root.has("notes")) {
    Field notes = root.at("notes");
    for (std::size_t i = 0; i < notes.size(); ++i) c.notes.push_back(notes.at(i).str());
  }
  return c;
}

Calibration readCalibration(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string(), "", "cannot be read (does it exist? `cpscale calibrate` writes one)");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ConfigError(file.string(), "", std::string("is not valid JSON: ") + e.what());
  }
  return calibrationFromJson(j, file);
}

void writeCalibration(const Calibration& c, const std::filesystem::path& file) {
  writeAtomically(file, toJson(c).dump(2) + "\n");
}

}  // namespace cpscale::model
