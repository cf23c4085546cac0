// The local plane's certificates and keys: a CA, the kube-apiserver serving
// certificate (loopback SANs), a service-account signing key pair, an admin client
// certificate in system:masters, and one certificate per controller component
// (kube-controller-manager, kube-scheduler) that is both its client identity
// (CN system:<component>, the user upstream's default RBAC grants its permissions) and
// its loopback serving certificate. Written as PEM files; private keys are mode 0600.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace cpscale::controlplane {

struct PkiPaths {
  std::filesystem::path dir;
  std::filesystem::path caCert() const { return dir / "ca.crt"; }
  std::filesystem::path caKey() const { return dir / "ca.key"; }
  std::filesystem::path servingCert() const { return dir / "apiserver.crt"; }
  std::filesystem::path servingKey() const { return dir / "apiserver.key"; }
  std::filesystem::path adminCert() const { return dir / "admin.crt"; }
  std::filesystem::path adminKey() const { return dir / "admin.key"; }
  // The workloads' own identity (user cpscale-load, group cpscale:load), used when the
  // profile says loadIdentity: user.
  std::filesystem::path loadCert() const { return dir / "load.crt"; }
  std::filesystem::path loadKey() const { return dir / "load.key"; }
  std::filesystem::path serviceAccountKey() const { return dir / "sa.key"; }
  std::filesystem::path serviceAccountPub() const { return dir / "sa.pub"; }
  // component: "kube-controller-manager" or "kube-scheduler".
  std::filesystem::path componentCert(const std::string& component) const { return dir / (component + ".crt"); }
  std::filesystem::path componentKey(const std::string& component) const { return dir / (component + ".key"); }
};

// The components ensurePki issues certificates for.
inline constexpr const char* kPkiComponents[] = {"kube-controller-manager", "kube-scheduler"};

struct PkiOptions {
  // Subject alternative names of the serving certificate besides the loopback ones.
  std::vector<std::string> extraDnsNames;
  std::vector<std::string> extraIps;
  int validityDays = 365;
};

// Creates every file of `paths` that is missing (an existing CA is reused, so certs
// signed earlier stay valid). Throws std::runtime_error on OpenSSL failures.
void ensurePki(const PkiPaths& paths, const PkiOptions& options = {});

// Reads a whole file; throws std::runtime_error naming the path if it cannot.
std::string readFile(const std::filesystem::path& path);
// Writes `content` atomically with the given permission bits (0600 for secrets).
void writeFile(const std::filesystem::path& path, const std::string& content, std::filesystem::perms perms);

}  // namespace cpscale::controlplane
