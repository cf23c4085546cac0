// A workload on a virtual-time engine with a scripted API server: the fake answers
// like kube-apiserver would for the verbs the workloads use (echoing created objects
// with a resourceVersion), and tests override single answers to inject faults. A watch
// the override does not answer stays open, as a quiet server's would; tests send events
// on it with pushEvent.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/simulator_impl.h"
#include "sim/kube/api_client.h"
#include "test/support/fake_transport.h"
#include "workloads/workload.h"

namespace cpscale::workloads::testing {

using nlohmann::json;
using namespace std::chrono_literals;

inline kube::HttpResponse jsonResponse(int status, const json& body) {
  kube::HttpResponse r;
  r.status = status;
  r.body = body.dump();
  r.headers.push_back({"content-type", "application/json"});
  return r;
}

inline kube::HttpResponse statusResponse(int code, const std::string& reason) {
  return jsonResponse(
      code, {{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", reason}, {"code", code}});
}

// Path without the query string.
inline std::string pathOf(const kube::HttpRequest& r) { return r.path.substr(0, r.path.find('?')); }

struct Harness {
  engine::VirtualSimulator sim;
  kube::FakeTransport transport{sim};
  kube::ApiClient api{transport, sim.clock(), sim};
  WorkloadContext ctx{sim, api, "t1", 42};
  // Overrides: return a response to take over, nullopt to fall through to the default.
  std::function<std::optional<kube::HttpResponse>(const kube::HttpRequest&)> override;
  std::uint64_t rv = 100;

  Harness() {
    transport.setLatency(1ms);
    transport.setHandler([this](const kube::HttpRequest& r) {
      if (override) {
        if (auto o = override(r)) return *o;
      }
      return answer(r);
    });
    transport.setStreamHandler([this](const kube::HttpRequest& r) -> std::optional<kube::HttpResponse> {
      if (override) return override(r);
      return std::nullopt;
    });
  }

  // Sends one watch event on every open watch whose path contains `fragment`; returns
  // how many streams took it.
  std::size_t pushEvent(const std::string& fragment, const std::string& type, const json& object) {
    return transport.pushToStreams(fragment, json{{"type", type}, {"object", object}}.dump() + "\n");
  }

  kube::HttpResponse answer(const kube::HttpRequest& r) {
    const std::string rvs = std::to_string(++rv);
    if (r.method == "POST" || r.method == "PUT") {
      json obj = json::parse(r.body);
      obj["metadata"]["resourceVersion"] = rvs;
      obj["metadata"]["uid"] = "uid-" + rvs;
      return jsonResponse(r.method == "POST" ? 201 : 200, obj);
    }
    if (r.method == "GET") {
      json obj = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", pathOf(r).substr(pathOf(r).rfind('/') + 1)}, {"resourceVersion", rvs}}},
                  {"spec", {{"holderIdentity", "x"}, {"leaseDurationSeconds", 40}}}};
      return jsonResponse(200, obj);
    }
    return jsonResponse(200, {{"metadata", {{"resourceVersion", rvs}}}});
  }

  // Requests whose method is `method` and whose path contains `fragment`.
  std::vector<kube::FakeTransport::Recorded> requests(const std::string& method, const std::string& fragment) const {
    std::vector<kube::FakeTransport::Recorded> out;
    for (const auto& r : transport.requests()) {
      if (r.request.method == method && r.request.path.find(fragment) != std::string::npos) out.push_back(r);
    }
    return out;
  }
  std::size_t count(const std::string& method, const std::string& fragment) const {
    return requests(method, fragment).size();
  }
};

// A scenario entry from YAML text, as the scenario file would hold it.
inline YamlField entry(const std::string& yaml) { return loadYamlString(yaml, "scenario.yaml"); }

}  // namespace cpscale::workloads::testing
