#include "sim/model/json_text.h"

#include <cstdio>

namespace cpscale::model::jsontext {

namespace {
constexpr int kMaxDepth = 512;

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::optional<std::size_t> skipString(std::string_view t, std::size_t pos, bool* escaped = nullptr) {
  // t[pos] == '"'
  for (std::size_t i = pos + 1; i < t.size(); ++i) {
    const auto c = static_cast<unsigned char>(t[i]);
    if (c == '"') return i + 1;
    if (c < 0x20) return std::nullopt;
    if (c == '\\') {
      if (escaped) *escaped = true;
      if (++i >= t.size()) return std::nullopt;
      const char e = t[i];
      if (e == 'u') {
        if (i + 4 >= t.size()) return std::nullopt;
        for (int k = 1; k <= 4; ++k) {
          const char h = t[i + k];
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) return std::nullopt;
        }
        i += 4;
      } else if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::size_t> skipNumber(std::string_view t, std::size_t i) {
  auto digits = [&](std::size_t& j) {
    const std::size_t start = j;
    while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j;
    return j > start;
  };
  if (i < t.size() && t[i] == '-') ++i;
  if (i < t.size() && t[i] == '0') {
    ++i;
  } else if (!digits(i)) {
    return std::nullopt;
  }
  if (i < t.size() && t[i] == '.') {
    ++i;
    if (!digits(i)) return std::nullopt;
  }
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (!digits(i)) return std::nullopt;
  }
  return i;
}

}  // namespace

std::size_t skipSpace(std::string_view text, std::size_t pos) {
  while (pos < text.size() && isSpace(text[pos])) ++pos;
  return pos;
}

std::optional<std::size_t> skipValue(std::string_view t, std::size_t pos, int depth) {
  if (pos >= t.size() || depth > kMaxDepth) return std::nullopt;
  switch (t[pos]) {
    case '"': return skipString(t, pos);
    case '{':
    case '[': {
      const bool obj = t[pos] == '{';
      const char close = obj ? '}' : ']';
      std::size_t i = skipSpace(t, pos + 1);
      if (i < t.size() && t[i] == close) return i + 1;
      for (;;) {
        if (obj) {
          if (i >= t.size() || t[i] != '"') return std::nullopt;
          auto k = skipString(t, i);
          if (!k) return std::nullopt;
          i = skipSpace(t, *k);
          if (i >= t.size() || t[i] != ':') return std::nullopt;
          i = skipSpace(t, i + 1);
        }
        auto v = skipValue(t, i, depth + 1);
        if (!v) return std::nullopt;
        i = skipSpace(t, *v);
        if (i >= t.size()) return std::nullopt;
        if (t[i] == close) return i + 1;
        if (t[i] != ',') return std::nullopt;
        i = skipSpace(t, i + 1);
      }
    }
    case 't': return t.substr(pos, 4) == "true" ? std::optional<std::size_t>(pos + 4) : std::nullopt;
    case 'f': return t.substr(pos, 5) == "false" ? std::optional<std::size_t>(pos + 5) : std::nullopt;
    case 'n': return t.substr(pos, 4) == "null" ? std::optional<std::size_t>(pos + 4) : std::nullopt;
    default: return skipNumber(t, pos);
  }
}

bool members(std::string_view t, Span obj, std::vector<Member>& out) {
  out.clear();
  if (obj.begin >= t.size() || t[obj.begin] != '{') return false;
  std::size_t i = skipSpace(t, obj.begin + 1);
  if (t[i] == '}') return true;
  for (;;) {
    Member m;
    auto k = skipString(t, i, &m.keyEscaped);
    if (!k) return false;
    m.key = t.substr(i + 1, *k - i - 2);
    i = skipSpace(t, *k);
    i = skipSpace(t, i + 1);  // ':'
    auto v = skipValue(t, i, 1);
    if (!v) return false;
    m.value = {i, *v};
    out.push_back(m);
    i = skipSpace(t, *v);
    if (i >= t.size()) return false;
    if (t[i] == '}') return true;
    i = skipSpace(t, i + 1);  // ','
  }
}

std::optional<Span> object(std::string_view text) {
  const std::size_t b = skipSpace(text, 0);
  if (b >= text.size() || text[b] != '{') return std::nullopt;
  auto e = skipValue(text, b);
  if (!e || skipSpace(text, *e) != text.size()) return std::nullopt;
  return Span{b, *e};
}

std::string quote(std::string_view s) {
  bool plain = true;
  for (char c : s) plain = plain && c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20;
  if (plain) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    out += s;
    out += '"';
    return out;
  }
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::optional<std::string_view> plainString(std::string_view text, Span s) {
  if (s.end - s.begin < 2 || text[s.begin] != '"') return std::nullopt;
  std::string_view v = text.substr(s.begin + 1, s.end - s.begin - 2);
  if (v.find('\\') != std::string_view::npos) return std::nullopt;
  return v;
}

}  // namespace cpscale::model::jsontext
