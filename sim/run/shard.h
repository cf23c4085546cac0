// Sharded generation: one run driven by N cpscale processes (`cpscale run --shard I/N`,
// e.g. the pods of an Indexed Job), each driving its share of every population. They
// meet on one ConfigMap in `default`, cpscale-<run id>-shards, labelled with the run:
//
//   shards     "N"      shard 0, once the run is set up (CRDs, namespaces): the others
//                       start their load only then
//   ready-<i>  Unix ns  shard i's setup and warmup are over
//   steadyAt   Unix ns  shard 0, once every shard is ready: every shard's steady window
//                       starts at this wall-clock instant
//   done-<i>   Unix ns  shard i's load is over; shard 0 cleans up once all are
//
// Only shard 0 prepares the run, scrapes the servers and cleans up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine/clock.h"
#include "sim/kube/api_client.h"

namespace cpscale::run {

struct ShardSpec {
  std::size_t index = 0;
  std::size_t count = 1;
  bool sharded() const { return count > 1; }
};

// "I/N" with 0 <= I < N <= 1024. Throws ConfigError("command line", "--shard", ...).
ShardSpec parseShard(const std::string& text);

// The ConfigMap a sharded run's processes meet on, and its namespace (where their
// results are published too, see shard_results.h).
std::string shardMeetingName(const std::string& runId);
inline constexpr const char* kMeetingNamespace = "default";

class ShardMeeting {
 public:
  // `api`: synchronous calls (the run's setup client), used from one thread at a time.
  ShardMeeting(kube::ApiClient& api, std::string runId, ShardSpec shard);

  // Shard 0, once the run is prepared. Throws UnavailableError if this run id has a
  // meeting already (a run id is one run).
  void announceSetup();
  // Shards above 0: waits (polling every second) for shard 0's announcement. Throws
  // UnavailableError if it does not come within `timeout`, if `abandon` says so, or if
  // shard 0 runs another shard count.
  void awaitSetup(engine::Duration timeout, const std::function<bool()>& abandon);
  // On each supervisor pass once this shard could start its window: says so (once);
  // shard 0 then fixes the shared start, `lead` after every shard has said so. Returns
  // the shared start (Unix ns) once there is one. Reads the server at most every
  // 500 ms; a failed read is tried again on a later pass.
  std::optional<std::int64_t> steadyAt(std::int64_t unixNow, std::chrono::nanoseconds lead = std::chrono::seconds(2));
  // The shards not ready yet, as last read (for a run that gives up on them).
  std::vector<std::size_t> notReady() const;
  // Best effort: this shard's load is over.
  void announceDone();
  // Shard 0: waits until every shard is done, at most `timeout`. Returns those not done.
  std::vector<std::size_t> awaitDone(engine::Duration timeout, const std::function<bool()>& abandon);
  // Shard 0, last: deletes the meeting.
  void remove();

 private:
  std::optional<nlohmann::json> read();
  bool patch(const nlohmann::json& data);
  std::vector<std::size_t> missing(const nlohmann::json& data, const std::string& prefix) const;

  kube::ApiClient& api_;
  std::string runId_;
  ShardSpec shard_;
  bool saidReady_ = false;
  std::optional<std::int64_t> steadyAt_;
  std::int64_t lastRead_ = 0;
  std::vector<std::size_t> notReady_;
};

}  // namespace cpscale::run
