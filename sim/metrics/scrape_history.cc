#include "sim/metrics/scrape_history.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>
#include <utility>

namespace cpscale::metrics {

std::string_view toString(TargetRole r) {
  switch (r) {
    case TargetRole::kApiserver: return "apiserver";
    case TargetRole::kEtcd: return "etcd";
    case TargetRole::kControllerManager: return "kube-controller-manager";
    case TargetRole::kScheduler: return "kube-scheduler";
  }
  return "apiserver";
}

namespace {
// "Not in this scrape": a NaN with a payload no parser produces, so a real NaN value
// (a summary quantile with no observations) stays distinguishable at 8 bytes a cell.
constexpr std::uint64_t kAbsentBits = 0x7ff8'00ab'5e47'0001ULL;
const double kAbsent = std::bit_cast<double>(kAbsentBits);
bool isAbsent(double v) { return std::bit_cast<std::uint64_t>(v) == kAbsentBits; }

bool sameSeries(const SeriesKey& k, const Sample& s) { return k.name == s.name && k.labels == s.labels; }

constexpr std::string_view kStartTime = "process_start_time_seconds";
constexpr std::string_view kEtcdServerId = "etcd_server_id";
constexpr std::string_view kCpuSeconds = "process_cpu_seconds_total";

ScrapeIdentity identityOf(const FamilyMap& families) {
  ScrapeIdentity id;
  if (auto it = families.find(kStartTime); it != families.end() && !it->second.samples.empty()) {
    id.startTime = it->second.samples.front().value;
  }
  if (auto it = families.find(kCpuSeconds); it != families.end() && !it->second.samples.empty()) {
    id.cpuSeconds = it->second.samples.front().value;
  }
  if (auto it = families.find(kEtcdServerId); it != families.end() && !it->second.samples.empty()) {
    id.replica = std::string(labelValue(it->second.samples.front().labels, "server_id"));
  }
  for (const auto& [name, fam] : families) {
    if (!id.replica.empty()) break;
    for (const Sample& s : fam.samples) {
      std::string_view hash = labelValue(s.labels, "apiserver_id_hash");
      if (!hash.empty()) {
        id.replica = std::string(hash);
        break;
      }
    }
  }
  return id;
}
}  // namespace

std::string ScrapeHistory::canonical(std::string_view name, const Labels& labels) {
  std::string key(name);
  for (const Label& l : labels) {
    // \x1f/\x1e cannot appear in names and are vanishingly rare in values; a collision
    // would need both, in the same metric.
    key += '\x1f';
    key += l.name;
    key += '\x1e';
    key += l.value;
  }
  return key;
}

void ScrapeHistory::record(engine::TimePoint at, const FamilyMap& families) {
  std::vector<double> row(keys_.size(), kAbsent);
  std::vector<SeriesId> order;
  order.reserve(lastOrder_.size());
  std::size_t pos = 0;
  for (const auto& [famName, fam] : families) {
    types_.insert_or_assign(famName, fam.type);
    for (const Sample& s : fam.samples) {
      SeriesId id;
      if (pos < lastOrder_.size() && sameSeries(keys_[lastOrder_[pos]], s)) {
        id = lastOrder_[pos];
      } else {
        std::string c = canonical(s.name, s.labels);
        auto it = index_.find(c);
        if (it != index_.end()) {
          id = it->second;
        } else {
          id = keys_.size();
          keys_.push_back(SeriesKey{s.name, s.labels});
          index_.emplace(std::move(c), id);
          auto bn = byName_.find(s.name);
          if (bn == byName_.end()) bn = byName_.emplace(s.name, std::vector<SeriesId>{}).first;
          bn->second.push_back(id);
          row.push_back(kAbsent);
        }
      }
      row[id] = s.value;
      order.push_back(id);
      ++pos;
    }
  }
  lastOrder_ = std::move(order);
  times_.push_back(at);
  identities_.push_back(identityOf(families));
  const ScrapeIdentity& id = identities_.back();
  bool sameProcess = !processes_.ofScrape.empty() && (!id.startTime || id.startTime == lastFilled_.startTime) &&
                     (id.replica.empty() || id.replica == lastFilled_.replica);
  if (sameProcess)
    processes_.ofScrape.push_back(processes_.ofScrape.back());
  else
    recomputeProcesses();
  rows_.push_back(std::move(row));
}

std::optional<double> ScrapeHistory::value(std::size_t scrape, SeriesId id) const {
  const std::vector<double>& row = rows_[scrape];
  if (id >= row.size() || isAbsent(row[id])) return std::nullopt;
  return row[id];
}

const std::vector<ScrapeHistory::SeriesId>& ScrapeHistory::seriesNamed(std::string_view name) const {
  static const std::vector<SeriesId> kNone;
  auto it = byName_.find(name);
  return it == byName_.end() ? kNone : it->second;
}

MetricType ScrapeHistory::familyType(std::string_view family) const {
  auto it = types_.find(family);
  return it == types_.end() ? MetricType::kUntyped : it->second;
}

TimeSeries ScrapeHistory::gauge(SeriesId id) const {
  TimeSeries out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (auto v = value(r, id)) out.push(times_[r], *v);
  }
  return out;
}

void ScrapeHistory::recomputeProcesses() {
  ScrapeProcesses& p = processes_;
  p = {};
  lastFilled_ = {};
  const std::size_t n = identities_.size();
  p.ofScrape.resize(n);
  if (n == 0) return;
  // A scrape that names no start time or replica (a series missing from one scrape)
  // belongs to the process of its neighbours: carried forward, the leading ones back.
  std::vector<std::optional<double>> start(n);
  std::vector<std::string> replica(n);
  for (std::size_t r = 0; r < n; ++r) {
    start[r] = identities_[r].startTime ? identities_[r].startTime : (r > 0 ? start[r - 1] : std::nullopt);
    replica[r] = !identities_[r].replica.empty() ? identities_[r].replica : (r > 0 ? replica[r - 1] : "");
  }
  for (std::size_t r = n; r-- > 1;) {
    if (!start[r - 1]) start[r - 1] = start[r];
    if (replica[r - 1].empty()) replica[r - 1] = replica[r];
  }
  const std::vector<std::optional<double>> reported = start;
  start = foldClockSteps(reported, replica);

  // Processes keyed by (replica, start time); a missing start time is one unknown process.
  std::map<std::pair<std::string, std::optional<double>>, std::size_t> index;
  std::vector<std::string> replicaOf;
  for (std::size_t r = 0; r < n; ++r) {
    auto [it, added] = index.try_emplace({replica[r], start[r]}, p.count());
    if (added) {
      p.startedWithin.push_back(false);
      p.firstScrape.push_back(r);
      replicaOf.push_back(replica[r]);
    }
    p.ofScrape[r] = it->second;
  }

  // Per replica: do its processes follow one another (restarts), or does an earlier one
  // answer again after a later one did (several processes behind one address)?
  std::map<std::string, bool> interleaved;
  std::map<std::string, std::size_t> current;
  for (std::size_t r = 0; r < n; ++r) {
    std::size_t k = p.ofScrape[r];
    auto [it, added] = current.try_emplace(replicaOf[k], k);
    if (!added && it->second != k) {
      if (p.firstScrape[k] != r) interleaved[replicaOf[k]] = true;
      it->second = k;
    }
  }
  std::map<std::string, bool> seen;
  for (std::size_t k = 0; k < p.count(); ++k) {
    bool& replicaSeen = seen[replicaOf[k]];
    // A replica's first process is a baseline: it was running before it was reached.
    p.startedWithin[k] = replicaSeen && !interleaved[replicaOf[k]];
    replicaSeen = true;
  }
  // As reported, so the next scrape of the same process extends the history without a
  // recomputation even when its start time was folded into an earlier one.
  lastFilled_ = {reported[n - 1], replica[n - 1], std::nullopt};
}

std::vector<std::optional<double>> ScrapeHistory::foldClockSteps(const std::vector<std::optional<double>>& reported,
                                                                 const std::vector<std::string>& replica) const {
  using Key = std::pair<std::string, double>;
  const std::size_t n = reported.size();
  std::map<Key, std::size_t> lastRowOf;  // the last scrape reporting each start time
  for (std::size_t r = 0; r < n; ++r)
    if (reported[r]) lastRowOf[{replica[r], *reported[r]}] = r;
  std::vector<std::optional<double>> start = reported;
  std::map<Key, double> folded;  // a stepped start time -> the one it stands for
  std::set<Key> seen;
  std::map<std::string, std::size_t> previous;  // per replica, its previous scrape
  for (std::size_t r = 0; r < n; ++r) {
    if (!reported[r]) continue;
    const Key key{replica[r], *reported[r]};
    if (auto f = folded.find(key); f != folded.end()) {
      start[r] = f->second;
    } else if (auto p = previous.find(replica[r]); p != previous.end() && !seen.contains(key)) {
      const std::size_t q = p->second;
      const std::optional<double>& cpu = identities_[r].cpuSeconds;
      const std::optional<double>& cpuBefore = identities_[q].cpuSeconds;
      // A new start time after which the previous one never answers again, while the
      // CPU time went on growing: a clock step. A restart's CPU time starts again near 0.
      if (*reported[q] != *reported[r] && lastRowOf.at({replica[q], *reported[q]}) < r && cpu && cpuBefore &&
          *cpu >= *cpuBefore) {
        folded[key] = *start[q];
        start[r] = *start[q];
      }
    }
    seen.insert(key);
    previous[replica[r]] = r;
  }
  return start;
}

TimeSeries ScrapeHistory::counter(SeriesId id) const {
  TimeSeries out;
  const ScrapeProcesses& procs = processes_;
  std::vector<bool> visited(procs.count(), false);
  // The series' value in the latest scrape answered by each process (nullopt: absent).
  std::vector<std::optional<double>> last(procs.count());
  double total = 0;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    std::size_t k = procs.ofScrape[r];
    std::optional<double> v = value(r, id);
    std::optional<double> before = last[k];
    bool firstOfProcess = !visited[k];
    visited[k] = true;
    last[k] = v;
    if (!v) continue;
    // From 0: a process started since the previous scrape, or a series created since
    // this process' previous scrape. Its interval starts at the previous scrape.
    bool fromZero = firstOfProcess ? procs.startedWithin[k] : !before;
    double increase;
    if (fromZero)
      increase = *v;
    else if (firstOfProcess)
      increase = 0;  // a baseline
    else
      increase = *v >= *before ? *v - *before : *v;
    if (fromZero && r > 0 && (out.empty() || out.times.back() != times_[r - 1])) out.push(times_[r - 1], total);
    total += increase;
    out.push(times_[r], total);
  }
  return out;
}

ScrapeHistory ScrapeHistory::slice(engine::TimePoint from, engine::TimePoint to) const {
  ScrapeHistory out;
  out.keys_ = keys_;
  out.index_ = index_;
  out.byName_ = byName_;
  out.types_ = types_;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (times_[r] < from || times_[r] > to) continue;
    out.times_.push_back(times_[r]);
    out.identities_.push_back(identities_[r]);
    out.rows_.push_back(rows_[r]);
  }
  out.recomputeProcesses();
  return out;
}

std::vector<TargetScrapes> sliceTargets(std::span<const TargetScrapes> targets, engine::TimePoint from,
                                        engine::TimePoint to) {
  std::vector<TargetScrapes> out;
  out.reserve(targets.size());
  for (const TargetScrapes& t : targets) out.push_back({t.info, t.status, t.history.slice(from, to)});
  return out;
}

std::size_t ScrapeHistory::memoryBytes() const {
  std::size_t bytes = times_.capacity() * sizeof(engine::TimePoint) + lastOrder_.capacity() * sizeof(SeriesId) +
                      identities_.capacity() * sizeof(ScrapeIdentity);
  for (const auto& row : rows_) bytes += row.capacity() * sizeof(double) + sizeof(row);
  for (const SeriesKey& k : keys_) {
    bytes += sizeof(k) + k.name.capacity();
    for (const Label& l : k.labels) bytes += sizeof(l) + l.name.capacity() + l.value.capacity();
  }
  bytes += index_.size() * 64;  // key string and node, roughly
  return bytes;
}

}  // namespace cpscale::metrics
