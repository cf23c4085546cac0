// Routing in the model plane: a request's path taken apart as kube-apiserver's
// request-info resolver does (plane_route.h), the labels it is counted under, and the
// apiserver replica it goes to.
#include "sim/model/plane_route.h"

#include <cctype>

#include "sim/model/plane_impl.h"

namespace cpscale::model {

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percentDecode(std::string_view s, bool plusIsSpace) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else if (s[i] == '+' && plusIsSpace) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

Route parseRoute(const kube::HttpRequest& req) {
  Route r;
  std::string_view full = req.path;
  std::size_t q = full.find('?');
  r.path = std::string(full.substr(0, q));
  if (q != std::string_view::npos) {
    std::string_view qs = full.substr(q + 1);
    std::size_t start = 0;
    for (std::size_t i = 0; i <= qs.size(); ++i) {
      if (i == qs.size() || qs[i] == '&') {
        std::string_view kv = qs.substr(start, i - start);
        start = i + 1;
        if (kv.empty()) continue;
        std::size_t eq = kv.find('=');
        r.query.emplace_back(percentDecode(kv.substr(0, eq), true),
                             eq == std::string_view::npos ? std::string() : percentDecode(kv.substr(eq + 1), true));
      }
    }
  }
  std::vector<std::string> segs;
  {
    std::string_view p = r.path;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= p.size(); ++i) {
      if (i == p.size() || p[i] == '/') {
        if (i > start) segs.push_back(percentDecode(p.substr(start, i - start), false));
        start = i + 1;
      }
    }
  }
  std::size_t rest = 0;
  if (segs.size() >= 3 && segs[0] == "api") {
    r.version = segs[1];
    rest = 2;
  } else if (segs.size() >= 4 && segs[0] == "apis") {
    r.group = segs[1];
    r.version = segs[2];
    rest = 3;
  } else {
    r.verb = req.method;
    return r;  // non-resource, or discovery
  }
  std::vector<std::string> parts(segs.begin() + static_cast<std::ptrdiff_t>(rest), segs.end());
  if (parts.size() >= 3 && parts[0] == "namespaces" &&
      !(parts.size() == 3 && (parts[2] == "status" || parts[2] == "finalize"))) {
    r.ns = parts[1];
    parts.erase(parts.begin(), parts.begin() + 2);
  }
  r.resource = true;
  r.resourceName = parts[0];
  if (parts.size() > 1) r.name = parts[1];
  if (parts.size() > 2) r.sub = parts[2];
  r.watch = r.param("watch") == "true" || r.param("watch") == "1";
  if (req.method == "GET") {
    r.verb = !r.name.empty() ? "GET" : r.watch ? "WATCH" : "LIST";
  } else if (req.method == "DELETE") {
    r.verb = r.name.empty() ? "DELETECOLLECTION" : "DELETE";
  } else {
    r.verb = req.method;
  }
  return r;
}

RequestLabels requestLabels(const Route& r, const std::string& method) {
  RequestLabels l;
  if (r.resource) {
    l.group = r.group;
    l.version = r.version;
    l.resource = r.resourceName;
    l.subresource = r.sub;
    l.verb = r.verb;
    l.dryRun = r.has("dryRun");
    l.scope = !r.name.empty() || r.verb == "POST" ? "resource" : !r.ns.empty() ? "namespace" : "cluster";
  } else {
    l.component = "";
    l.subresource = r.path;
    l.verb = method;
  }
  return l;
}

bool isWrite(std::string_view verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "DELETE" || verb == "DELETECOLLECTION";
}

std::optional<std::string> header(const kube::HttpRequest& req, std::string_view name) {
  for (const auto& h : req.headers) {
    if (h.name.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(h.name[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    }
    if (same) return h.value;
  }
  return std::nullopt;
}

std::size_t ModelPlane::Impl::replicaFor(const ModelTransport& t) {
  if (t.kind_ == ModelTransport::Kind::kApiserver) return t.member_;
  // A client's requests are spread round-robin, as a load balancer would.
  const auto& clients = options_.clientApiservers;
  return clients.empty() ? roundRobin_++ % apis_.size() : clients[roundRobin_++ % clients.size()];
}

}  // namespace cpscale::model
