// check: can cpscale reach and use this cluster? Loads the kubeconfig as kubectl does,
// asks /version and /readyz, and says which protocol it spoke. Read-only.
#include <cstdlib>
#include <cxxopts.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "sim/cli/commands.h"
#include "sim/cli/options.h"
#include "sim/common/error.h"
#include "sim/engine/clock.h"
#include "sim/kube/curl_transport.h"
#include "sim/kube/kubeconfig.h"
#include "sim/run/target_check.h"

namespace cpscale::cli {

bool namesCluster(const cxxopts::ParseResult& r) {
  return r.count("kubeconfig") || r.count("context") || r.count("in-cluster");
}

kube::RestConfig loadTarget(const cxxopts::ParseResult& r) {
  if (r.count("in-cluster")) {
    if (r.count("kubeconfig") || r.count("context"))
      throw ConfigError("command line", "--in-cluster",
                        "names the pod's own cluster and credentials: drop --kubeconfig/--context");
    kube::InClusterOptions io;
    if (const char* host = std::getenv("KUBERNETES_SERVICE_HOST")) io.serviceHost = host;
    if (const char* port = std::getenv("KUBERNETES_SERVICE_PORT")) io.servicePort = port;
    // Elsewhere than the kubelet mounts it: a pod's identity borrowed outside a pod.
    if (const char* dir = std::getenv("CPSCALE_SERVICE_ACCOUNT_DIR"); dir && *dir) io.dir = dir;
    return kube::loadInCluster(io);
  }
  kube::LoadOptions lo;
  if (r.count("kubeconfig")) lo.explicitPath = r["kubeconfig"].as<std::string>();
  if (r.count("context")) lo.context = r["context"].as<std::string>();
  if (const char* env = std::getenv("KUBECONFIG")) lo.kubeconfigEnv = env;
  if (const char* home = std::getenv("HOME")) lo.homeDir = home;
  return kube::loadKubeconfig(lo);
}

void addTargetOptions(cxxopts::Options& opts) {
  opts.add_options()("kubeconfig", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)",
                     cxxopts::value<std::string>())("context", "kubeconfig context (default: current-context)",
                                                    cxxopts::value<std::string>())(
      "in-cluster", "inside a pod: the cluster it runs in, with its service account's token");
}

bool confirmedTarget(const cxxopts::ParseResult& r, const kube::RestConfig& config, const std::string& command,
                     const std::string& doWhat) {
  if (run::isLoopbackServer(config.server) || assumeYes(r)) return true;
  std::cerr << command << ": this would " << doWhat << " " << config.server << " (context " << config.contextName
            << ").\nRe-run with --yes (or CPSCALE_ASSUME_YES=1) to confirm.\n";
  return false;
}

ServerReached reachServer(kube::Transport& transport, const kube::RestConfig& config) {
  kube::HttpRequest version;
  version.method = "GET";
  version.path = "/version";
  kube::HttpResponse v = kube::roundTrip(transport, version);
  if (!v.ok())
    throw UnavailableError("cannot reach " + config.server + " (context " + config.contextName + " in " +
                           config.sourceFile + "): " + std::string(kube::toString(v.outcome)) + ": " + v.detail);
  if (v.status == 401 || v.status == 403)
    throw UnavailableError(config.server + " refused the credentials of context " + config.contextName + " (HTTP " +
                           std::to_string(v.status) + ")");
  ServerReached out{"unknown", v.httpVersion};
  try {
    out.gitVersion = nlohmann::json::parse(v.body).value("gitVersion", "unknown");
  } catch (const nlohmann::json::exception&) {
  }
  return out;
}

int check(const Args& args) {
  cxxopts::Options opts("cpscale check", "Check that a cluster is reachable with the given kubeconfig (read-only).");
  addTargetOptions(opts);
  opts.add_options()("h,help", "show this help");
  auto parsed = parseArgs(opts, args);
  if (!parsed) return 0;
  const cxxopts::ParseResult& r = *parsed;
  kube::RestConfig config = loadTarget(r);
  kube::CurlTransportOptions to;
  to.connectTimeout = std::chrono::seconds(5);
  to.defaultTimeout = std::chrono::seconds(10);
  kube::CurlTransport transport(config, to);

  ServerReached reached = reachServer(transport, config);
  kube::HttpRequest ready;
  ready.method = "GET";
  ready.path = "/readyz";
  kube::HttpResponse rz = kube::roundTrip(transport, ready);
  std::cout << "server      " << config.server << "\ncontext     " << config.contextName << " (" << config.sourceFile
            << ")\nversion     " << reached.gitVersion << "\nprotocol    HTTP/" << reached.httpVersion
            << "\nreadyz      "
            << (rz.ok() ? (rz.status == 200 ? std::string("ok") : "HTTP " + std::to_string(rz.status)) : rz.detail)
            << "\n";
  return rz.ok() && rz.status == 200 ? 0 : static_cast<int>(ExitCode::kUnavailable);
}

}  // namespace cpscale::cli
