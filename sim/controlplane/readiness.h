// Readiness of one member of the local plane: etcd's /health over plain HTTP, or
// kube-apiserver's /readyz over TLS with the admin client certificate.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "sim/controlplane/pki.h"

namespace cpscale::kube {
class Transport;
}

namespace cpscale::controlplane {

struct ProbeResult {
  bool ready = false;
  std::string detail;  // why not ready: "connection refused", "HTTP 500: ..."
};

class ReadinessProbe {
 public:
  // `url` is the full endpoint (https://127.0.0.1:P/readyz). With `tls`, the server is
  // verified against the plane's CA and the admin client certificate is presented.
  ReadinessProbe(std::string url, std::optional<PkiPaths> tls);
  ~ReadinessProbe();
  ProbeResult check();

 private:
  std::string path_;
  std::unique_ptr<kube::Transport> transport_;
};

}  // namespace cpscale::controlplane
