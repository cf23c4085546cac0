#include "sim/run/shard_results.h"

#include <algorithm>
#include <charconv>

#include "sim/run/shard.h"
#include "workloads/workload.h"

namespace cpscale::run {
namespace {

using nlohmann::json;

const kube::ResourceRef kResults = kube::ResourceRef(kube::gvr::kConfigMaps).in(kMeetingNamespace);

std::string selector(const std::string& runId) { return std::string(kResultOfLabel) + "=" + runId; }

std::optional<std::size_t> number(const std::string& s) {
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// One ConfigMap's share of a result.
struct Chunk {
  std::string name;
  std::size_t index = 0;
  std::size_t of = 0;
  std::string text;
};

}  // namespace

std::string shardResultName(const std::string& runId, std::size_t shard, std::size_t chunk, std::size_t chunks) {
  std::string name = "cpscale-" + runId + "-result-" + std::to_string(shard);
  return chunks > 1 ? name + "-" + std::to_string(chunk) : name;
}

std::vector<std::string> splitUtf8(const std::string& text, std::size_t maxBytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size() || out.empty()) {
    std::size_t end = std::min(text.size(), at + maxBytes);
    // Back off to the first byte of a character: continuation bytes are 10xxxxxx.
    while (end < text.size() && end > at && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    if (end == at) end = std::min(text.size(), at + maxBytes);  // not UTF-8: cut anyway
    out.push_back(text.substr(at, end - at));
    at = end;
  }
  return out;
}

PublishOutcome publishShardResult(kube::ApiClient& api, const std::string& runId, std::size_t shard,
                                  const std::string& resultJson, std::size_t chunkBytes) {
  PublishOutcome out;
  const std::vector<std::string> chunks = splitUtf8(resultJson, chunkBytes);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    const std::string name = shardResultName(runId, shard, k, chunks.size());
    json cm = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata",
         {{"name", name}, {"labels", {{kResultOfLabel, runId}, {workloads::kShardLabel, std::to_string(shard)}}}}},
        {"data",
         {{"result.json", chunks[k]}, {"chunk", std::to_string(k)}, {"chunks", std::to_string(chunks.size())}}}};
    kube::ApiResult r = api.create(kResults, cm);
    if (!r.ok()) {
      out.detail = r.alreadyExists()
                       ? "ConfigMap " + std::string(kMeetingNamespace) + "/" + name + " exists already: shard " +
                             std::to_string(shard) + " of run " + runId +
                             " has published a result before (a run id is one run)"
                       : "creating ConfigMap " + std::string(kMeetingNamespace) + "/" + name + ": " + r.describe();
      // Half a result is worse than none: a reader would wait for the rest forever.
      for (const auto& created : out.names) api.remove(kResults.named(created));
      out.names.clear();
      return out;
    }
    out.names.push_back(name);
  }
  out.ok = true;
  return out;
}

CollectedResults readShardResults(kube::ApiClient& api, const std::string& runId, std::optional<std::size_t> shards) {
  CollectedResults out;
  out.shards = shards;
  std::map<std::size_t, std::vector<Chunk>> byShard;
  kube::ListOptions o;
  o.labelSelector = selector(runId);
  // Pages of a few: each ConfigMap may be close to 1 MiB.
  o.limit = 4;
  for (;;) {
    kube::ApiResult r = api.list(kResults, o);
    if (!r.ok()) {
      out.problems.push_back("listing the results: " + r.describe());
      break;
    }
    for (const auto& item : r.body.value("items", json::array())) {
      Chunk c;
      c.name = item.value("/metadata/name"_json_pointer, std::string());
      const auto shard =
          number(item.value("/metadata/labels"_json_pointer, json::object()).value(workloads::kShardLabel, ""));
      const json data = item.value("data", json::object());
      const auto index = number(data.value("chunk", ""));
      const auto of = number(data.value("chunks", ""));
      if (!shard || !index || !of || *index >= *of || !data.contains("result.json") ||
          !data["result.json"].is_string()) {
        out.problems.push_back("ConfigMap " + c.name + " is not a shard's result (labels " + kResultOfLabel + ", " +
                               workloads::kShardLabel + "; data chunk, chunks, result.json)");
        continue;
      }
      c.index = *index;
      c.of = *of;
      c.text = data["result.json"].get<std::string>();
      byShard[*shard].push_back(std::move(c));
    }
    o.continueToken = r.body.value("/metadata/continue"_json_pointer, std::string());
    if (o.continueToken.empty()) break;
  }

  for (auto& [shard, chunks] : byShard) {
    std::sort(chunks.begin(), chunks.end(), [](const Chunk& a, const Chunk& b) { return a.index < b.index; });
    bool whole = chunks.size() == chunks.front().of;
    for (std::size_t k = 0; whole && k < chunks.size(); ++k)
      whole = chunks[k].index == k && chunks[k].of == chunks.front().of;
    if (!whole) {
      // Being created right now, or left half by a publisher that died: not yet a result.
      out.problems.push_back("shard " + std::to_string(shard) + "'s result: " + std::to_string(chunks.size()) + " of " +
                             std::to_string(chunks.front().of) + " chunks");
      continue;
    }
    std::string text;
    for (const auto& c : chunks) text += c.text;
    out.results[shard] = std::move(text);
  }
  if (!out.shards) {
    // The shard count every result records.
    for (const auto& [shard, text] : out.results) {
      const json j = json::parse(text, nullptr, false);
      if (j.is_object() && j.contains("shard") && j["shard"].is_object() && j["shard"].value("count", 0) > 0) {
        out.shards = j["shard"]["count"].get<std::size_t>();
        break;
      }
    }
  }
  if (out.shards)
    for (std::size_t i = 0; i < *out.shards; ++i)
      if (!out.results.count(i)) out.missing.push_back(i);
  return out;
}

CollectedResults awaitShardResults(kube::ApiClient& api, engine::Clock& clock, const std::string& runId,
                                   std::optional<std::size_t> shards, engine::Duration timeout, engine::Duration poll,
                                   const std::function<bool()>& abandon,
                                   const std::function<void(const CollectedResults&)>& progress) {
  const engine::TimePoint deadline = clock.now() + timeout;
  for (;;) {
    CollectedResults c = readShardResults(api, runId, shards);
    if (c.complete() || clock.now() >= deadline || abandon()) return c;
    if (progress) progress(c);
    clock.sleepUntil(std::min(clock.now() + poll, deadline));
  }
}

std::vector<std::string> deleteShardResults(kube::ApiClient& api, const std::string& runId) {
  std::vector<std::string> errors;
  kube::ListOptions sel;
  sel.labelSelector = selector(runId);
  kube::ApiResult r = api.deleteCollection(kResults, sel);
  if (r.ok()) return errors;
  if (r.status != 403 && r.status != 405) return {r.describe()};
  // Allowed to delete, not to delete a collection: one by one.
  kube::ApiResult l = api.list(kResults, sel);
  if (!l.ok()) return {l.describe()};
  for (const auto& item : l.body.value("items", json::array())) {
    kube::ApiResult d = api.remove(kResults.named(item.value("/metadata/name"_json_pointer, std::string())));
    if (!d.ok() && !d.notFound()) errors.push_back(d.describe());
  }
  return errors;
}

}  // namespace cpscale::run
