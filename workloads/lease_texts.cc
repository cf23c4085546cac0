#include "workloads/lease_texts.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace cpscale::workloads {
namespace {

constexpr std::size_t kMaxRun = std::numeric_limits<std::uint8_t>::max();
// Equal bytes between two differing ones cost less inside a run than a run header.
constexpr std::size_t kRunHeader = 3;

void appendRun(std::string& out, std::size_t offset, std::string_view bytes) {
  out.push_back(static_cast<char>(offset & 0xff));
  out.push_back(static_cast<char>(offset >> 8));
  out.push_back(static_cast<char>(bytes.size()));
  out.append(bytes);
}

}  // namespace

LeaseText LeaseTexts::store(std::string_view text, std::size_t rvPos, std::size_t rvLen, std::size_t renewPos,
                            std::size_t renewLen) {
  std::string stripped;
  stripped.reserve(text.size() - rvLen);
  stripped.append(text.substr(0, rvPos));
  stripped.append(text.substr(rvPos + rvLen));
  const std::size_t renewAt = renewPos > rvPos ? renewPos - rvLen : renewPos;

  LeaseText t;
  t.rvPos = static_cast<std::uint32_t>(rvPos);
  t.rvLen = static_cast<std::uint32_t>(rvLen);
  t.renewPos = static_cast<std::uint32_t>(renewAt);
  t.data.assign(text.substr(rvPos, rvLen));
  const auto keepWhole = [&] {
    t.whole = true;
    t.data += stripped;
    t.data.shrink_to_fit();
    return t;
  };
  if (stripped.size() > std::numeric_limits<std::uint16_t>::max()) return keepWhole();
  t.length = static_cast<std::uint16_t>(stripped.size());
  auto [it, first] = references_.try_emplace(stripped.size());
  Reference& ref = it->second;
  if (first) {
    ref.text = stripped;
    ref.renewPos = renewAt;
  }
  if (ref.renewPos != renewAt) return keepWhole();

  // Runs of differing bytes, never across the resourceVersion's place (build inserts it
  // there) and never over the renewTime (rewritten on every renewal).
  const std::string& r = ref.text;
  std::size_t i = 0;
  while (i < stripped.size()) {
    if (i == renewAt) {
      i += renewLen;
      continue;
    }
    if (stripped[i] == r[i]) {
      ++i;
      continue;
    }
    const std::size_t begin = i;
    std::size_t end = i + 1;
    // Extend over short gaps of equal bytes, up to the limits a run must not cross.
    const std::size_t limit = std::min({stripped.size(), begin + kMaxRun, begin < rvPos ? rvPos : stripped.size(),
                                        begin < renewAt ? renewAt : stripped.size()});
    for (std::size_t j = end; j < limit; ++j) {
      if (stripped[j] != r[j]) {
        end = j + 1;
      } else if (j - end >= kRunHeader) {
        break;
      }
    }
    appendRun(t.data, begin, std::string_view(stripped).substr(begin, end - begin));
    i = end;
  }
  if (t.data.size() - rvLen > stripped.size() / 2) {
    t.data.resize(rvLen);
    return keepWhole();
  }
  t.data.shrink_to_fit();
  return t;
}

void LeaseTexts::build(const LeaseText& t, std::string& out, std::size_t& renewPos) const {
  const std::string_view data(t.data);
  const std::string_view rv = data.substr(0, t.rvLen);
  std::string_view base;
  std::string_view runs;
  if (t.whole) {
    base = data.substr(t.rvLen);
  } else {
    // References are never removed, so a stored delta's is there.
    base = references_.at(t.length).text;
    runs = data.substr(t.rvLen);
  }
  out.clear();
  out.reserve(base.size() + rv.size());
  out.append(base.substr(0, t.rvPos));
  out.append(rv);
  out.append(base.substr(t.rvPos));
  while (!runs.empty()) {
    const std::size_t offset =
        static_cast<unsigned char>(runs[0]) | (static_cast<std::size_t>(static_cast<unsigned char>(runs[1])) << 8);
    const std::size_t n = static_cast<unsigned char>(runs[2]);
    std::memcpy(out.data() + offset + (offset >= t.rvPos ? rv.size() : 0), runs.data() + kRunHeader, n);
    runs.remove_prefix(kRunHeader + n);
  }
  renewPos = t.renewPos >= t.rvPos ? t.renewPos + rv.size() : t.renewPos;
}

std::size_t LeaseTexts::bytes() const {
  std::size_t n = references_.bucket_count() * sizeof(void*);
  for (const auto& [length, ref] : references_)
    n += sizeof(std::pair<const std::size_t, Reference>) + 16 + ref.text.capacity() + 1;
  return n;
}

}  // namespace cpscale::workloads
