// A run's client-side request statistics as JSON: every histogram's cells, so that the
// shards of a sharded run can be merged exactly (`cpscale merge`): a merged histogram
// is the histogram of every shard's samples together, not an average of percentiles.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "sim/load/request_stats.h"

namespace cpscale::result {

namespace jsonio {
class Reader;
}  // namespace jsonio

nlohmann::json histogramJson(const engine::HdrHistogram& h);
engine::HdrHistogram histogramFromJson(const jsonio::Reader& r);

nlohmann::json requestStatsJson(const load::RequestStats& stats);
// Throws ConfigError naming the document and the JSON path of what is wrong.
load::RequestStats requestStatsFromJson(const jsonio::Reader& r);

}  // namespace cpscale::result
