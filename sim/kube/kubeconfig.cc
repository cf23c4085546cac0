#include "sim/kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/common/error.h"
#include "sim/kube/base64.h"

namespace cpscale::kube {
namespace {

namespace fs = std::filesystem;

// One parsed file. Nodes keep their yaml-cpp Marks, so every later error can still
// point at the line that caused it.
struct File {
  std::string path;
  YAML::Node root;
};

// A named entry of clusters/users/contexts, remembered with where it came from.
struct Entry {
  const File* file = nullptr;
  std::string fieldPath;  // e.g. "users[2]"
  YAML::Node node;        // the entry itself ({name, user|cluster|context})
};

std::string at(const std::string& file, const YAML::Mark& mark) {
  if (mark.is_null()) return file;
  return file + ":" + std::to_string(mark.line + 1);
}

// The position of `key` itself inside a mapping: errors point at the line a reader
// would look at, not at the (possibly multi-line) value below it.
YAML::Mark keyMark(const YAML::Node& parent, const std::string& key) {
  if (parent.IsMap()) {
    for (const auto& kv : parent) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first.Mark();
    }
  }
  return parent.Mark();
}

std::string readFileOrThrow(const std::string& path, const std::string& where, const std::string& field,
                            const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    throw ConfigError(
        where, field,
        std::string("cannot read ") + what + " '" + path + "': " + (err ? std::strerror(err) : "unreadable"));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

File parseFile(const std::string& path) {
  File f{path, {}};
  std::string text = readFileOrThrow(path, path, "", "kubeconfig");
  try {
    f.root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1), "",
                      "malformed YAML: " + e.msg);
  }
  // An empty file is a valid, empty kubeconfig (kubectl accepts it too).
  if (!f.root.IsNull() && !f.root.IsMap()) {
    throw ConfigError(at(path, f.root.Mark()), "", "expected a kubeconfig mapping at the top level");
  }
  return f;
}

// Reads an optional string field; a non-scalar value is an error at its own line.
std::optional<std::string> optString(const File& f, const YAML::Node& parent, const char* key,
                                     const std::string& fieldPath) {
  const YAML::Node v = parent[key];
  if (!v.IsDefined() || v.IsNull()) return std::nullopt;
  if (!v.IsScalar()) throw ConfigError(at(f.path, keyMark(parent, key)), fieldPath, "expected a string");
  return v.Scalar();
}

bool optBool(const File& f, const YAML::Node& parent, const char* key, const std::string& fieldPath) {
  const YAML::Node v = parent[key];
  if (!v.IsDefined() || v.IsNull()) return false;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
    throw ConfigError(at(f.path, keyMark(parent, key)), fieldPath, "expected true or false");
  }
  return out;
}

// Relative paths in a kubeconfig are relative to the file that names them.
std::string resolvePath(const File& f, const std::string& p) {
  fs::path path(p);
  if (path.is_absolute()) return p;
  return (fs::path(f.path).parent_path() / path).lexically_normal().string();
}

// "<x>-data" (base64) wins over "<x>" (a file), as in client-go.
std::string dataOrFile(const File& f, const YAML::Node& parent, const char* fileKey, const std::string& fieldPrefix,
                       const char* what) {
  const std::string dataKey = std::string(fileKey) + "-data";
  if (auto data = optString(f, parent, dataKey.c_str(), fieldPrefix + dataKey)) {
    auto decoded = base64Decode(*data);
    if (!decoded) {
      // Never echo the value: it may be a private key.
      throw ConfigError(at(f.path, keyMark(parent, dataKey)), fieldPrefix + dataKey, "not valid base64");
    }
    return std::move(*decoded);
  }
  if (auto file = optString(f, parent, fileKey, fieldPrefix + fileKey)) {
    return readFileOrThrow(resolvePath(f, *file), at(f.path, keyMark(parent, fileKey)), fieldPrefix + fileKey, what);
  }
  return {};
}

std::string trimRight(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.pop_back();
  }
  return s;
}

// Merges one list section (clusters, users, contexts) into `out`: the first file to
// define a name wins, and later definitions of the same name are ignored whole.
void collect(const File& f, const char* section, const char* bodyKey, std::map<std::string, Entry>& out) {
  const YAML::Node list = f.root[section];
  if (!list.IsDefined() || list.IsNull()) return;
  if (!list.IsSequence()) throw ConfigError(at(f.path, keyMark(f.root, section)), section, "expected a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string path = std::string(section) + "[" + std::to_string(i) + "]";
    if (!item.IsMap()) throw ConfigError(at(f.path, item.Mark()), path, "expected a mapping");
    auto name = optString(f, item, "name", path + ".name");
    if (!name || name->empty()) throw ConfigError(at(f.path, item.Mark()), path + ".name", "missing");
    const YAML::Node body = item[bodyKey];
    if (body.IsDefined() && !body.IsNull() && !body.IsMap()) {
      throw ConfigError(at(f.path, body.Mark()), path + "." + bodyKey, "expected a mapping");
    }
    out.try_emplace(*name, Entry{&f, path, item});
  }
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    std::string part = s.substr(start, end - start);
    bool seen = false;
    for (const auto& o : out) seen = seen || o == part;
    if (!part.empty() && !seen) out.push_back(std::move(part));
    start = end + 1;
  }
  return out;
}

std::string joinNames(const std::map<std::string, Entry>& m) {
  std::string s;
  for (const auto& [name, _] : m) s += (s.empty() ? "" : ", ") + name;
  return s.empty() ? "(none)" : s;
}

}  // namespace

std::vector<std::string> kubeconfigFiles(const LoadOptions& options) {
  if (!options.explicitPath.empty()) return {options.explicitPath};
  if (options.kubeconfigEnv && !options.kubeconfigEnv->empty()) {
    // Missing files in $KUBECONFIG are skipped, as kubectl does.
    std::vector<std::string> existing;
    for (auto& p : splitList(*options.kubeconfigEnv)) {
      std::error_code ec;
      if (fs::exists(p, ec)) existing.push_back(std::move(p));
    }
    if (existing.empty()) {
      throw ConfigError("KUBECONFIG", "", "none of the listed files exist: " + *options.kubeconfigEnv);
    }
    return existing;
  }
  if (options.homeDir.empty()) {
    throw ConfigError("kubeconfig", "", "no --kubeconfig, no KUBECONFIG and no home directory to find ~/.kube/config");
  }
  return {(fs::path(options.homeDir) / ".kube" / "config").string()};
}

RestConfig loadKubeconfig(const LoadOptions& options) {
  std::vector<File> files;
  for (const auto& p : kubeconfigFiles(options)) files.push_back(parseFile(p));

  std::map<std::string, Entry> clusters, users, contexts;
  std::string currentContext;
  std::string currentContextWhere;
  for (const auto& f : files) {
    if (f.root.IsNull()) continue;
    collect(f, "clusters", "cluster", clusters);
    collect(f, "users", "user", users);
    collect(f, "contexts", "context", contexts);
    if (currentContext.empty()) {
      if (auto cc = optString(f, f.root, "current-context", "current-context"); cc && !cc->empty()) {
        currentContext = *cc;
        currentContextWhere = at(f.path, keyMark(f.root, "current-context"));
      }
    }
  }

  std::string filesList;
  for (const auto& f : files) filesList += (filesList.empty() ? "" : ":") + f.path;

  std::string contextName = options.context.empty() ? currentContext : options.context;
  std::string contextWhere = options.context.empty() ? currentContextWhere : "--context";
  if (contextName.empty()) {
    throw ConfigError(filesList, "current-context", "not set, and no --context given");
  }
  auto ctxIt = contexts.find(contextName);
  if (ctxIt == contexts.end()) {
    throw ConfigError(
        contextWhere, options.context.empty() ? "current-context" : "",
        "context '" + contextName + "' not found in " + filesList + " (available: " + joinNames(contexts) + ")");
  }
  const Entry& ctx = ctxIt->second;
  const File& cf = *ctx.file;
  const YAML::Node ctxBody = ctx.node["context"];
  const std::string ctxPath = ctx.fieldPath + ".context";
  if (!ctxBody.IsDefined() || ctxBody.IsNull()) {
    throw ConfigError(at(cf.path, ctx.node.Mark()), ctxPath, "missing");
  }

  RestConfig rc;
  rc.contextName = contextName;
  rc.sourceFile = cf.path;
  rc.clusterName = optString(cf, ctxBody, "cluster", ctxPath + ".cluster").value_or("");
  rc.userName = optString(cf, ctxBody, "user", ctxPath + ".user").value_or("");
  rc.defaultNamespace = optString(cf, ctxBody, "namespace", ctxPath + ".namespace").value_or("");

  // Cluster.
  auto clIt = clusters.find(rc.clusterName);
  if (rc.clusterName.empty() || clIt == clusters.end()) {
    throw ConfigError(at(cf.path, keyMark(ctxBody, "cluster")), ctxPath + ".cluster",
                      rc.clusterName.empty()
                          ? "missing"
                          : "cluster '" + rc.clusterName + "' not found (available: " + joinNames(clusters) + ")");
  }
  {
    const File& f = *clIt->second.file;
    const YAML::Node body = clIt->second.node["cluster"];
    const std::string path = clIt->second.fieldPath + ".cluster";
    if (!body.IsDefined() || body.IsNull()) {
      throw ConfigError(at(f.path, clIt->second.node.Mark()), path, "missing");
    }
    auto server = optString(f, body, "server", path + ".server");
    if (!server || server->empty()) throw ConfigError(at(f.path, body.Mark()), path + ".server", "missing");
    if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0) {
      throw ConfigError(at(f.path, keyMark(body, "server")), path + ".server",
                        "must start with https:// or http:// (got '" + *server + "')");
    }
    while (server->size() > 8 && server->back() == '/') server->pop_back();
    rc.server = *server;
    if (body["proxy-url"].IsDefined() && !body["proxy-url"].IsNull()) {
      throw ConfigError(at(f.path, keyMark(body, "proxy-url")), path + ".proxy-url", "proxies are not supported");
    }
    rc.insecureSkipTlsVerify = optBool(f, body, "insecure-skip-tls-verify", path + ".insecure-skip-tls-verify");
    rc.tlsServerName = optString(f, body, "tls-server-name", path + ".tls-server-name").value_or("");
    rc.caPem = dataOrFile(f, body, "certificate-authority", path + ".", "certificate authority");
    if (rc.insecureSkipTlsVerify && !rc.caPem.empty()) {
      // kubectl refuses this combination too: it is almost always a mistake.
      throw ConfigError(at(f.path, keyMark(body, "insecure-skip-tls-verify")), path + ".insecure-skip-tls-verify",
                        "cannot be combined with a certificate authority");
    }
  }

  // User. A context without a user is valid (anonymous access).
  if (!rc.userName.empty()) {
    auto uIt = users.find(rc.userName);
    if (uIt == users.end()) {
      throw ConfigError(at(cf.path, keyMark(ctxBody, "user")), ctxPath + ".user",
                        "user '" + rc.userName + "' not found (available: " + joinNames(users) + ")");
    }
    const File& f = *uIt->second.file;
    const YAML::Node body = uIt->second.node["user"];
    const std::string path = uIt->second.fieldPath + ".user";
    if (body.IsDefined() && body.IsMap()) {
      for (const char* plugin : {"exec", "auth-provider"}) {
        if (body[plugin].IsDefined() && !body[plugin].IsNull()) {
          throw ConfigError(at(f.path, keyMark(body, plugin)), path + "." + plugin,
                            "exec credential plugins and auth providers are not supported yet; "
                            "use a client certificate or a token");
        }
      }
      if (body["username"].IsDefined() || body["password"].IsDefined()) {
        throw ConfigError(at(f.path, body.Mark()), path + ".username",
                          "basic auth is not supported (removed from kube-apiserver in 1.19)");
      }
      rc.clientCertPem = dataOrFile(f, body, "client-certificate", path + ".", "client certificate");
      rc.clientKeyPem = Secret(dataOrFile(f, body, "client-key", path + ".", "client key"));
      if (rc.clientCertPem.empty() != rc.clientKeyPem.empty()) {
        const char* missing = rc.clientCertPem.empty() ? "client-certificate" : "client-key";
        throw ConfigError(at(f.path, body.Mark()), path + "." + missing,
                          "missing: client-certificate and client-key must be given together");
      }
      // Token wins over tokenFile (clientcmd: "If both Token and TokenFile are present,
      // Token takes precedence").
      if (auto token = optString(f, body, "token", path + ".token"); token && !token->empty()) {
        rc.bearerToken = Secret(std::move(*token));
      } else {
        for (const char* key : {"tokenFile", "token-file"}) {
          if (auto tf = optString(f, body, key, path + "." + key)) {
            std::string t = trimRight(
                readFileOrThrow(resolvePath(f, *tf), at(f.path, keyMark(body, key)), path + "." + key, "token file"));
            if (t.empty()) {
              throw ConfigError(at(f.path, keyMark(body, key)), path + "." + key, "token file '" + *tf + "' is empty");
            }
            rc.bearerToken = Secret(std::move(t));
            break;
          }
        }
      }
    }
  }
  return rc;
}

RestConfig loadInCluster(const InClusterOptions& options) {
  // client-go refuses the same way: without both variables this is not a pod (or one
  // whose environment was replaced).
  for (const auto& [name, value] : {std::pair{"KUBERNETES_SERVICE_HOST", &options.serviceHost},
                                    std::pair{"KUBERNETES_SERVICE_PORT", &options.servicePort}}) {
    if (!*value || (*value)->empty())
      throw ConfigError("environment", name, "not set: --in-cluster needs the variables the kubelet gives every pod");
  }
  const std::string& host = *options.serviceHost;
  const std::string& port = *options.servicePort;
  if (host.find_first_of("/[]@ \t") != std::string::npos)
    throw ConfigError("environment", "KUBERNETES_SERVICE_HOST", "expected a host name or address, got '" + host + "'");
  bool numeric = !port.empty() && port.size() <= 5;
  for (char c : port) numeric = numeric && c >= '0' && c <= '9';
  if (!numeric || std::stoul(port) < 1 || std::stoul(port) > 65535)
    throw ConfigError("environment", "KUBERNETES_SERVICE_PORT",
                      "expected a port number from 1 to 65535, got '" + port + "'");

  const fs::path dir(options.dir);
  // What the service account volume holds. A required file missing means no token
  // was mounted (automountServiceAccountToken: false) or the wrong directory.
  auto read = [&](const char* name, bool required) -> std::string {
    const std::string path = (dir / name).string();
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      if (!required) return {};
      throw ConfigError(
          path, name,
          "missing: the pod has no service account credentials here (automountServiceAccountToken: false?)");
    }
    std::string text = readFileOrThrow(path, path, name, "service account file");
    if (required && trimRight(text).empty()) throw ConfigError(path, name, "is empty");
    return text;
  };
  RestConfig rc;
  // An IPv6 address in brackets, as net.JoinHostPort writes it.
  rc.server = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
  rc.bearerToken = Secret(trimRight(read("token", true)));
  rc.caPem = read("ca.crt", true);
  rc.defaultNamespace = trimRight(read("namespace", false));
  rc.contextName = "in-cluster";
  rc.sourceFile = dir.string();
  return rc;
}

std::string describe(const RestConfig& c) {
  std::string auth = "anonymous";
  if (!c.clientKeyPem.empty() && !c.bearerToken.empty()) {
    auth = "client certificate + bearer token";
  } else if (!c.clientKeyPem.empty()) {
    auth = "client certificate";
  } else if (!c.bearerToken.empty()) {
    auth = "bearer token";
  }
  std::string tls = c.insecureSkipTlsVerify ? "TLS verification OFF" : c.caPem.empty() ? "system CA" : "custom CA";
  std::string s = "server " + c.server + " (context '" + c.contextName + "', cluster '" + c.clusterName + "', user '" +
                  c.userName + "', auth: " + auth + ", " + tls;
  if (!c.tlsServerName.empty()) s += ", tls-server-name " + c.tlsServerName;
  if (!c.sourceFile.empty()) s += ", from " + c.sourceFile;
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const RestConfig& config) { return os << describe(config); }

}  // namespace cpscale::kube
