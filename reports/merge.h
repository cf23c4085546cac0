// `cpscale merge`: a sharded run's results (one per shard, `cpscale run --shard I/N`)
// as one result. The client figures of the steady window are computed again from every
// shard's request statistics merged exactly (histograms added cell by cell: a merged
// p99 is the p99 of all requests, not an average of the shards' p99s); the servers'
// figures are shard 0's, which alone scraped them; generator health and the figures of
// the other windows stay per shard (label `shard`), with generator_limited true when
// any shard was. The scenario's gates are judged again on the merged figures.
#pragma once

#include <string>
#include <vector>

#include "sim/result/result.h"

namespace cpscale::reports {

// `names[i]` names `shards[i]` in errors (its file). Throws ConfigError(name, JSON
// path, what) when the results are not one run's shards, each once, each with its
// client statistics.
result::RunResult mergeShards(std::vector<result::RunResult> shards, const std::vector<std::string>& names);

}  // namespace cpscale::reports
