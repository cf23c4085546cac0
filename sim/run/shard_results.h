// A sharded run's results, stored in the cluster for collection: each shard
// (`cpscale run --shard I/N --publish-result`, e.g. a pod of `cpscale job`'s Indexed
// Job, whose disk goes with it) stores its result.json in ConfigMaps beside the shards'
// meeting, in `default`; `cpscale collect` reads every shard's back, merges them and
// deletes them.
//
//   name    cpscale-<run>-result-<i>, or cpscale-<run>-result-<i>-<k> for chunk k of K
//           when the result is larger than one ConfigMap holds (1 MiB in all)
//   labels  cpscale.io/result-of=<run>, cpscale.io/shard=<i>
//   data    result.json: the text (chunk k), chunk: "k", chunks: "K"
//
// They deliberately do not carry cpscale.io/run: the run's cleanup (shard 0's at the
// end of the run, and `cpscale cleanup --run`) deletes everything with that label,
// and the results must outlive it until they are collected.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"

namespace cpscale::run {

inline constexpr const char* kResultOfLabel = "cpscale.io/result-of";
// The text one ConfigMap holds: under the 1 MiB an object may have, with room for its
// metadata.
inline constexpr std::size_t kResultChunkBytes = 900 * 1024;

// The ConfigMap holding chunk `chunk` of `chunks` of shard `shard`'s result.
std::string shardResultName(const std::string& runId, std::size_t shard, std::size_t chunk = 0, std::size_t chunks = 1);
// `text` in pieces of at most `maxBytes` (> 3), never splitting a UTF-8 character
// (ConfigMap data must be valid UTF-8 in every piece).
std::vector<std::string> splitUtf8(const std::string& text, std::size_t maxBytes);

struct PublishOutcome {
  bool ok = false;
  std::vector<std::string> names;  // the ConfigMaps created (all of them, when ok)
  std::string detail;              // what went wrong, one line
};
// Creates the ConfigMaps holding `resultJson`. A ConfigMap of that name already there
// is a failure (a run id is one run); on any failure the ConfigMaps already created
// are deleted again, so that a reader never sees half a result.
PublishOutcome publishShardResult(kube::ApiClient& api, const std::string& runId, std::size_t shard,
                                  const std::string& resultJson, std::size_t chunkBytes = kResultChunkBytes);

struct CollectedResults {
  // The number of shards: as asked, else as the first complete result says.
  std::optional<std::size_t> shards;
  std::map<std::size_t, std::string> results;  // complete results by shard
  std::vector<std::size_t> missing;            // shards below `shards` without one
  // Chunks that do not make a whole result, labels that do not parse, a failed read.
  std::vector<std::string> problems;
  bool complete() const { return shards && missing.empty(); }
};
// One look at what the shards of `runId` have published (a paged LIST by label).
CollectedResults readShardResults(kube::ApiClient& api, const std::string& runId,
                                  std::optional<std::size_t> shards = std::nullopt);
// Looks every `poll` until every shard's result is there, `timeout` passed or
// `abandon` says so; `progress` hears of each look that is not complete yet.
CollectedResults awaitShardResults(kube::ApiClient& api, engine::Clock& clock, const std::string& runId,
                                   std::optional<std::size_t> shards, engine::Duration timeout, engine::Duration poll,
                                   const std::function<bool()>& abandon,
                                   const std::function<void(const CollectedResults&)>& progress = {});
// Deletes every result ConfigMap of the run. Returns the failures, one line each.
std::vector<std::string> deleteShardResults(kube::ApiClient& api, const std::string& runId);

}  // namespace cpscale::run
