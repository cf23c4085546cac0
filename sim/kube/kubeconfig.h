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

}  // namespace cpscale::kube
