// Watch events and the decoder for kube-apiserver's watch stream: one JSON object per
// line ({"type": "...", "object": {...}}), split across transport chunks anywhere.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace cpscale::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

std::string_view toString(WatchEventType t);
std::optional<WatchEventType> parseWatchEventType(std::string_view s);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  // The object; for kError a metav1.Status (e.g. 410 Expired: relist and re-watch).
  nlohmann::json object;
};

// The parts of each watched object a consumer reads, as JSON pointers from the object's
// root in which "*" stands for every element of an array (or member of an object):
// {"/metadata/resourceVersion", "/endpoints/*/addresses"}. An event decoded with one
// holds only those parts (with their enclosing objects and arrays, elements at their
// indices): the rest of the line is scanned (SAX) but never built, which is most of what
// decoding a large object costs. Empty: the whole object.
using WatchProjection = std::vector<std::string>;

class WatchStreamDecoder {
 public:
  using EventSink = std::function<void(const WatchEvent&)>;

  WatchStreamDecoder() = default;
  explicit WatchStreamDecoder(const WatchProjection& keep);

  // Decodes every complete line in `chunk` (plus what earlier chunks left over).
  // Returns false at the first line that is not valid JSON or not an event, after which
  // the stream is unusable; error() says why.
  bool feed(std::string_view chunk, const EventSink& sink);
  // End of stream: decodes a final line that lacks its newline.
  bool finish(const EventSink& sink);

  // A JSON object that was not an event, e.g. the metav1.Status body of a watch that
  // the server refused (403, 410); kept for the close report instead of failing.
  const std::optional<nlohmann::json>& nonEvent() const { return nonEvent_; }
  const std::string& error() const { return error_; }
  std::size_t events() const { return events_; }
  // Of those, the events an identical line already gave another decoder with the same
  // projection on this thread (see the top of watch.cc): shared, not parsed again. A
  // sink's event is valid only during the call.
  std::size_t reused() const { return reused_; }
  std::size_t bufferedBytes() const { return pending_.size(); }

 private:
  bool line(std::string_view text, const EventSink& sink);
  // The line decoded as JSON (projected with keep_), or a discarded value.
  nlohmann::json decode(std::string_view text) const;
  // Each kept path's segments, "object" first (and {"type"}); empty: no projection.
  std::vector<std::vector<std::string>> keep_;
  std::string keepKey_;  // the kept paths, joined: which decoders may share a decoded line
  std::string pending_;
  std::optional<nlohmann::json> nonEvent_;
  std::string error_;
  std::size_t events_ = 0;
  std::size_t reused_ = 0;
};

}  // namespace cpscale::kube
