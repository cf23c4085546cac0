#include "sim/run/shard.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "sim/common/duration.h"
#include "sim/common/error.h"
#include "workloads/params.h"

namespace cpscale::run {
namespace {

using nlohmann::json;

const kube::ResourceRef kMeetings = kube::ResourceRef(kube::gvr::kConfigMaps).in(kMeetingNamespace);

std::optional<std::size_t> number(std::string_view s) {
  std::size_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

ShardSpec parseShard(const std::string& text) {
  const auto slash = text.find('/');
  const auto bad = [&](const std::string& why) {
    return ConfigError("command line", "--shard", "'" + text + "': " + why);
  };
  if (slash == std::string::npos) throw bad("expected I/N, e.g. 0/4 (shard I of N, from 0)");
  auto i = number(std::string_view(text).substr(0, slash));
  auto n = number(std::string_view(text).substr(slash + 1));
  if (!i || !n) throw bad("expected I/N with whole numbers, e.g. 0/4");
  if (*n < 1 || *n > 1024) throw bad("N must be 1 to 1024");
  if (*i >= *n) throw bad("I counts from 0 and must be below N");
  return {*i, *n};
}

std::string shardMeetingName(const std::string& runId) { return "cpscale-" + runId + "-shards"; }

ShardMeeting::ShardMeeting(kube::ApiClient& api, std::string runId, ShardSpec shard)
    : api_(api), runId_(std::move(runId)), shard_(shard) {}

void ShardMeeting::announceSetup() {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", shardMeetingName(runId_)}, {"labels", workloads::runLabels(runId_, "shards")}}},
             {"data", {{"shards", std::to_string(shard_.count)}}}};
  kube::ApiResult r = api_.create(kMeetings, cm);
  if (r.alreadyExists())
    throw UnavailableError("run " + runId_ + " has met before (ConfigMap default/" + shardMeetingName(runId_) +
                           " exists): give every shard of a new run a new --run-id");
  if (!r.ok()) throw UnavailableError("announcing the run's setup to the other shards: " + r.describe());
}

std::optional<json> ShardMeeting::read() {
  kube::ApiResult r = api_.get(kMeetings.named(shardMeetingName(runId_)));
  if (!r.ok()) return std::nullopt;
  return r.body.value("data", json::object());
}

bool ShardMeeting::patch(const json& data) {
  return api_.patchMerge(kMeetings.named(shardMeetingName(runId_)), {{"data", data}}).ok();
}

std::vector<std::size_t> ShardMeeting::missing(const json& data, const std::string& prefix) const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < shard_.count; ++i)
    if (!data.contains(prefix + std::to_string(i))) out.push_back(i);
  return out;
}

void ShardMeeting::awaitSetup(engine::Duration timeout, const std::function<bool()>& abandon) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto data = read()) {
      const std::string n = data->value("shards", "");
      if (n != std::to_string(shard_.count))
        throw UnavailableError("shard 0 of run " + runId_ + " runs " + n + " shards, this one was told " +
                               std::to_string(shard_.count));
      return;
    }
    if (abandon()) throw UnavailableError("interrupted while waiting for shard 0 to set the run up");
    if (std::chrono::steady_clock::now() >= until)
      throw UnavailableError("shard 0 did not set run " + runId_ +
                             " up within the setup timeout (no ConfigMap default/" + shardMeetingName(runId_) + ")");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

std::optional<std::int64_t> ShardMeeting::steadyAt(std::int64_t unixNow, std::chrono::nanoseconds lead) {
  if (steadyAt_) return steadyAt_;
  if (!saidReady_) saidReady_ = patch({{"ready-" + std::to_string(shard_.index), std::to_string(unixNow)}});
  if (unixNow - lastRead_ < 500'000'000) return std::nullopt;
  lastRead_ = unixNow;
  auto data = read();
  if (!data) return std::nullopt;
  if (auto at = data->find("steadyAt"); at != data->end() && at->is_string()) {
    std::int64_t v = 0;
    const std::string s = at->get<std::string>();
    if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc()) steadyAt_ = v;
    return steadyAt_;
  }
  notReady_ = missing(*data, "ready-");
  if (shard_.index == 0 && notReady_.empty()) {
    const std::int64_t at = unixNow + lead.count();
    if (patch({{"steadyAt", std::to_string(at)}})) steadyAt_ = at;
  }
  return steadyAt_;
}

std::vector<std::size_t> ShardMeeting::notReady() const { return notReady_; }

void ShardMeeting::announceDone() { patch({{"done-" + std::to_string(shard_.index), std::to_string(unixNowNanos())}}); }

std::vector<std::size_t> ShardMeeting::awaitDone(engine::Duration timeout, const std::function<bool()>& abandon) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  std::vector<std::size_t> left(shard_.count);
  for (std::size_t i = 0; i < shard_.count; ++i) left[i] = i;
  for (;;) {
    if (auto data = read()) left = missing(*data, "done-");
    if (left.empty() || abandon() || std::chrono::steady_clock::now() >= until) return left;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void ShardMeeting::remove() { api_.remove(kMeetings.named(shardMeetingName(runId_))); }

}  // namespace cpscale::run
