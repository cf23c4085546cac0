// A change reaches every watcher of it as the same bytes: N nodes' kube-proxies get each
// EndpointSlice update as N identical lines. Parsing one (even projected, the lexer reads
// every byte and builds every string) is most of what a watching fleet costs the
// generator, so each thread keeps the events it decoded lately by their line, and a
// decoder with the same projection that meets the same line hands its sink the same
// event instead of parsing it again. A line is compared whole (hash, then bytes), never
// trusted by hash.
#include "sim/kube/watch.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <utility>

namespace cpscale::kube {

namespace {

using nlohmann::json;
using Paths = std::vector<std::vector<std::string>>;

// A JSON pointer's reference tokens, unescaped (~1 is '/', ~0 is '~').
std::vector<std::string> segmentsOf(std::string_view pointer) {
  std::vector<std::string> out;
  while (!pointer.empty()) {
    pointer.remove_prefix(1);  // the '/'
    const std::size_t end = std::min(pointer.find('/'), pointer.size());
    std::string seg;
    for (std::size_t i = 0; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end) {
        seg += pointer[i + 1] == '1' ? '/' : '~';
        ++i;
      } else {
        seg += pointer[i];
      }
    }
    out.push_back(std::move(seg));
    pointer.remove_prefix(end);
  }
  return out;
}

// Builds only the kept parts of a line (WatchProjection) from nlohmann's SAX events.
// Outside a kept part it tracks where it is (one level per object or array entered on
// the way to a kept path) or skips a subtree no kept path enters; inside one it builds
// the values as the DOM parser would.
class ProjectingSax {
 public:
  explicit ProjectingSax(const Paths& keep) : keep_(keep) {}

  json out = json::object();
  bool failed = false;

  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(json::number_integer_t v) { return scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
  bool number_float(json::number_float_t v, const json::string_t&) { return scalar(v); }
  bool string(json::string_t& v) { return scalar(std::move(v)); }
  bool binary(json::binary_t& v) { return scalar(std::move(v)); }
  bool start_object(std::size_t) { return open(json::object()); }
  bool start_array(std::size_t) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (skip_ > 0) return true;
    if (!built_.empty()) {
      key_ = std::move(k);
      return true;
    }
    if (!levels_.empty()) levels_.back().key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    failed = true;
    return false;
  }

 private:
  struct Level {
    bool array = false;
    std::size_t index = 0;
    std::string key;
  };
  enum class Fit { kNone, kPrefix, kKept };

  // Where the value about to start sits, against the kept paths.
  Fit fit() const {
    Fit best = Fit::kNone;
    for (const auto& path : keep_) {
      if (path.size() < levels_.size()) continue;
      bool match = true;
      for (std::size_t i = 0; i < levels_.size() && match; ++i) {
        const Level& l = levels_[i];
        match = path[i] == "*" || (!l.array && path[i] == l.key);
      }
      if (!match) continue;
      if (path.size() == levels_.size()) return Fit::kKept;
      best = Fit::kPrefix;
    }
    return best;
  }
  // The value about to start, as a JSON pointer into `out`.
  json::json_pointer here() const {
    json::json_pointer p;
    for (const Level& l : levels_) p /= l.array ? std::to_string(l.index) : l.key;
    return p;
  }
  void placed() {
    if (built_.empty() && skip_ == 0 && !levels_.empty() && levels_.back().array) ++levels_.back().index;
  }
  // A value inside a kept part goes into its container; `v` is moved.
  json* insert(json v) {
    json& c = *built_.back();
    if (c.is_array()) {
      c.push_back(std::move(v));
      return &c.back();
    }
    json& slot = c[key_];
    slot = std::move(v);
    return &slot;
  }
  template <class V>
  bool scalar(V&& v) {
    if (skip_ > 0) return true;
    if (!built_.empty()) {
      insert(json(std::forward<V>(v)));
      return true;
    }
    if (!levels_.empty() && fit() == Fit::kKept) out[here()] = json(std::forward<V>(v));
    placed();
    return true;
  }
  bool open(json empty) {
    if (skip_ > 0) {
      ++skip_;
      return true;
    }
    if (!built_.empty()) {
      built_.push_back(insert(std::move(empty)));
      return true;
    }
    if (levels_.empty()) {  // the line itself
      levels_.push_back({empty.is_array(), 0, {}});
      return true;
    }
    switch (fit()) {
      case Fit::kKept: {
        json& slot = out[here()];
        slot = std::move(empty);
        built_.push_back(&slot);
        return true;
      }
      case Fit::kPrefix: levels_.push_back({empty.is_array(), 0, {}}); return true;
      case Fit::kNone: skip_ = 1; return true;
    }
    return true;
  }
  bool close() {
    if (skip_ > 0) {
      if (--skip_ == 0) placed();
      return true;
    }
    if (!built_.empty()) {
      built_.pop_back();
      if (built_.empty()) placed();
      return true;
    }
    levels_.pop_back();
    placed();
    return true;
  }

  const Paths& keep_;
  std::vector<Level> levels_;  // the way down to kept parts: the line, then each container entered
  std::vector<json*> built_;   // the containers of the kept part being built
  std::string key_;            // the key of the next value inside a kept part
  int skip_ = 0;               // depth inside a subtree no kept path enters
};

// The events this thread's decoders decoded lately, by line and projection: first in,
// first out, up to kMaxBytes of lines. Lines under kMinBytes (bookmarks, small objects)
// are parsed again: looking them up would cost about as much.
class DecodedLines {
 public:
  static constexpr std::size_t kMinBytes = 512;
  static constexpr std::size_t kMaxBytes = std::size_t{2} << 20;
  static constexpr std::size_t kMaxLineBytes = kMaxBytes / 8;  // larger lines are parsed each time

  const WatchEvent* find(std::string_view keep, std::string_view line) const {
    auto it = byHash_.find(hashOf(keep, line));
    if (it == byHash_.end() || it->second.keep != keep || it->second.line != line) return nullptr;
    return &it->second.event;
  }
  // Keeps `event` as `line`'s and returns it: valid until the next add() on this thread.
  const WatchEvent& add(std::string_view keep, std::string_view line, WatchEvent&& event) {
    const std::size_t h = hashOf(keep, line);
    auto [it, fresh] =
        byHash_.insert_or_assign(h, Entry{std::string(keep), std::string(line), std::move(event), ++added_});
    order_.push_back({h, it->second.seq, line.size()});
    bytes_ += line.size();
    // The oldest go first; the line just added stays (kMaxLineBytes keeps it small).
    while (bytes_ > kMaxBytes && order_.size() > 1) {
      const Order o = order_.front();
      order_.pop_front();
      bytes_ -= o.bytes;
      auto old = byHash_.find(o.hash);
      if (old != byHash_.end() && old->second.seq == o.seq) byHash_.erase(old);
    }
    return it->second.event;
  }

 private:
  struct Entry {
    std::string keep;
    std::string line;
    WatchEvent event;
    std::uint64_t seq = 0;  // which add() put it there (an entry replaced under its hash is not evicted twice)
  };
  struct Order {
    std::size_t hash = 0;
    std::uint64_t seq = 0;
    std::size_t bytes = 0;
  };
  static std::size_t hashOf(std::string_view keep, std::string_view line) {
    const std::hash<std::string_view> h;
    return h(line) ^ (h(keep) * 0x9e3779b97f4a7c15ULL);
  }
  std::unordered_map<std::size_t, Entry> byHash_;
  std::deque<Order> order_;
  std::size_t bytes_ = 0;
  std::uint64_t added_ = 0;
};

DecodedLines& decodedLines() {
  thread_local DecodedLines lines;
  return lines;
}

}  // namespace

WatchStreamDecoder::WatchStreamDecoder(const WatchProjection& keep) {
  if (keep.empty()) return;
  keep_.push_back({"type"});
  for (const auto& p : keep) {
    std::vector<std::string> s = segmentsOf(p);
    s.insert(s.begin(), "object");
    keep_.push_back(std::move(s));
    keepKey_ += p;
    keepKey_ += '\n';
  }
}

std::string_view toString(WatchEventType t) {
  switch (t) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

std::optional<WatchEventType> parseWatchEventType(std::string_view s) {
  if (s == "ADDED") return WatchEventType::kAdded;
  if (s == "MODIFIED") return WatchEventType::kModified;
  if (s == "DELETED") return WatchEventType::kDeleted;
  if (s == "BOOKMARK") return WatchEventType::kBookmark;
  if (s == "ERROR") return WatchEventType::kError;
  return std::nullopt;
}

bool WatchStreamDecoder::feed(std::string_view chunk, const EventSink& sink) {
  if (!error_.empty()) return false;
  // Lines wholly inside this chunk are decoded straight from it; only a partial
  // line is copied, so a stream of small events does not shuffle a growing buffer.
  std::size_t start = 0;
  while (true) {
    std::size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) break;
    std::string_view piece = chunk.substr(start, nl - start);
    bool ok;
    if (!pending_.empty()) {
      pending_.append(piece);
      std::string text = std::move(pending_);
      pending_.clear();
      ok = line(text, sink);
    } else {
      ok = line(piece, sink);
    }
    if (!ok) return false;
    start = nl + 1;
  }
  pending_.append(chunk.substr(start));
  return true;
}

bool WatchStreamDecoder::finish(const EventSink& sink) {
  if (!error_.empty()) return false;
  std::string text = std::move(pending_);
  pending_.clear();
  return line(text, sink);
}

nlohmann::json WatchStreamDecoder::decode(std::string_view text) const {
  if (keep_.empty()) return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ProjectingSax sax(keep_);
  const bool ok = nlohmann::json::sax_parse(text, &sax);
  // An event keeps its projection; anything else (an ERROR's Status, a refused watch's
  // body) is decoded whole, as it would be without one.
  if (ok && !sax.failed && sax.out.contains("type") && sax.out["type"] != "ERROR") {
    if (!sax.out.contains("object")) sax.out["object"] = nlohmann::json::object();  // none of its kept parts
    return std::move(sax.out);
  }
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

bool WatchStreamDecoder::line(std::string_view text, const EventSink& sink) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return true;
  const bool shared = text.size() >= DecodedLines::kMinBytes && text.size() <= DecodedLines::kMaxLineBytes;
  if (shared) {
    if (const WatchEvent* seen = decodedLines().find(keepKey_, text)) {
      ++events_;
      ++reused_;
      sink(*seen);
      return true;
    }
  }
  nlohmann::json j = decode(text);
  if (j.is_discarded() || !j.is_object()) {
    error_ = "watch stream line is not a JSON object";
    return false;
  }
  auto type = j.find("type");
  if (type == j.end()) {
    nonEvent_ = std::move(j);
    return true;
  }
  std::optional<WatchEventType> t =
      type->is_string() ? parseWatchEventType(type->get_ref<const std::string&>()) : std::nullopt;
  if (!t) {
    error_ = "watch event has an unknown type";
    return false;
  }
  WatchEvent ev{*t, {}};
  if (auto obj = j.find("object"); obj != j.end()) ev.object = std::move(*obj);
  ++events_;
  // The sink reads the event where the thread keeps it: N watchers of one change share
  // one decoded event, none a copy.
  if (shared)
    sink(decodedLines().add(keepKey_, text, std::move(ev)));
  else
    sink(ev);
  return true;
}

}  // namespace cpscale::kube
