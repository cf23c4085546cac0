// Loads a kubeconfig the way kubectl does and resolves it to the one thing a
// Transport needs: where the API server is and how to authenticate to it.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/kube/secret.h"

namespace cpscale::kube {

// The resolved connection settings of one kubeconfig context. File references are
// already read: everything is held in memory, so a Transport never touches the disk.
struct RestConfig {
  std::string server;  // scheme://host[:port][/prefix], no trailing slash
  std::string caPem;   // empty: the system trust store
  std::string clientCertPem;
  Secret clientKeyPem;
  Secret bearerToken;
  bool insecureSkipTlsVerify = false;
  // Name to verify the server certificate against instead of the URL's host.
  std::string tlsServerName;

  std::string contextName;
  std::string clusterName;
  std::string userName;
  std::string defaultNamespace;  // the context's namespace, empty if unset
  // The file that defined the context, for messages.
  std::string sourceFile;
};

// One line describing the config without any credential: server, context, auth kind.
std::string describe(const RestConfig& config);
std::ostream& operator<<(std::ostream& os, const RestConfig& config);

// Where to look, mirroring kubectl's precedence. The environment is passed in (not
// read with getenv here) so loading is a pure function of its inputs and testable.
struct LoadOptions {
  // --kubeconfig: exactly this file, no merging.
  std::string explicitPath{};
  // --context: overrides current-context.
  std::string context{};
  // The value of $KUBECONFIG: ':'-separated files, merged; the first file to set a
  // key wins. Unset or empty: $HOME/.kube/config.
  std::optional<std::string> kubeconfigEnv{};
  std::string homeDir{};
};

// Throws ConfigError naming the file, the line and the field path (for example
// "users[0].user.client-key") for a missing or malformed file, an unknown context, a
// context whose cluster or user is missing, or an unsupported auth method (exec
// credential plugins, auth providers, basic auth). Messages never contain credentials.
RestConfig loadKubeconfig(const LoadOptions& options);

// The files loadKubeconfig would read, in precedence order (for messages and tests).
std::vector<std::string> kubeconfigFiles(const LoadOptions& options);

// Inside a pod: the API server the kubelet names in the environment and the pod's
// service account credentials, as client-go's rest.InClusterConfig finds them. The
// environment is passed in, as for loadKubeconfig.
inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
struct InClusterOptions {
  // The values of $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT.
  std::optional<std::string> serviceHost{};
  std::optional<std::string> servicePort{};
  // Holds `token`, `ca.crt` and `namespace` (the service account volume).
  std::string dir = kServiceAccountDir;
};

// https://host:port (an IPv6 host in brackets) with the token as bearer token, the
// directory's ca.crt as the only trusted CA and its namespace as the default
// namespace; contextName "in-cluster", sourceFile the directory. Throws ConfigError
// naming the variable or file for an unset or malformed variable, or a missing or empty
// token or CA (automountServiceAccountToken: false leaves them out). The token is read
// once: a run outlasting a bound token's lifetime relies on the server's extended
// expiry (the default for pod tokens). Messages never contain the token.
RestConfig loadInCluster(const InClusterOptions& options);

}  // namespace cpscale::kube
