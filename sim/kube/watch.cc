#include "sim/kube/watch.h"

namespace cpscale::kube {

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

bool WatchStreamDecoder::line(std::string_view text, const EventSink& sink) {
  while (!text.empty() && (text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.empty()) return true;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
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
  sink(std::move(ev));
  return true;
}

}  // namespace cpscale::kube
