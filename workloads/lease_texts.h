// The kubelet fleet's cached Lease texts, kept as differences from a shared reference.
//
// Every node of a fleet caches its Lease as the JSON text it PUTs on each renewal
// (~870 bytes), and all of them are alike but for the node's name, its uids, its
// creation time and its resourceVersion. One text of each length is the reference for
// that length; a node keeps only its resourceVersion and the runs of bytes where its
// text differs from the reference (~120 bytes), and its text is rebuilt into the
// request body when it renews. A text that differs too much is kept whole, so what a
// renewal sends is always the exact bytes that were stored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cpscale::workloads {

// One node's Lease text: what LeaseTexts::store made of it. Empty until stored.
struct LeaseText {
  // The resourceVersion, then either the whole text (whole) or the runs that differ
  // from the reference of its length: [offset u16][length u8][bytes]... with offsets
  // in the text as it is without its resourceVersion.
  std::string data;
  std::uint32_t rvPos = 0;     // where the resourceVersion goes in the text
  std::uint32_t renewPos = 0;  // where the renewTime goes, in the text without the resourceVersion
  std::uint32_t rvLen = 0;
  std::uint16_t length = 0;  // of the text without its resourceVersion: its reference's
  bool whole = false;

  bool empty() const { return data.empty(); }
  std::string_view resourceVersion() const { return std::string_view(data).substr(0, rvLen); }
  // What it holds beyond its own size.
  std::size_t heapBytes() const { return data.capacity() > 15 ? data.capacity() + 1 : 0; }
  // The server's answer to a renewal: the text's next resourceVersion, of any length.
  void setResourceVersion(std::string_view rv) {
    data.replace(0, rvLen, rv);
    rvLen = static_cast<std::uint32_t>(rv.size());
  }
};

class LeaseTexts {
 public:
  // `text` with its resourceVersion `rvLen` bytes at `rvPos` and its renewTime
  // (`renewLen` bytes, rewritten on each renewal, so never compared) at `renewPos`.
  LeaseText store(std::string_view text, std::size_t rvPos, std::size_t rvLen, std::size_t renewPos,
                  std::size_t renewLen);
  // The text as stored, with the resourceVersion in place; `renewPos` is set to where
  // the renewTime is in it.
  void build(const LeaseText& t, std::string& out, std::size_t& renewPos) const;

  std::size_t references() const { return references_.size(); }
  // The reference texts' bytes, roughly.
  std::size_t bytes() const;

 private:
  // By the length of the text without its resourceVersion: the first text of that
  // length (without its resourceVersion), and where its renewTime is.
  struct Reference {
    std::string text;
    std::size_t renewPos = 0;
  };
  std::unordered_map<std::size_t, Reference> references_;
};

}  // namespace cpscale::workloads
