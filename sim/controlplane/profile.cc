#include "sim/controlplane/profile.h"

#include <cctype>
#include <set>

#include "sim/common/duration.h"
#include "sim/common/yaml_reader.h"

namespace cpscale::controlplane {

namespace {

// "group/resource" -> the form --etcd-servers-overrides expects ("group/resource",
// with an empty group for the core API: "/events").
std::string normalizeResource(const YamlField& f) {
  std::string r = f.asString();
  if (r.find('/') == std::string::npos) r = "/" + r;
  auto slash = r.find('/');
  std::string resource = r.substr(slash + 1);
  if (resource.empty() || resource.find('/') != std::string::npos)
    throw f.error("expected \"group/resource\" (e.g. coordination.k8s.io/leases, /events), found '" + f.asString() +
                  "'");
  for (char c : r)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
          c == '-' || c == '/'))
      throw f.error("'" + f.asString() + "' is not a valid group/resource name");
  return r;
}

enum class Binary { kApiserver, kEtcd, kControllerManager, kScheduler };

// Why cpscale refuses `name` (a flag name without dashes, '_' read as '-') in a
// profile, or empty when the profile may set it. Refused: what local_plane.cc sets
// itself (addresses, ports, storage, PKI and authorization, and the flags behind the
// profile's own fields), and anything that changes who may connect or with which
// credentials. A flag given twice takes the last value, so allowing these would let a
// profile open the plane to the network or turn authorization off.
std::string refusal(std::string name, Binary binary) {
  for (char& c : name) c = c == '_' ? '-' : c;
  auto prefixed = [&](std::string_view p) { return name.rfind(p, 0) == 0; };
  auto suffixed = [&, dashed = "-" + name](std::string_view s) {  // "-cert-file" matches --cert-file too
    return dashed.size() >= s.size() && dashed.compare(dashed.size() - s.size(), s.size(), s) == 0;
  };
  if (suffixed("-cert-file") || suffixed("-key-file") || suffixed("-ca-file") || prefixed("tls-"))
    return "certificates and keys are cpscale's (its own PKI in the plane's state directory)";
  if (binary == Binary::kApiserver) {
    static const std::pair<std::string_view, std::string_view> fields[] = {
        {"watch-cache", "watchCache"},
        {"watch-cache-sizes", "watchCacheSizes"},
        {"max-requests-inflight", "maxRequestsInflight"},
        {"max-mutating-requests-inflight", "maxMutatingRequestsInflight"},
        {"enable-priority-and-fairness", "priorityAndFairness"},
        {"feature-gates", "featureGates"},
        {"etcd-servers-overrides", "etcds[].resources"},
    };
    for (const auto& [flag, field] : fields)
      if (name == flag) return "set it with the profile field '" + std::string(field) + "'";
    static const std::string_view owned[] = {"bind-address",
                                             "secure-port",
                                             "advertise-address",
                                             "permit-port-sharing",
                                             "permit-address-sharing",
                                             "external-hostname",
                                             "etcd-servers",
                                             "etcd-prefix",
                                             "service-cluster-ip-range",
                                             "allow-privileged",
                                             "disable-admission-plugins",
                                             "anonymous-auth",
                                             "enable-bootstrap-token-auth",
                                             "cert-dir",
                                             "kubelet-client-certificate",
                                             "kubelet-client-key",
                                             "kubelet-certificate-authority",
                                             "egress-selector-config-file"};
    for (auto o : owned)
      if (name == o) return "cpscale sets it (the plane's address, storage and access are its own)";
    for (std::string_view p : {"authorization-", "authentication-", "token-auth-", "oidc-", "requestheader-",
                               "service-account-", "etcd-cafile", "etcd-certfile", "etcd-keyfile"})
      if (prefixed(p)) return "authentication, authorization and service-account credentials are cpscale's";
  } else if (binary == Binary::kControllerManager || binary == Binary::kScheduler) {
    static const std::string_view owned[] = {
        "kubeconfig", "master",         "bind-address", "secure-port",    "port",
        "address",    "cert-dir",       "root-ca-file", "client-ca-file", "use-service-account-credentials",
        "config",     "write-config-to"};
    for (auto o : owned)
      if (name == o) return "cpscale sets it (the component's address, credentials and apiserver are its own)";
    for (std::string_view p :
         {"authorization-", "authentication-", "requestheader-", "service-account-", "cluster-signing-"})
      if (prefixed(p)) return "authentication, authorization and signing credentials are cpscale's";
  } else {
    static const std::string_view owned[] = {"name",
                                             "data-dir",
                                             "wal-dir",
                                             "listen-client-urls",
                                             "advertise-client-urls",
                                             "listen-peer-urls",
                                             "listen-metrics-urls",
                                             "listen-client-http-urls",
                                             "log-level",
                                             "config-file",
                                             "auto-tls",
                                             "peer-auto-tls",
                                             "client-cert-auth",
                                             "peer-client-cert-auth",
                                             "force-new-cluster",
                                             "enable-v2"};
    for (auto o : owned)
      if (name == o) return "cpscale sets it (the member's name, data, addresses and cluster are its own)";
    if (prefixed("initial-") || prefixed("discovery") || prefixed("peer-") || prefixed("client-crl") ||
        prefixed("cipher-suites") || prefixed("tls-"))
      return "cpscale sets it (the member's name, data, addresses and cluster are its own)";
  }
  return "";
}

std::string flagOf(const YamlField& f, Binary binary) {
  std::string s = f.asString();
  if (s.rfind("--", 0) != 0 || s.size() < 3 || s[2] == '-' || s[2] == '=')
    throw f.error("expected a flag of the form --name=value, found '" + s + "'");
  std::string name = s.substr(2, s.find('=') == std::string::npos ? std::string::npos : s.find('=') - 2);
  if (std::string why = refusal(name, binary); !why.empty())
    throw f.error("--" + name + " cannot be set by a profile: " + why);
  return s;
}

// Profile and etcd names name directories (runs/<id>/<profile>, <state>/etcd-<name>):
// an RFC 1123 DNS label, so no '/', '..' or surprises in a path.
std::string dnsLabelOf(const YamlField& f) {
  std::string s = f.asString();
  bool ok = !s.empty() && s.size() <= 63 && std::isalnum(static_cast<unsigned char>(s.front())) &&
            std::isalnum(static_cast<unsigned char>(s.back()));
  for (char c : s)
    ok = ok && (std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-');
  if (!ok)
    throw f.error("'" + s +
                  "' must be a DNS label: 1-63 lower-case letters, digits or '-', starting and ending "
                  "with a letter or digit");
  return s;
}

ComponentSpec componentOf(const YamlField& f, Binary binary, int apiservers) {
  ComponentSpec c;
  if (!f.isMap()) {  // `controllerManager: false`
    c.enabled = f.asBool();
    return c;
  }
  f.expectMap({"enabled", "apiserver", "args"});
  if (auto e = f.get("enabled")) c.enabled = e->asBool();
  if (auto a = f.get("apiserver")) {
    c.apiserver = static_cast<int>(a->asInt(0, 15));
    if (*c.apiserver >= apiservers)
      throw a->error("replica " + std::to_string(*c.apiserver) + " does not exist: the profile has " +
                     std::to_string(apiservers) + " apiserver" + (apiservers == 1 ? "" : "s") + " (0-" +
                     std::to_string(apiservers - 1) + ")");
  }
  if (auto a = f.get("args"))
    for (const auto& item : a->items()) c.args.push_back(flagOf(item, binary));
  return c;
}

}  // namespace

std::vector<int> Profile::clientApiservers() const {
  std::vector<int> out;
  for (int i = 0; i < apiservers; ++i) {
    bool dedicated = false;
    for (const ComponentSpec* c : {&controllerManager, &scheduler})
      dedicated = dedicated || (c->enabled && c->apiserver == i);
    if (!dedicated) out.push_back(i);
  }
  return out;
}

std::string Profile::etcdServersOverrides(const std::vector<std::string>& etcdUrls) const {
  std::string out;
  for (std::size_t i = 1; i < etcds.size() && i < etcdUrls.size(); ++i)
    for (const auto& r : etcds[i].resources) out += (out.empty() ? "" : ",") + r + "#" + etcdUrls[i];
  return out;
}

namespace {
std::chrono::milliseconds nodeMonitorGracePeriod(const Profile& p) {
  std::chrono::milliseconds grace = std::chrono::seconds(50);  // kube-controller-manager's default
  const std::string flag = "--node-monitor-grace-period=";
  for (const auto& a : p.controllerManager.args)
    if (a.rfind(flag, 0) == 0)
      if (auto d = parseDuration(a.substr(flag.size())))
        grace = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  return grace;
}
}  // namespace

std::string leaseTierRefusal(std::chrono::milliseconds every, const Profile& p) {
  if (every < std::chrono::seconds(1)) return "must be at least 1s";
  const auto grace = nodeMonitorGracePeriod(p);
  if (p.controllerManager.enabled && every >= grace)
    return "is " + formatDuration(every) + ", not below the node monitor grace period (" + formatDuration(grace) +
           "): the node lifecycle controller would mark live nodes Unknown between two writes";
  return "";
}

Profile loadProfile(const std::filesystem::path& path) {
  YamlField root = loadYamlFile(path);
  root.expectMap({"apiVersion", "kind", "name", "description", "apiservers", "etcds", "watchCache", "watchCacheSizes",
                  "maxRequestsInflight", "maxMutatingRequestsInflight", "priorityAndFairness", "loadIdentity",
                  "featureGates", "apiserverArgs", "controllerManager", "scheduler", "leaseTier"});
  Profile p;
  p.source = path.string();
  if (auto f = root.get("apiVersion"); f && f->asString() != "cpscale.io/v1alpha1")
    throw f->error("unsupported apiVersion '" + f->asString() + "' (expected cpscale.io/v1alpha1)");
  if (auto f = root.get("kind"); f && f->asString() != "Profile")
    throw f->error("expected kind Profile, found '" + f->asString() + "'");
  p.name = dnsLabelOf(root.require("name"));
  if (auto f = root.get("description")) p.description = f->asString();
  if (auto f = root.get("apiservers")) p.apiservers = static_cast<int>(f->asInt(1, 16));
  if (auto f = root.get("etcds")) {
    p.etcds.clear();
    std::set<std::string> names, routed;
    for (const auto& e : f->items()) {
      e.expectMap({"name", "resources", "extraArgs"});
      EtcdSpec spec;
      spec.name = dnsLabelOf(e.require("name"));
      if (!names.insert(spec.name).second) throw e.require("name").error("duplicate etcd name '" + spec.name + "'");
      if (auto r = e.get("resources")) {
        if (p.etcds.empty())
          throw r->error(
              "the first etcd is the main one and holds every resource not routed elsewhere; list resources on the others");
        for (const auto& item : r->items()) {
          std::string res = normalizeResource(item);
          if (!routed.insert(res).second) throw item.error("resource '" + res + "' is routed to two etcds");
          spec.resources.push_back(res);
        }
      } else if (!p.etcds.empty()) {
        throw e.error("an extra etcd needs 'resources' (which resources it holds)");
      }
      if (auto a = e.get("extraArgs"))
        for (const auto& item : a->items()) spec.extraArgs.push_back(flagOf(item, Binary::kEtcd));
      p.etcds.push_back(std::move(spec));
    }
    if (p.etcds.empty()) throw f->error("at least one etcd is required");
    if (p.etcds.size() > 8) throw f->error("at most 8 etcds are supported");
  }
  if (auto f = root.get("watchCache")) p.watchCache = f->asBool();
  if (auto f = root.get("watchCacheSizes")) p.watchCacheSizes = f->asStrings();
  if (auto f = root.get("maxRequestsInflight")) p.maxRequestsInflight = static_cast<int>(f->asInt(0, 1'000'000));
  if (auto f = root.get("maxMutatingRequestsInflight"))
    p.maxMutatingRequestsInflight = static_cast<int>(f->asInt(0, 1'000'000));
  if (auto f = root.get("priorityAndFairness")) p.priorityAndFairness = f->asBool();
  if (auto f = root.get("loadIdentity")) {
    const std::string v = f->asString();
    if (v == "admin")
      p.loadIdentity = LoadIdentity::kAdmin;
    else if (v == "user")
      p.loadIdentity = LoadIdentity::kUser;
    else
      throw f->error("is '" + v + "' (one of admin, user)");
  }
  if (auto f = root.get("featureGates"))
    for (auto& [k, v] : f->entries()) p.featureGates[k] = v.asBool();
  p.apiserverArgs.clear();  // a profile file states its flags itself
  if (auto f = root.get("apiserverArgs"))
    for (const auto& item : f->items()) p.apiserverArgs.push_back(flagOf(item, Binary::kApiserver));
  if (auto f = root.get("controllerManager"))
    p.controllerManager = componentOf(*f, Binary::kControllerManager, p.apiservers);
  if (auto f = root.get("scheduler")) p.scheduler = componentOf(*f, Binary::kScheduler, p.apiservers);
  if (p.controllerManager.enabled && p.scheduler.enabled && p.controllerManager.apiserver &&
      p.controllerManager.apiserver == p.scheduler.apiserver)
    throw root.require("scheduler")
        .require("apiserver")
        .error("replica " + std::to_string(*p.scheduler.apiserver) + " is already dedicated to the controller-manager");
  if (auto f = root.get("leaseTier")) {
    f->expectMap({"propagateEvery"});
    LeaseTierSpec t;
    if (auto e = f->get("propagateEvery")) {
      t.propagateEvery = std::chrono::duration_cast<std::chrono::milliseconds>(asDuration(*e));
      if (auto why = leaseTierRefusal(t.propagateEvery, p); !why.empty()) throw e->error(why);
    }
    p.leaseTier = t;
  }
  if (p.clientApiservers().empty())
    throw root.require("apiservers").error("every apiserver is dedicated to a component: the workloads need one too");
  return p;
}

}  // namespace cpscale::controlplane
