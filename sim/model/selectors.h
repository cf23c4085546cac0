// Label, field and shard selectors as kube-apiserver parses and applies them to LIST,
// WATCH and DELETECOLLECTION.
//
//   labels:  k=v, k==v, k!=v, k in (a,b), k notin (a,b), k, !k  (comma = and)
//   fields:  f=v, f==v, f!=v over dotted paths (metadata.name, metadata.namespace,
//            spec.nodeName, involvedObject.name, ...)
//   shards:  KEP-5866 shardRange(object.metadata.uid, 0xlo, 0xhi) over the 64-bit
//            FNV-1a hash of the uid: lo <= h < hi (the last range, hi = 2^64-1, is
//            closed)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cpscale::model {

// An object's labels, sorted by key.
using LabelSet = std::vector<std::pair<std::string, std::string>>;

class LabelSelector {
 public:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  struct Requirement {
    std::string key;
    Op op = Op::kEquals;
    std::vector<std::string> values;
  };

  // nullopt with `error` set for a malformed selector; "" selects everything.
  static std::optional<LabelSelector> parse(std::string_view text, std::string* error = nullptr);
  bool matches(const LabelSet& labels) const;
  bool empty() const { return requirements_.empty(); }
  const std::vector<Requirement>& requirements() const { return requirements_; }

 private:
  std::vector<Requirement> requirements_;
};

class FieldSelector {
 public:
  struct Requirement {
    std::string field;
    bool equals = true;
    std::string value;
  };
  // The value of a field of the object, nullopt when it has none (which compares as "").
  using FieldLookup = std::function<std::optional<std::string>(std::string_view field)>;

  static std::optional<FieldSelector> parse(std::string_view text, std::string* error = nullptr);
  // name and ns answer metadata.name and metadata.namespace without a lookup; other
  // fields ask `lookup` (which may parse the object: the slow path).
  bool matches(std::string_view name, std::string_view ns, const FieldLookup& lookup) const;
  bool empty() const { return requirements_.empty(); }
  // Whether only metadata.name / metadata.namespace are used (no lookup needed).
  bool metadataOnly() const;
  // The value `field` must equal (a "field=value" requirement), nullopt when none pins it.
  std::optional<std::string> pinned(std::string_view field) const;

 private:
  std::vector<Requirement> requirements_;
};

struct ShardRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = ~std::uint64_t{0};
  static std::optional<ShardRange> parse(std::string_view text, std::string* error = nullptr);
  bool contains(std::uint64_t hash) const { return hash >= lo && (hash < hi || hi == ~std::uint64_t{0}); }
};

std::uint64_t fnv1a64(std::string_view s);

}  // namespace cpscale::model
