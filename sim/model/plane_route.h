// A request as the model plane routes it (plane_routing.cc): its path taken apart as
// kube-apiserver's request-info resolver does, and the apiserver_request_total labels
// it is counted under. Private to sim/model: the model plane's parts share it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/kube/transport.h"
#include "sim/model/member_metrics.h"

namespace cpscale::model {

// A request path taken apart as kube-apiserver's request-info resolver does.
struct Route {
  bool resource = false;  // an API resource path (else non-resource: /metrics, /readyz, ...)
  std::string path;       // without the query
  std::string group, version, resourceName, ns, name, sub;
  std::vector<std::pair<std::string, std::string>> query;
  std::string verb;  // as apiserver_request_total labels it
  bool watch = false;

  std::string param(std::string_view k) const {
    for (const auto& [key, v] : query)
      if (key == k) return v;
    return {};
  }
  bool has(std::string_view k) const {
    for (const auto& [key, v] : query)
      if (key == k) return true;
    return false;
  }
};

Route parseRoute(const kube::HttpRequest& req);

// The labels apiserver_request_total counts a request with this route under; `method`
// is its HTTP method (a non-resource request's verb).
RequestLabels requestLabels(const Route& r, const std::string& method);

bool isWrite(std::string_view verb);

// A request header's value, its name compared as HTTP compares names (any case).
std::optional<std::string> header(const kube::HttpRequest& req, std::string_view name);

}  // namespace cpscale::model
