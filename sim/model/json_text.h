// Reading JSON text without building a document: validating a value and finding the
// members of an object as spans of the text. The store's hot paths (a Lease PUT every
// few milliseconds, a 15 kB Node's status PATCH) use it to splice what changes into
// the text instead of parsing and re-serialising whole objects.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cpscale::model::jsontext {

struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;  // one past the value's last character
  std::string_view of(std::string_view text) const { return text.substr(begin, end - begin); }
};

struct Member {
  std::string_view key;  // as written between the quotes (escapes not decoded)
  bool keyEscaped = false;
  Span value;
};

std::size_t skipSpace(std::string_view text, std::size_t pos);
// The end of the (valid) JSON value starting at text[pos] (no leading whitespace), or
// nullopt when it is not valid JSON.
std::optional<std::size_t> skipValue(std::string_view text, std::size_t pos, int depth = 0);
// The members of the object at `obj` (a span of a valid object) in text order; false
// if `obj` is not an object.
bool members(std::string_view text, Span obj, std::vector<Member>& out);
// The span of the whole document if it is one valid JSON object (surrounding
// whitespace allowed).
std::optional<Span> object(std::string_view text);
// A JSON string literal for `s` (quotes included).
std::string quote(std::string_view s);
// The value of a string literal span without escapes; nullopt for anything else.
std::optional<std::string_view> plainString(std::string_view text, Span s);

}  // namespace cpscale::model::jsontext
