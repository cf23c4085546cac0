#include "sim/controlplane/readiness.h"

#include "sim/kube/curl_transport.h"

namespace cpscale::controlplane {

namespace {

// Splits "scheme://host:port/path" into the server and the path.
std::pair<std::string, std::string> splitUrl(const std::string& url) {
  auto scheme = url.find("://");
  auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

}  // namespace

ReadinessProbe::ReadinessProbe(std::string url, std::optional<PkiPaths> tls) {
  auto [server, path] = splitUrl(url);
  path_ = path;
  kube::RestConfig config;
  config.server = server;
  if (tls) {
    config.caPem = readFile(tls->caCert());
    config.clientCertPem = readFile(tls->adminCert());
    config.clientKeyPem = kube::Secret(readFile(tls->adminKey()));
  }
  kube::CurlTransportOptions options;
  options.maxHostConnections = 1;
  options.connectTimeout = std::chrono::seconds(2);
  options.defaultTimeout = std::chrono::seconds(5);
  transport_ = std::make_unique<kube::CurlTransport>(config, options);
}

ReadinessProbe::~ReadinessProbe() = default;

ProbeResult ReadinessProbe::check() {
  kube::HttpRequest req;
  req.method = "GET";
  req.path = path_;
  kube::HttpResponse resp = kube::roundTrip(*transport_, std::move(req));
  if (!resp.ok()) return {false, std::string(kube::toString(resp.outcome)) + ": " + resp.detail};
  if (resp.status != 200) {
    std::string body = resp.body.substr(0, 300);
    return {false, "HTTP " + std::to_string(resp.status) + ": " + body};
  }
  return {true, ""};
}

}  // namespace cpscale::controlplane
