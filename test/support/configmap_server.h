// A fake kube-apiserver holding ConfigMaps in `default`, for the shards' meeting and
// results: POST, GET, merge PATCH, DELETE, and LIST and deletecollection by label
// selector (k=v,...) with paging (limit, continue). Every other resource lists empty,
// so that a run's cleanup can run against it.
#pragma once

#include <map>
#include <string>

#include "sim/kube/transport.h"
#include "test/support/workload_harness.h"

namespace cpscale::run::testing {

using nlohmann::json;

struct ConfigMapServer {
  std::map<std::string, json> objects;
  // Answers a POST with this status instead, once `failCreatesAfter` creates went well.
  int failCreatesWith = 0;
  std::size_t failCreatesAfter = 0;
  std::size_t creates = 0;
  std::size_t lists = 0;

  kube::HttpResponse answer(const kube::HttpRequest& r) {
    const std::string path = r.path.substr(0, r.path.find('?'));
    const std::string query = r.path.find('?') == std::string::npos ? "" : r.path.substr(r.path.find('?') + 1);
    const std::string collection = "/api/v1/namespaces/default/configmaps";
    // Every namespace's ConfigMaps are the ones in default.
    if (path == "/api/v1/configmaps" && r.method == "GET") return list(query);
    if (path != collection && !path.starts_with(collection + "/")) {
      if (r.method == "GET") return reply(200, {{"items", json::array()}, {"metadata", json::object()}});
      return status(404, "NotFound");
    }
    if (path == collection) {
      if (r.method == "POST") {
        if (failCreatesWith != 0 && creates >= failCreatesAfter) return status(failCreatesWith, "InternalError");
        ++creates;
        json obj = json::parse(r.body);
        obj["metadata"]["namespace"] = "default";
        const std::string name = obj["metadata"]["name"];
        if (objects.count(name)) return status(409, "AlreadyExists");
        objects[name] = obj;
        return reply(201, obj);
      }
      const std::string selector = param(query, "labelSelector");
      if (r.method == "DELETE") {
        for (auto it = objects.begin(); it != objects.end();)
          it = matches(it->second, selector) ? objects.erase(it) : ++it;
        return reply(200, {{"kind", "Status"}, {"status", "Success"}});
      }
      if (r.method == "GET") return list(query);
      return status(405, "MethodNotAllowed");
    }
    const std::string name = path.substr(collection.size() + 1);
    auto it = objects.find(name);
    if (it == objects.end()) return status(404, "NotFound");
    if (r.method == "GET") return reply(200, it->second);
    if (r.method == "PATCH") {
      it->second.merge_patch(json::parse(r.body));
      return reply(200, it->second);
    }
    if (r.method == "DELETE") {
      objects.erase(it);
      return reply(200, {{"kind", "Status"}, {"status", "Success"}});
    }
    return status(405, "MethodNotAllowed");
  }

  // Pages of `limit`, continuing after the name the token holds.
  kube::HttpResponse list(const std::string& query) {
    const std::string selector = param(query, "labelSelector");
    const std::size_t limit = param(query, "limit").empty() ? 0 : std::stoul(param(query, "limit"));
    const std::string after = param(query, "continue");
    json items = json::array();
    std::string next;
    for (const auto& [name, obj] : objects) {
      if (!after.empty() && name <= after) continue;
      if (!matches(obj, selector)) continue;
      if (limit > 0 && items.size() == limit) {
        next = items.back()["metadata"]["name"];
        break;
      }
      items.push_back(obj);
    }
    ++lists;
    return reply(200, {{"items", items}, {"metadata", {{"continue", next}}}});
  }

  static bool matches(const json& obj, const std::string& selector) {
    std::size_t at = 0;
    while (at < selector.size()) {
      std::size_t end = selector.find(',', at);
      if (end == std::string::npos) end = selector.size();
      const std::string term = selector.substr(at, end - at);
      const std::size_t eq = term.find('=');
      const json labels = obj["metadata"].value("labels", json::object());
      if (labels.value(term.substr(0, eq), std::string("\x01")) != term.substr(eq + 1)) return false;
      at = end + 1;
    }
    return true;
  }
  // A query parameter, percent-decoded as far as these need (%3D, %2C, %2F).
  static std::string param(const std::string& query, const std::string& key) {
    std::size_t at = 0;
    while (at < query.size()) {
      std::size_t end = query.find('&', at);
      if (end == std::string::npos) end = query.size();
      const std::string pair = query.substr(at, end - at);
      if (pair.starts_with(key + "=")) {
        std::string v = pair.substr(key.size() + 1), out;
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (v[i] == '%' && i + 2 < v.size()) {
            out += static_cast<char>(std::stoi(v.substr(i + 1, 2), nullptr, 16));
            i += 2;
          } else {
            out += v[i];
          }
        }
        return out;
      }
      at = end + 1;
    }
    return {};
  }
  static kube::HttpResponse reply(int code, const json& body) { return workloads::testing::jsonResponse(code, body); }
  static kube::HttpResponse status(int code, const std::string& reason) {
    return workloads::testing::statusResponse(code, reason);
  }
};

}  // namespace cpscale::run::testing
