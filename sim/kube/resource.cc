#include "sim/kube/resource.h"

#include <stdexcept>

namespace cpscale::kube {
namespace {

bool unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

void encodeTo(std::string& out, std::string_view s, std::string_view keep) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (unreserved(c) || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

std::string encode(std::string_view s, std::string_view keep) {
  std::string out;
  out.reserve(s.size());
  encodeTo(out, s, keep);
  return out;
}

constexpr std::string_view kPathKeep = ":@$&+=";

void appendSegment(std::string& path, std::string_view seg) {
  // "." and ".." would be collapsed by the server or a proxy and address another path.
  if (seg.empty() || seg == "." || seg == "..") {
    throw std::invalid_argument("invalid path segment '" + std::string(seg) + "'");
  }
  path.push_back('/');
  encodeTo(path, seg, kPathKeep);
}

}  // namespace

std::string percentEncodePathSegment(std::string_view s) { return encode(s, kPathKeep); }
std::string percentEncodeQuery(std::string_view s) { return encode(s, ""); }

QueryParams toQuery(const ListOptions& o, bool watch) {
  QueryParams q;
  if (!o.labelSelector.empty()) q.emplace_back("labelSelector", o.labelSelector);
  if (!o.fieldSelector.empty()) q.emplace_back("fieldSelector", o.fieldSelector);
  if (!o.resourceVersion.empty()) q.emplace_back("resourceVersion", o.resourceVersion);
  if (!o.resourceVersionMatch.empty()) q.emplace_back("resourceVersionMatch", o.resourceVersionMatch);
  if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
  if (!o.continueToken.empty()) q.emplace_back("continue", o.continueToken);
  if (watch) q.emplace_back("watch", "true");
  if (watch && o.allowWatchBookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (o.timeoutSeconds) q.emplace_back("timeoutSeconds", std::to_string(*o.timeoutSeconds));
  for (const auto& kv : o.extra) q.push_back(kv);
  return q;
}

QueryParams toQuery(const WriteOptions& o) {
  QueryParams q;
  if (!o.fieldManager.empty()) q.emplace_back("fieldManager", o.fieldManager);
  if (o.dryRun) q.emplace_back("dryRun", "All");
  return q;
}

std::string resourcePath(const ResourceRef& ref) {
  const auto& g = ref.gvr;
  if (g.version.empty() || g.resource.empty()) {
    throw std::invalid_argument("resource reference needs a version and a resource");
  }
  if (!g.namespaced && !ref.ns.empty()) {
    throw std::invalid_argument(g.resource + " is cluster-scoped but a namespace was given");
  }
  if (g.namespaced && ref.ns.empty() && !ref.name.empty()) {
    throw std::invalid_argument(g.resource + " '" + ref.name + "' is namespaced but no namespace was given");
  }
  if (!ref.subresource.empty() && ref.name.empty()) {
    throw std::invalid_argument("subresource '" + ref.subresource + "' needs an object name");
  }
  std::string path;
  path.reserve(128);
  if (g.group.empty()) {
    path = "/api";
  } else {
    path = "/apis";
    appendSegment(path, g.group);
  }
  appendSegment(path, g.version);
  if (!ref.ns.empty()) {
    path += "/namespaces";
    appendSegment(path, ref.ns);
  }
  appendSegment(path, g.resource);
  if (!ref.name.empty()) appendSegment(path, ref.name);
  if (!ref.subresource.empty()) appendSegment(path, ref.subresource);
  return path;
}

std::string requestPath(const ResourceRef& ref, const QueryParams& query) {
  std::string path = resourcePath(ref);
  char sep = '?';
  for (const auto& [k, v] : query) {
    path.push_back(sep);
    encodeTo(path, k, "");
    path.push_back('=');
    encodeTo(path, v, "");
    sep = '&';
  }
  return path;
}

}  // namespace cpscale::kube
