#include "sim/capture/collect.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sim/common/error.h"
#include "sim/metrics/prometheus_text.h"

namespace cpscale::capture {
namespace {

using nlohmann::json;

// Lists as object metadata only (the server sends no specs, data or status), with
// plain JSON as the fallback of a server that does not offer it.
constexpr const char* kMetadataOnly =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

std::string get(kube::Transport& t, const std::string& path, const std::string& accept = "") {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = path;
  if (!accept.empty()) req.headers.push_back({"Accept", accept});
  req.timeout = std::chrono::seconds(60);
  kube::HttpResponse r = kube::roundTrip(t, req);
  if (!r.ok())
    throw UnavailableError("GET " + path + " on " + t.server() + ": " + std::string(kube::toString(r.outcome)) +
                           (r.detail.empty() ? "" : ": " + r.detail));
  if (r.status != 200)
    throw UnavailableError("GET " + path + " on " + t.server() + ": HTTP " + std::to_string(r.status) +
                           (r.status == 401 || r.status == 403 ? " (the credentials may not read it)" : ""));
  return std::move(r.body);
}

// Every page of a list (limit 500, following `continue`) as one {"items": [...]}.
json list(kube::Transport& t, const std::string& path, const char* accept) {
  json all = {{"items", json::array()}};
  std::string cont;
  do {
    std::string p = path + (path.find('?') == std::string::npos ? "?" : "&") + "limit=500";
    if (!cont.empty()) p += "&continue=" + cont;
    json page;
    try {
      page = json::parse(get(t, p, accept));
    } catch (const json::parse_error& e) {
      throw UnavailableError("GET " + path + " on " + t.server() + ": not a JSON list: " + e.what());
    }
    if (page.contains("items") && page["items"].is_array())
      for (auto& item : page["items"]) all["items"].push_back(std::move(item));
    cont = page.contains("metadata") ? page["metadata"].value("continue", "") : "";
  } while (!cont.empty());
  return all;
}

std::string listPath(const ResourceKey& k) {
  return (k.group.empty() ? "/api/v1/" : "/apis/" + k.group + "/v1/") + k.resource;
}

// The served version of a custom resource (its storage version, else the first
// served one), from its CRD.
std::string servedVersion(const json& crds, const ResourceKey& k) {
  for (const json& c : crds.value("items", json::array())) {
    const json spec = c.value("spec", json::object());
    if (spec.value("group", "") != k.group || spec.value("names", json::object()).value("plural", "") != k.resource)
      continue;
    std::string first;
    for (const json& v : spec.value("versions", json::array())) {
      if (!v.value("served", false)) continue;
      if (v.value("storage", false)) return v.value("name", "");
      if (first.empty()) first = v.value("name", "");
    }
    return first;
  }
  return "v1";
}

}  // namespace

kube::RequestId ReadOnlyTransport::submit(kube::HttpRequest req, kube::ResponseHandler done) {
  if (req.method != "GET")
    throw std::logic_error("cpscale capture is read-only: refused " + req.method + " " + req.path);
  ++gets_;
  return inner_.submit(std::move(req), std::move(done));
}

Reading collect(kube::Transport& transport, const CollectOptions& o) {
  ReadOnlyTransport t(transport);
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  Reading r;
  r.server = transport.server();
  try {
    r.version = json::parse(get(t, "/version")).value("gitVersion", "unknown");
  } catch (const json::parse_error&) {
    r.version = "unknown";
  }
  say("scraping /metrics (the window's start)");
  r.metricsBefore = get(t, "/metrics");
  const std::function<double()> clock = o.seconds ? o.seconds : [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  const double start = clock();
  say("listing nodes, node Leases, namespaces and custom resource definitions");
  r.nodes = list(t, "/api/v1/nodes", kMetadataOnly);
  r.nodeLeases = list(t, "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", "");
  r.namespaces = list(t, "/api/v1/namespaces", kMetadataOnly);
  r.crds = list(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "");
  for (const ResourceKey& k : dormantBuiltins()) r.builtinLists[k.resource] = list(t, listPath(k), kMetadataOnly);
  const auto spent = std::chrono::milliseconds(static_cast<long long>((clock() - start) * 1000));
  if (spent < o.window) {
    say("waiting out the window");
    if (o.wait) o.wait(o.window - spent);
  }
  say("scraping /metrics (the window's end)");
  r.metricsAfter = get(t, "/metrics");
  r.windowSeconds = clock() - start;
  if (o.now) r.capturedAt = o.now();
  // Which custom resources were created in the window: list those (their namespaces).
  const ClusterShape first = measureShape(r);
  for (const ChurnedKind& c : first.churned) {
    const std::string version = servedVersion(r.crds, c.key);
    r.customLists[c.key] = list(t, "/apis/" + c.key.group + "/" + version + "/" + c.key.resource, kMetadataOnly);
  }
  return r;
}

}  // namespace cpscale::capture
