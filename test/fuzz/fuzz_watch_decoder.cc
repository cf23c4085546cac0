// WatchStreamDecoder on arbitrary streams fed in arbitrary chunk splits. The split
// plan is drawn from a hash of the input (whole, byte by byte, or random lengths), so
// the stream itself stays as written and every mutation also moves the cuts. The
// decoder must decode the same events, keep the same non-event object and fail at the
// same line however the stream is cut: the result of one feed() of the whole stream
// is the reference.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/kube/watch.h"
#include "test/fuzz/fuzz_support.h"

namespace {

using cpscale::kube::WatchEvent;
using cpscale::kube::WatchStreamDecoder;

struct Outcome {
  std::vector<std::string> events;  // "TYPE object-json"
  bool fedOk = true;
  bool finishedOk = true;
  std::string error;
  std::string nonEvent;
  std::size_t count = 0;
  std::size_t buffered = 0;  // before finish()
};

std::uint64_t hashOf(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Outcome decode(std::string_view stream, const std::vector<std::size_t>& cuts) {
  Outcome o;
  WatchStreamDecoder d;
  auto sink = [&](const WatchEvent& e) {
    o.events.push_back(std::string(cpscale::kube::toString(e.type)) + " " + e.object.dump());
  };
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    if (!d.feed(stream.substr(at, cut - at), sink)) {
      o.fedOk = false;
      break;
    }
    at = cut;
  }
  if (o.fedOk) o.fedOk = d.feed(stream.substr(at), sink);
  o.buffered = d.bufferedBytes();
  o.finishedOk = d.finish(sink);
  o.error = d.error();
  if (d.nonEvent()) o.nonEvent = d.nonEvent()->dump();
  o.count = d.events();
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view stream(reinterpret_cast<const char*>(data), size);
  const Outcome whole = decode(stream, {});
  CPSCALE_FUZZ_CHECK(whole.count == whole.events.size(), "events() counts what the sink saw");
  CPSCALE_FUZZ_CHECK((whole.fedOk && whole.finishedOk) == whole.error.empty(), "error() set exactly on failure");
  if (whole.fedOk) {
    // What is buffered is the last line, which has no newline yet.
    std::size_t lastNl = stream.rfind('\n');
    std::size_t tail = lastNl == std::string_view::npos ? size : size - lastNl - 1;
    CPSCALE_FUZZ_CHECK(whole.buffered == tail, "buffered bytes are the unterminated last line");
  }

  std::uint64_t state = hashOf(stream);
  std::vector<std::size_t> cuts;
  switch (splitmix(state) % 4) {
    case 0:  // byte by byte
      for (std::size_t i = 1; i < size; ++i) cuts.push_back(i);
      break;
    case 1:  // one cut
      if (size > 0) cuts.push_back(splitmix(state) % size);
      break;
    default:  // random lengths, short and long
      for (std::size_t at = 0;;) {
        std::size_t len = 1 + splitmix(state) % (splitmix(state) % 2 ? 8 : 256);
        at += len;
        if (at >= size) break;
        cuts.push_back(at);
      }
  }
  const Outcome split = decode(stream, cuts);
  CPSCALE_FUZZ_CHECK(split.events == whole.events, "events differ when the stream is cut");
  CPSCALE_FUZZ_CHECK(split.fedOk == whole.fedOk && split.finishedOk == whole.finishedOk, "success differs when cut");
  CPSCALE_FUZZ_CHECK(split.error == whole.error, split.error + " vs " + whole.error);
  CPSCALE_FUZZ_CHECK(split.nonEvent == whole.nonEvent, "non-event object differs when cut");
  CPSCALE_FUZZ_CHECK(split.count == whole.count, "event count differs when cut");
  if (whole.fedOk) CPSCALE_FUZZ_CHECK(split.buffered == whole.buffered, "buffered bytes differ when cut");
  return 0;
}
