#include "sim/calibration/calibration_file.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <system_error>

#include "sim/common/error.h"
#include "sim/result/json_io.h"

namespace cpscale::calibration {

using model::BackgroundRate;
using model::Calibration;
using model::CpuSet;
using model::FitQuality;
using model::kCalibrationVersion;
using model::Param;
using model::ValidationEntry;

namespace {

using nlohmann::json;

constexpr const char* kKind = "Calibration";

// In the order the file lists them.
constexpr ParamField kParams[] = {
    {"apiserverIdleCores", &Calibration::apiserverIdleCores, "cores"},
    {"apiserverCpuLeaseWrite", &Calibration::apiserverCpuLeaseWrite, "core-s"},
    {"apiserverCpuWrite", &Calibration::apiserverCpuWrite, "core-s"},
    {"apiserverCpuCustomWrite", &Calibration::apiserverCpuCustomWrite, "core-s"},
    {"apiserverCpuEventWrite", &Calibration::apiserverCpuEventWrite, "core-s"},
    {"apiserverCpuRead", &Calibration::apiserverCpuRead, "core-s"},
    {"apiserverCpuWatchDispatch", &Calibration::apiserverCpuWatchDispatch, "core-s"},
    {"apiserverCpuWatchEvent", &Calibration::apiserverCpuWatchEvent, "core-s"},
    {"apiserverCpuListObject", &Calibration::apiserverCpuListObject, "core-s"},
    {"etcdIdleCores", &Calibration::etcdIdleCores, "cores"},
    {"etcdCpuPerProposal", &Calibration::etcdCpuPerProposal, "core-s"},
    {"generatorCpuPerRequest", &Calibration::generatorCpuPerRequest, "core-s"},
    {"latencyRead", &Calibration::latencyRead, "s"},
    {"latencyWrite", &Calibration::latencyWrite, "s"},
    {"heapBaseBytes", &Calibration::heapBaseBytes, "bytes"},
    {"heapPerObject", &Calibration::heapPerObject, "bytes"},
    {"heapPerObjectByte", &Calibration::heapPerObjectByte, "bytes"},
    {"heapPerCustomResourceEvent", &Calibration::heapPerCustomResourceEvent, "bytes"},
    {"heapPerCustomResource", &Calibration::heapPerCustomResource, "bytes"},
    {"heapPerWatch", &Calibration::heapPerWatch, "bytes"},
    {"etcdDbBaseBytes", &Calibration::etcdDbBaseBytes, "bytes"},
    {"etcdDbBytesPerWrite", &Calibration::etcdDbBytesPerWrite, "bytes"},
    {"etcdFsyncSeconds", &Calibration::etcdFsyncSeconds, "s"},
};

json paramJson(const Param& p) { return {{"value", p.value}, {"low", p.low}, {"high", p.high}}; }

using result::jsonio::Reader;

// On top of the result documents' reader: a calibration holds only finite numbers.
double finite(const Reader& r) {
  const double v = r.num();
  if (!std::isfinite(v)) r.fail("expected a finite number");
  return v;
}
double nonNegative(const Reader& r) {
  const double v = finite(r);
  if (v < 0) r.fail("must not be negative (is " + std::to_string(v) + ")");
  return v;
}

Param readParam(const Reader& f) {
  f.object();
  Param p{finite(f.at("value")), finite(f.at("low")), finite(f.at("high"))};
  if (p.low > p.value)
    f.at("low").fail("is above value (" + std::to_string(p.low) + " > " + std::to_string(p.value) + ")");
  if (p.high < p.value)
    f.at("high").fail("is below value (" + std::to_string(p.high) + " < " + std::to_string(p.value) + ")");
  return p;
}

}  // namespace

std::span<const ParamField> calibrationParams() { return kParams; }

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
  json placement = json::array();
  for (const CpuSet& set : c.placement)
    placement.push_back({{"cpus", set.cpus}, {"cores", set.cores}, {"roles", set.roles}});
  j["placement"] = std::move(placement);
  for (const ParamField& f : kParams) j[f.name] = paramJson(c.*f.member);
  json byResource = json::object();
  for (const auto& [resource, bytes] : c.heapBytesPerObjectByResource) byResource[resource] = bytes;
  j["heapBytesPerObjectByResource"] = std::move(byResource);
  j["rssOverHeap"] = c.rssOverHeap;
  json watchers = json::object();
  for (const auto& [resource, n] : c.planeWatchers) watchers[resource] = n;
  j["planeWatchers"] = std::move(watchers);
  j["planeWatchersPerCustomResource"] = c.planeWatchersPerCustomResource;
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
  j["validation"] = validationJson(c.validation);
  if (!c.notes.empty()) j["notes"] = c.notes;
  return j;
}

json validationJson(const std::vector<ValidationEntry>& validation) {
  json out = json::array();
  for (const ValidationEntry& v : validation)
    out.push_back({{"figure", v.figure},
                   {"live", v.live},
                   {"model", v.model},
                   {"relativeError", v.relativeError},
                   {"tolerance", v.tolerance}});
  return out;
}

std::optional<double> maxValidationError(const Calibration& c) {
  std::optional<double> worst;
  for (const ValidationEntry& v : c.validation) worst = std::max(worst.value_or(0), v.relativeError);
  return worst;
}

std::string calibrationMachine(const Calibration& c) {
  return c.host + " (" + std::to_string(c.cpus) + " CPUs" + (c.cpuModel.empty() ? "" : ", " + c.cpuModel) + ")";
}

Calibration calibrationFromJson(const json& j, const std::filesystem::path& file) {
  const std::string where = file.string();
  Reader root(j, where, "");
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
    double v = finite(root.at(name));
    if (v <= 0) root.at(name).fail("must be positive (is " + std::to_string(v) + ")");
    return v;
  };
  c.hostCores = positive("hostCores");
  c.sharedHost = root.at("sharedHost").boolean();
  c.apiserverCores = positive("apiserverCores");
  c.etcdCores = positive("etcdCores");
  for (const ParamField& f : kParams) {
    // Before the pods probes, one cost stood for every write but a Lease's.
    if ((f.member == &Calibration::apiserverCpuCustomWrite || f.member == &Calibration::apiserverCpuEventWrite) &&
        !root.has(f.name)) {
      c.*f.member = c.apiserverCpuWrite;
      continue;
    }
    c.*f.member = readParam(root.at(f.name));
  }
  Reader placement = root.at("placement");
  for (std::size_t i = 0; i < placement.array().size(); ++i) {
    Reader p = placement.at(i);
    CpuSet set;
    set.cpus = p.at("cpus").str();
    set.cores = finite(p.at("cores"));
    if (set.cores <= 0) p.at("cores").fail("must be positive");
    Reader roles = p.at("roles");
    for (std::size_t k = 0; k < roles.array().size(); ++k) set.roles.push_back(roles.at(k).str());
    c.placement.push_back(std::move(set));
  }
  if (!c.placement.empty() && c.sharedHost)
    root.at("sharedHost").fail("is true beside a placement: a pinned calibration's host is its placement");

  Reader byResource = root.at("heapBytesPerObjectByResource");
  for (const auto& [resource, v] : byResource.object().items()) {
    (void)v;
    c.heapBytesPerObjectByResource[resource] = nonNegative(byResource.at(resource));
  }
  c.rssOverHeap = positive("rssOverHeap");
  Reader watchers = root.at("planeWatchers");
  for (const auto& [resource, v] : watchers.object().items()) {
    (void)v;
    c.planeWatchers[resource] = nonNegative(watchers.at(resource));
  }
  c.planeWatchersPerCustomResource = nonNegative(root.at("planeWatchersPerCustomResource"));

  Reader background = root.at("background");
  for (std::size_t i = 0; i < background.array().size(); ++i) {
    Reader b = background.at(i);
    c.background.push_back(
        {b.at("resource").str(), b.at("group").str(), b.at("verb").str(), nonNegative(b.at("perSecond"))});
  }
  Reader fits = root.at("fits");
  for (std::size_t i = 0; i < fits.array().size(); ++i) {
    Reader f = fits.at(i);
    FitQuality q;
    q.name = f.at("name").str();
    auto count = [&](const char* name) {
      std::int64_t v = f.at(name).integer();
      if (v < 0) f.at(name).fail("must not be negative");
      return static_cast<std::size_t>(v);
    };
    q.observations = count("observations");
    q.parameters = count("parameters");
    q.r2 = finite(f.at("r2"));
    q.residualStd = nonNegative(f.at("residualStd"));
    c.fits.push_back(std::move(q));
  }
  Reader validation = root.at("validation");
  for (std::size_t i = 0; i < validation.array().size(); ++i) {
    Reader v = validation.at(i);
    c.validation.push_back({v.at("figure").str(), finite(v.at("live")), finite(v.at("model")),
                            nonNegative(v.at("relativeError")), nonNegative(v.at("tolerance"))});
  }
  if (root.has("notes")) {
    Reader notes = root.at("notes");
    for (std::size_t i = 0; i < notes.array().size(); ++i) c.notes.push_back(notes.at(i).str());
  }
  return c;
}

Calibration readCalibration(const std::filesystem::path& file) {
  return calibrationFromJson(result::jsonio::readJsonFile(file), file);
}

void writeCalibration(const Calibration& c, const std::filesystem::path& file) {
  result::jsonio::writeFile(file, toJson(c).dump(2) + "\n");
}

}  // namespace cpscale::calibration
