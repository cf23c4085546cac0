#include "sim/model/selectors.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace cpscale::model {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside parentheses.
std::vector<std::string_view> splitTop(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

const std::string* find(const LabelSet& labels, std::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& kv, std::string_view k) { return kv.first < k; });
  return it != labels.end() && it->first == key ? &it->second : nullptr;
}

// "word" followed by whitespace or '(' at the start of `s`.
bool startsWithWord(std::string_view s, std::string_view word) {
  if (!s.starts_with(word)) return false;
  return s.size() == word.size() || std::isspace(static_cast<unsigned char>(s[word.size()])) || s[word.size()] == '(';
}

}  // namespace

std::optional<LabelSelector> LabelSelector::parse(std::string_view text, std::string* error) {
  LabelSelector sel;
  if (trim(text).empty()) return sel;
  for (std::string_view part : splitTop(text)) {
    part = trim(part);
    if (part.empty()) {
      fail(error, "empty requirement in label selector");
      return std::nullopt;
    }
    Requirement r;
    if (part.front() == '!') {
      r.key = std::string(trim(part.substr(1)));
      r.op = Op::kNotExists;
    } else if (auto ne = part.find("!="); ne != std::string_view::npos) {
      r.key = std::string(trim(part.substr(0, ne)));
      r.op = Op::kNotEquals;
      r.values.emplace_back(trim(part.substr(ne + 2)));
    } else if (auto eq = part.find('='); eq != std::string_view::npos) {
      r.key = std::string(trim(part.substr(0, eq)));
      std::string_view v = part.substr(eq + 1);
      if (!v.empty() && v.front() == '=') v.remove_prefix(1);
      r.op = Op::kEquals;
      r.values.emplace_back(trim(v));
    } else {
      // "key in (a,b)", "key notin (a,b)" or "key".
      std::size_t sp = part.find_first_of(" \t(");
      r.key = std::string(trim(part.substr(0, sp)));
      std::string_view rest = sp == std::string_view::npos ? std::string_view() : trim(part.substr(sp));
      if (rest.empty()) {
        r.op = Op::kExists;
      } else {
        if (startsWithWord(rest, "in")) {
          r.op = Op::kIn;
          rest = trim(rest.substr(2));
        } else if (startsWithWord(rest, "notin")) {
          r.op = Op::kNotIn;
          rest = trim(rest.substr(5));
        } else {
          fail(error, "unexpected '" + std::string(rest) + "' in label selector");
          return std::nullopt;
        }
        if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
          fail(error, "expected a parenthesised value list in label selector");
          return std::nullopt;
        }
        rest = rest.substr(1, rest.size() - 2);
        std::size_t start = 0;
        for (std::size_t i = 0; i <= rest.size(); ++i) {
          if (i == rest.size() || rest[i] == ',') {
            r.values.emplace_back(trim(rest.substr(start, i - start)));
            start = i + 1;
          }
        }
      }
    }
    if (r.key.empty()) {
      fail(error, "missing key in label selector");
      return std::nullopt;
    }
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

bool LabelSelector::matches(const LabelSet& labels) const {
  for (const Requirement& r : requirements_) {
    const std::string* v = find(labels, r.key);
    switch (r.op) {
      case Op::kEquals:
        if (!v || *v != r.values.front()) return false;
        break;
      case Op::kNotEquals:
        if (v && *v == r.values.front()) return false;
        break;
      case Op::kIn:
        if (!v || std::find(r.values.begin(), r.values.end(), *v) == r.values.end()) return false;
        break;
      case Op::kNotIn:
        if (v && std::find(r.values.begin(), r.values.end(), *v) != r.values.end()) return false;
        break;
      case Op::kExists:
        if (!v) return false;
        break;
      case Op::kNotExists:
        if (v) return false;
        break;
    }
  }
  return true;
}

std::optional<FieldSelector> FieldSelector::parse(std::string_view text, std::string* error) {
  FieldSelector sel;
  if (trim(text).empty()) return sel;
  for (std::string_view part : splitTop(text)) {
    part = trim(part);
    Requirement r;
    std::size_t at = part.find("!=");
    std::size_t skip = 2;
    if (at != std::string_view::npos) {
      r.equals = false;
    } else if ((at = part.find("==")) != std::string_view::npos) {
      skip = 2;
    } else if ((at = part.find('=')) != std::string_view::npos) {
      skip = 1;
    } else {
      fail(error, "invalid field selector requirement '" + std::string(part) + "'");
      return std::nullopt;
    }
    r.field = std::string(trim(part.substr(0, at)));
    r.value = std::string(trim(part.substr(at + skip)));
    if (r.field.empty()) {
      fail(error, "missing field in field selector");
      return std::nullopt;
    }
    sel.requirements_.push_back(std::move(r));
  }
  return sel;
}

bool FieldSelector::metadataOnly() const {
  return std::all_of(requirements_.begin(), requirements_.end(), [](const Requirement& r) {
    return r.field == "metadata.name" || r.field == "metadata.namespace";
  });
}

std::optional<std::string> FieldSelector::pinned(std::string_view field) const {
  for (const Requirement& r : requirements_)
    if (r.equals && r.field == field) return r.value;
  return std::nullopt;
}

bool FieldSelector::matches(std::string_view name, std::string_view ns, const FieldLookup& lookup) const {
  for (const Requirement& r : requirements_) {
    std::string value;
    if (r.field == "metadata.name") {
      value = name;
    } else if (r.field == "metadata.namespace") {
      value = ns;
    } else if (lookup) {
      value = lookup(r.field).value_or("");
    }
    if ((value == r.value) != r.equals) return false;
  }
  return true;
}

std::optional<ShardRange> ShardRange::parse(std::string_view text, std::string* error) {
  text = trim(text);
  constexpr std::string_view kHead = "shardRange(";
  if (!text.starts_with(kHead) || !text.ends_with(")")) {
    fail(error, "shardSelector must be shardRange(object.metadata.uid, lo, hi)");
    return std::nullopt;
  }
  auto args = splitTop(text.substr(kHead.size(), text.size() - kHead.size() - 1));
  if (args.size() != 3 || trim(args[0]) != "object.metadata.uid") {
    fail(error, "shardSelector must be shardRange(object.metadata.uid, lo, hi)");
    return std::nullopt;
  }
  // As kube-apiserver reads them (k8s.io/apiserver/pkg/sharding): a single-quoted
  // string, '0x' and exactly 16 lower-case hex digits, or '0x10000000000000000' (2^64)
  // as the exclusive end of the last range.
  auto bound = [&](std::string_view s, const char* name, std::uint64_t& out) {
    s = trim(s);
    if (s.size() < 2 || s.front() != '\'' || s.back() != '\'') {
      fail(error, std::string(name) + " must be a string literal (e.g. '0x00000000000000ff')");
      return false;
    }
    s = s.substr(1, s.size() - 2);
    if (s == "0x10000000000000000") {
      out = ~std::uint64_t{0};
      return true;
    }
    if (!s.starts_with("0x") || s.size() != 18 ||
        s.substr(2).find_first_not_of("0123456789abcdef") != std::string_view::npos) {
      fail(error, std::string(name) + " must be a 0x-prefixed 16-digit hex value, got '" + std::string(s) + "'");
      return false;
    }
    std::from_chars(s.data() + 2, s.data() + s.size(), out, 16);
    return true;
  };
  ShardRange r;
  if (!bound(args[1], "hexStart", r.lo) || !bound(args[2], "hexEnd", r.hi)) return std::nullopt;
  if (r.lo >= r.hi) {
    fail(error, "shard range start must be less than end");
    return std::nullopt;
  }
  return r;
}

std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace cpscale::model
