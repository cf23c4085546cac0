#include "sim/run/target.h"

#include <algorithm>
#include <iostream>

#include "sim/common/error.h"
#include "sim/controlplane/local_plane.h"
#include "sim/controlplane/pki.h"
#include "sim/kube/api_client.h"
#include "sim/kube/curl_transport.h"
#include "sim/run/target_check.h"

namespace cpscale::run {

kube::RestConfig withServer(const kube::RestConfig& base, const std::string& server) {
  kube::RestConfig c = base;
  c.server = server;
  return c;
}

std::optional<metrics::TargetInfo> scrapeInfo(const result::TargetMember& m, const controlplane::Profile& profile) {
  metrics::TargetInfo info;
  info.name = m.name;
  if (m.role == "etcd") {
    info.role = metrics::TargetRole::kEtcd;
    info.etcdCluster = m.name;
    for (const auto& e : profile.etcds)
      if ("etcd-" + e.name == m.name)
        for (const auto& r : e.resources) info.etcdResources.push_back(r.front() == '/' ? r.substr(1) : r);
  } else if (m.role == "kube-apiserver") {
    info.role = metrics::TargetRole::kApiserver;
  } else if (m.role == "kube-controller-manager") {
    info.role = metrics::TargetRole::kControllerManager;
  } else if (m.role == "kube-scheduler") {
    info.role = metrics::TargetRole::kScheduler;
  } else {
    return std::nullopt;
  }
  return info;
}

namespace {

kube::CurlTransportOptions loadTransportOptions(const scenario::Scenario& sc, std::vector<std::string> servers) {
  kube::CurlTransportOptions cto;
  cto.maxHostConnections = static_cast<long>(sc.driver.connections);
  cto.maxConcurrentStreams = static_cast<long>(sc.driver.maxInFlightPerConnection);
  for (const auto& w : sc.workloads) {
    if (const long n = w->watchStreamsPerConnection(); n > 0)
      cto.streamsPerConnection = std::min(cto.streamsPerConnection, n);
  }
  cto.servers = std::move(servers);
  return cto;
}

// What the live targets share: a kubeconfig's credentials, libcurl transports, the
// wall clock, and scrape targets made from the recorded members.
class LiveTarget : public Target {
 public:
  engine::SimulatorMode mode() const override { return engine::SimulatorMode::kPaced; }
  kube::Transport& setupTransport() override { return *setup_; }
  engine::Clock& setupClock() override { return wall_; }
  kube::TransportPtr loadTransport(const scenario::Scenario& sc) override {
    return std::make_unique<kube::CurlTransport>(loadConfig_ ? *loadConfig_ : config_,
                                                 loadTransportOptions(sc, loadServers_));
  }
  std::vector<metrics::ScrapeTarget> scrapeTargets(const result::RunResult& result) override {
    std::vector<metrics::ScrapeTarget> out;
    for (const auto& m : result.target.members) {
      auto info = scrapeInfo(m, profile_);
      if (!info) continue;  // recorded only
      metrics::ScrapeTarget t;
      t.info = *info;
      if (info->role == metrics::TargetRole::kEtcd) {
        kube::RestConfig plain;
        plain.server = m.url;
        t.transport = std::make_shared<kube::CurlTransport>(plain);
      } else {
        // Apiservers with the run's credentials; the local plane's controllers on their
        // secure port with the plane's CA and the admin certificate (their delegated
        // authorization asks the apiserver).
        t.transport = std::make_shared<kube::CurlTransport>(withServer(config_, m.url));
        if (info->role == metrics::TargetRole::kApiserver) t.heapProfilePath = heapProfilePath_;
      }
      out.push_back(std::move(t));
    }
    return out;
  }

 protected:
  explicit LiveTarget(controlplane::Profile profile) : profile_(std::move(profile)) {}
  void connect(kube::RestConfig config) {
    config_ = std::move(config);
    setup_ = std::make_unique<kube::CurlTransport>(config_);
  }

  controlplane::Profile profile_;
  kube::RestConfig config_;
  engine::WallClock wall_;
  std::unique_ptr<kube::CurlTransport> setup_;
  // The workloads' own credentials, when they are not the run's (loadIdentity: user).
  std::optional<kube::RestConfig> loadConfig_;
  // Every replica that serves the workloads, round-robin as a load balancer would.
  std::vector<std::string> loadServers_;
  std::string heapProfilePath_;
};

class LocalTarget final : public LiveTarget, public MemberFaults {
 public:
  explicit LocalTarget(LocalTargetOptions o) : LiveTarget(o.profile), opt_(std::move(o)) {}

  void open(result::RunResult& result) override {
    controlplane::PlaneOptions po;
    po.stateDir = opt_.stateDir;
    po.binDir = opt_.binDir;
    po.profile = opt_.profile;
    po.name = opt_.name;
    po.detached = opt_.keep;
    po.placement = opt_.placement;
    if (opt_.progress)
      std::cerr << "cpscale run: starting the local plane (profile " << opt_.profile.name << ") in "
                << po.stateDir.string() << "\n";
    plane_ = std::make_unique<controlplane::LocalPlane>(po);
    if (opt_.keep) plane_->release();
    kube::LoadOptions lo;
    lo.explicitPath = plane_->kubeconfig().string();
    // The kubeconfig's current context (where setup and cleanup go) is a replica the
    // workloads reach too, never one dedicated to a controller component.
    connect(kube::loadKubeconfig(lo));
    const auto& rec = plane_->record();
    result.target.kind = "local";
    result.target.server = config_.server;
    result.target.context = config_.contextName;
    result.target.kubernetesVersion = rec.kubernetesVersion;
    result.target.etcdVersion = rec.etcdVersion;
    loadServers_ = rec.clientApiserverUrls();
    for (const auto& c : rec.components) {
      std::string serves;
      if (c.role == "kube-apiserver") {
        // Who reaches this replica: the workloads (unless it is dedicated to a
        // component) and the components that talk to it.
        if (std::find(loadServers_.begin(), loadServers_.end(), c.url) != loadServers_.end()) serves = "workloads";
        for (const auto& d : rec.components)
          if (d.apiserver == c.name) serves += (serves.empty() ? "" : ", ") + d.role;
      } else {
        serves = c.apiserver;
      }
      result.target.members.push_back(
          {c.name, c.role, c.url, c.role == "etcd" ? rec.etcdVersion : rec.kubernetesVersion, serves});
    }
    // The local plane's apiservers profile (their default): heap after a forced GC.
    heapProfilePath_ = "/debug/pprof/heap?gc=1&debug=1";
    if (opt_.profile.loadIdentity == controlplane::LoadIdentity::kUser) useLoadIdentity();
  }
  std::optional<std::string> crashed() override { return plane_ ? plane_->crashed() : std::nullopt; }
  bool ownsMembers() const override { return true; }
  // The plane goes with the run: its members stopped, then its data (etcd's, with any
  // object the run could not delete), certificates and kubeconfigs deleted. Its logs
  // stay with the run's outputs. A kept plane keeps everything.
  void close() override {
    plane_.reset();
    if (!opt_.keep && !closed_) controlplane::removeStateKeepingLogs(opt_.stateDir);
    closed_ = true;
  }
  ~LocalTarget() override { close(); }

  MemberFaults* faults() override { return this; }
  std::vector<std::string> members() const override { return controlplane::memberNames(opt_.profile); }
  void kill(const std::string& m) override { plane().kill(m); }
  void restart(const std::string& m, const std::function<bool()>& abandon) override { plane().restart(m, abandon); }
  void pause(const std::string& m) override { plane().pause(m); }
  void resume(const std::string& m) override { plane().resume(m); }
  void markDown(const std::string& m) override { plane().markDown(m); }

 private:
  bool closed_ = false;
  controlplane::LocalPlane& plane() {
    if (!plane_) throw std::logic_error("the local plane is not running");
    return *plane_;
  }
  // The workloads authenticate as user cpscale-load (group cpscale:load), bound to
  // cluster-admin: what they may do is unchanged, but flow control now applies to them.
  // Setup, cleanup and scrapes stay on the admin certificate.
  void useLoadIdentity() {
    const controlplane::PkiPaths pki{plane_->record().stateDir / "pki"};
    kube::ApiClient admin(*setup_, wall_);
    const nlohmann::json binding = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "ClusterRoleBinding"},
        {"metadata", {{"name", "cpscale-load"}}},
        {"roleRef", {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", "cluster-admin"}}},
        {"subjects", nlohmann::json::array(
                         {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Group"}, {"name", "cpscale:load"}}})}};
    kube::ApiResult r = admin.create(kube::ResourceRef(kube::gvr::kClusterRoleBindings), binding);
    if (!r.ok() && r.status != 409)
      throw UnavailableError("binding the workloads' identity (cpscale:load) to cluster-admin: " + r.describe());
    loadConfig_ = config_;
    loadConfig_->clientCertPem = controlplane::readFile(pki.loadCert());
    loadConfig_->clientKeyPem = kube::Secret(controlplane::readFile(pki.loadKey()));
  }
  LocalTargetOptions opt_;
  std::unique_ptr<controlplane::LocalPlane> plane_;
};

class ClusterTarget final : public LiveTarget {
 public:
  ClusterTarget(kube::RestConfig config, controlplane::Profile profile) : LiveTarget(std::move(profile)) {
    if (profile_.loadIdentity == controlplane::LoadIdentity::kUser)
      throw ConfigError(profile_.source.empty() ? "profile" : profile_.source, "loadIdentity",
                        "'user' is the local plane's: cpscale issues its certificate with the plane's CA; against a "
                        "cluster the workloads use the kubeconfig's credentials");
    connect(std::move(config));
  }
  void open(result::RunResult& result) override {
    result.target.kind = "cluster";
    result.target.server = config_.server;
    result.target.context = config_.contextName;
    result.target.members.push_back({"kube-apiserver", "kube-apiserver", config_.server, "", ""});
    result.profile.spec = nlohmann::json::object();
    loadServers_ = {config_.server};
  }
  void discover(kube::ApiClient& setup, result::RunResult& result) override {
    // The cluster's real topology: the apiserver endpoints behind the `kubernetes`
    // Service. They are recorded; load and scrapes go only to the server named.
    for (const std::string& hostPort : apiserverEndpoints(setup))
      result.target.members.push_back(
          {"endpoint " + hostPort, "kube-apiserver-endpoint", "https://" + hostPort, "", ""});
  }
};

}  // namespace

std::unique_ptr<Target> localTarget(LocalTargetOptions options) {
  return std::make_unique<LocalTarget>(std::move(options));
}

std::unique_ptr<Target> clusterTarget(kube::RestConfig config, controlplane::Profile profile) {
  return std::make_unique<ClusterTarget>(std::move(config), std::move(profile));
}

}  // namespace cpscale::run
