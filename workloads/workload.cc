#include "workloads/workload.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/common/error.h"

#include "workloads/params.h"

namespace cpscale::workloads {

void PhaseLog::releaseFreeMemory() { ::malloc_trim(0); }

nlohmann::json WorkloadContext::labels(const std::string& workload) const {
  nlohmann::json l = runLabels(runId, workload);
  if (shards > 1) l[kShardLabel] = std::to_string(shard);
  return l;
}

namespace {

std::string number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

}  // namespace

void checkGrowth(const Workload& w, const std::string& field, double from, double to, double max, bool whole,
                 double own, std::string_view ownWhat) {
  const std::string where = "workload '" + w.name() + "'";
  if (!std::isfinite(from) || !std::isfinite(to))
    throw ConfigError(where, field, "growth bounds must be finite numbers");
  if (whole && (from != std::floor(from) || to != std::floor(to))) {
    throw ConfigError(where, field, "is a count: cannot grow from " + number(from) + " to " + number(to));
  }
  if (from < 0) throw ConfigError(where, field, "cannot grow from a negative value (" + number(from) + ")");
  if (!(to > from)) {
    throw ConfigError(where, field,
                      "growth must go up: to (" + number(to) + ") must exceed from (" + number(from) + ")");
  }
  if (to > max) throw ConfigError(where, field, "cannot grow to " + number(to) + ": at most " + number(max));
  if (from < own)
    throw ConfigError(where, field,
                      "cannot grow from " + number(from) + ": " + std::string(ownWhat) + " below " + number(own) +
                          " are this workload's own");
}

}  // namespace cpscale::workloads
