#include "sim/metrics/scrape_history.h"

#include <bit>
#include <cstring>

namespace cpscale::metrics {

std::string_view toString(TargetRole r) { return r == TargetRole::kEtcd ? "etcd" : "apiserver"; }

namespace {
// "Not in this scrape": a NaN with a payload no parser produces, so a real NaN value
// (a summary quantile with no observations) stays distinguishable at 8 bytes a cell.
constexpr std::uint64_t kAbsentBits = 0x7ff8'00ab'5e47'0001ULL;
const double kAbsent = std::bit_cast<double>(kAbsentBits);
bool isAbsent(double v) { return std::bit_cast<std::uint64_t>(v) == kAbsentBits; }

bool sameSeries(const SeriesKey& k, const Sample& s) { return k.name == s.name && k.labels == s.labels; }
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

TimeSeries ScrapeHistory::counter(SeriesId id) const {
  TimeSeries out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    if (auto v = value(r, id)) {
      if (r > 0 && !value(r - 1, id)) out.push(times_[r - 1], 0);
      out.push(times_[r], *v);
    }
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
    out.rows_.push_back(rows_[r]);
  }
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
  std::size_t bytes = times_.capacity() * sizeof(engine::TimePoint) + lastOrder_.capacity() * sizeof(SeriesId);
  for (const auto& row : rows_) bytes += row.capacity() * sizeof(double) + sizeof(row);
  for (const SeriesKey& k : keys_) {
    bytes += sizeof(k) + k.name.capacity();
    for (const Label& l : k.labels) bytes += sizeof(l) + l.name.capacity() + l.value.capacity();
  }
  bytes += index_.size() * 64;  // key string and node, roughly
  return bytes;
}

}  // namespace cpscale::metrics
