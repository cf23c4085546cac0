// What the libFuzzer targets share: a scratch directory for loaders that read files, a
// guard that keeps generated inputs from naming the machine's own files, and the check
// that turns a broken invariant into a crash libFuzzer records.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace cpscale::fuzz {

// An invariant the code under test promises; a failure aborts, and libFuzzer saves the
// input that broke it.
#define CPSCALE_FUZZ_CHECK(cond, what)                                                      \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: invariant broken: %s (%s)\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                              \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

// One scratch directory per fuzzing process, removed at exit. Loaders that take a path
// read the input from a file written here, once per execution: in /dev/shm where there
// is one (a file system in memory), else under $TMPDIR.
class Sandbox {
 public:
  Sandbox() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm", ec) && ::access("/dev/shm", W_OK) == 0
                                     ? std::filesystem::path("/dev/shm")
                                     : std::filesystem::temp_directory_path();
    // Named by the process id (digits only), so a path in a message never looks like a
    // credential to the kubeconfig target's check.
    std::filesystem::path dir = base / ("cpscale-fuzz-" + std::to_string(::getpid()) + "-" + std::to_string(count_++));
    std::filesystem::remove_all(dir, ec);
    if (!std::filesystem::create_directory(dir, ec)) {
      std::fprintf(stderr, "cannot create %s: %s\n", dir.c_str(), ec.message().c_str());
      std::abort();
    }
    dir_ = std::filesystem::canonical(dir);
  }
  ~Sandbox() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  const std::filesystem::path& dir() const { return dir_; }

  // Writes `content` to dir()/rel (creating directories) and returns its path.
  std::filesystem::path write(const std::string& rel, std::string_view content) const {
    std::filesystem::path p = dir_ / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out) {
      std::perror(p.c_str());
      std::abort();
    }
    return p;
  }

 private:
  static inline int count_ = 0;
  std::filesystem::path dir_;
};

namespace detail {

inline bool within(const std::filesystem::path& p, const std::filesystem::path& dir) {
  auto [d, pi] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

// Whether the scalar `s`, taken as a path (absolute, or relative to one of `bases`),
// names something that exists outside every directory in `allowed`. A relative path
// without a ".." component stays inside its base (the bases hold no symbolic links).
inline bool namesOutside(const std::string& s, const std::vector<std::filesystem::path>& bases,
                         const std::vector<std::filesystem::path>& allowed) {
  if (s.empty() || s.size() > 4096 || s.find('\0') != std::string::npos) return false;
  std::filesystem::path p(s);
  if (!p.is_absolute() && s.find("..") == std::string::npos) return false;
  std::vector<std::filesystem::path> candidates;
  if (p.is_absolute()) {
    candidates.push_back(p);
  } else {
    for (const auto& b : bases) candidates.push_back(b / p);
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(c, ec)) {
      // A path through a file or an unreadable directory reads nothing either way.
      continue;
    }
    std::filesystem::path canon = std::filesystem::weakly_canonical(c, ec);
    if (ec) return true;
    bool inside = false;
    for (const auto& a : allowed) inside = inside || within(canon, a);
    if (!inside) return true;
  }
  return false;
}

// Whether some scalar of the YAML `text` could be an absolute path or one with a ".."
// component: a '/' that no name character precedes, "..", or a backslash (a double-
// quoted scalar's escapes can spell either). Text without any of them needs no parse.
inline bool mayNamePaths(std::string_view text) {
  if (text.find("..") != std::string_view::npos || text.find('\\') != std::string_view::npos) return true;
  for (std::size_t i = text.find('/'); i != std::string_view::npos; i = text.find('/', i + 1)) {
    if (i == 0) return true;
    const unsigned char c = static_cast<unsigned char>(text[i - 1]);
    if (!(std::isalnum(c) || c == '_' || c == '.' || c == '-')) return true;
  }
  return false;
}

// Visits each distinct node once: an alias is the node it refers to, so a document of
// nested aliases (a "billion laughs") costs the walk only its own size.
inline bool walk(const YAML::Node& n, const std::vector<std::filesystem::path>& bases,
                 const std::vector<std::filesystem::path>& allowed, std::set<std::tuple<int, int, std::size_t>>& seen) {
  if (!n.IsDefined() || n.IsNull()) return false;
  if (!seen.emplace(n.Mark().pos, static_cast<int>(n.Type()), n.size()).second) return false;
  if (n.IsScalar()) return namesOutside(n.Scalar(), bases, allowed);
  if (n.IsSequence()) {
    for (const auto& item : n)
      if (walk(item, bases, allowed, seen)) return true;
    return false;
  }
  for (const auto& kv : n) {
    if (walk(kv.first, bases, allowed, seen) || walk(kv.second, bases, allowed, seen)) return true;
  }
  return false;
}

}  // namespace detail

// True when some scalar of the YAML `text` names an existing file or directory outside
// `allowed` (paths relative to each of `bases`, absolute paths as they are). The loaders
// follow such names (a kubeconfig's certificate-authority, a scenario's template): a
// user may name any file, but a fuzzer that names /dev/zero or /proc/kmsg only tests
// the machine. Inputs this rejects are skipped; the loaders parse YAML with the same
// library, so they see the same scalars. Text that does not parse names nothing.
inline bool yamlNamesOutsideFiles(const std::string& text, const std::vector<std::filesystem::path>& bases,
                                  const std::vector<std::filesystem::path>& allowed) {
  if (!detail::mayNamePaths(text)) return false;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return false;
  }
  std::set<std::tuple<int, int, std::size_t>> seen;
  return detail::walk(root, bases, allowed, seen);
}

}  // namespace cpscale::fuzz
