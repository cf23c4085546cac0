#include "sim/kube/kubeconfig.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "sim/common/error.h"
#include "sim/kube/base64.h"
#include "test/support/temp_dir.h"

namespace cpscale::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr const char* kToken = "s3cr3t-t0ken-ABCDEF";
constexpr const char* kKey = "-----BEGIN PRIVATE KEY-----\nKEYBYTES-do-not-print\n-----END PRIVATE KEY-----\n";
constexpr const char* kCert = "-----BEGIN CERTIFICATE-----\nCERTBYTES\n-----END CERTIFICATE-----\n";
constexpr const char* kCa = "-----BEGIN CERTIFICATE-----\nCABYTES\n-----END CERTIFICATE-----\n";

// Runs `fn`, expects a ConfigError and returns its message.
template <typename Fn>
std::string configError(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError thrown";
  return {};
}

std::string simpleConfig(const std::string& userBody) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: c1\n"
         "  cluster:\n"
         "    server: https://10.0.0.1:6443\n"
         "    certificate-authority-data: " +
         base64Encode(kCa) +
         "\n"
         "users:\n"
         "- name: u1\n"
         "  user:\n" +
         userBody +
         "contexts:\n"
         "- name: ctx1\n"
         "  context:\n"
         "    cluster: c1\n"
         "    user: u1\n"
         "    namespace: team-a\n"
         "current-context: ctx1\n";
}

TEST(Kubeconfig, LoadsInlineCertificatesAndKey) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    client-certificate-data: " + base64Encode(kCert) +
                                                      "\n    client-key-data: " + base64Encode(kKey) + "\n"));
  RestConfig rc = loadKubeconfig({.explicitPath = path});
  EXPECT_EQ(rc.server, "https://10.0.0.1:6443");
  EXPECT_EQ(rc.caPem, kCa);
  EXPECT_EQ(rc.clientCertPem, kCert);
  EXPECT_EQ(rc.clientKeyPem.reveal(), kKey);
  EXPECT_TRUE(rc.bearerToken.empty());
  EXPECT_FALSE(rc.insecureSkipTlsVerify);
  EXPECT_EQ(rc.contextName, "ctx1");
  EXPECT_EQ(rc.clusterName, "c1");
  EXPECT_EQ(rc.userName, "u1");
  EXPECT_EQ(rc.defaultNamespace, "team-a");
  EXPECT_EQ(rc.sourceFile, path);
}

TEST(Kubeconfig, DefaultsToHomeKubeConfig) {
  TempDir dir;
  dir.write("home/.kube/config", simpleConfig(std::string("    token: ") + kToken + "\n"));
  RestConfig rc = loadKubeconfig({.homeDir = (dir.path() / "home").string()});
  EXPECT_EQ(rc.bearerToken.reveal(), kToken);
}

TEST(Kubeconfig, EmptyKubeconfigEnvFallsBackToHome) {
  TempDir dir;
  dir.write("home/.kube/config", simpleConfig(std::string("    token: ") + kToken + "\n"));
  RestConfig rc = loadKubeconfig({.kubeconfigEnv = "", .homeDir = (dir.path() / "home").string()});
  EXPECT_EQ(rc.contextName, "ctx1");
}

TEST(Kubeconfig, KubeconfigEnvMergesFirstFileWins) {
  TempDir dir;
  // a: sets current-context and defines cluster "shared" pointing at A.
  std::string a = dir.write("a.yaml",
                            "clusters:\n"
                            "- name: shared\n"
                            "  cluster: {server: 'https://a.example:6443', insecure-skip-tls-verify: true}\n"
                            "current-context: from-b\n");
  // b: redefines "shared" (ignored) and provides the user and the context.
  std::string b = dir.write("b.yaml",
                            "clusters:\n"
                            "- name: shared\n"
                            "  cluster: {server: 'https://b.example:6443'}\n"
                            "users:\n"
                            "- name: ub\n"
                            "  user: {token: tok-b}\n"
                            "contexts:\n"
                            "- name: from-b\n"
                            "  context: {cluster: shared, user: ub}\n"
                            "current-context: ignored\n");
  std::string missing = (dir.path() / "missing.yaml").string();
  RestConfig rc = loadKubeconfig({.kubeconfigEnv = a + ":" + missing + ":" + b});
  EXPECT_EQ(rc.server, "https://a.example:6443");
  EXPECT_TRUE(rc.insecureSkipTlsVerify);
  EXPECT_EQ(rc.bearerToken.reveal(), "tok-b");
  EXPECT_EQ(rc.contextName, "from-b");
  EXPECT_EQ(rc.sourceFile, b);  // the context's file

  // Reversed order: b's cluster and b's current-context ("ignored") win.
  std::string msg = configError([&] { loadKubeconfig({.kubeconfigEnv = b + ":" + a}); });
  EXPECT_THAT(msg, HasSubstr("'ignored' not found"));
}

TEST(Kubeconfig, ExplicitPathIsNotMergedWithKubeconfigEnv) {
  TempDir dir;
  std::string a = dir.write("a.yaml", simpleConfig("    token: t\n"));
  std::string b = dir.write("b.yaml", "current-context: other\n");
  RestConfig rc = loadKubeconfig({.explicitPath = a, .kubeconfigEnv = b});
  EXPECT_EQ(rc.contextName, "ctx1");
}

TEST(Kubeconfig, ContextOverrideBeatsCurrentContext) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- {name: c1, cluster: {server: 'https://one:6443'}}\n"
                               "- {name: c2, cluster: {server: 'https://two:6443/'}}\n"
                               "contexts:\n"
                               "- {name: first, context: {cluster: c1}}\n"
                               "- {name: second, context: {cluster: c2}}\n"
                               "current-context: first\n");
  EXPECT_EQ(loadKubeconfig({.explicitPath = path}).server, "https://one:6443");
  RestConfig rc = loadKubeconfig({.explicitPath = path, .context = "second"});
  EXPECT_EQ(rc.server, "https://two:6443");  // trailing slash dropped
  EXPECT_TRUE(rc.userName.empty());          // anonymous
}

TEST(Kubeconfig, RelativePathsResolveAgainstTheNamingFile) {
  TempDir dir;
  dir.write("pki/ca.crt", kCa);
  dir.write("pki/client.crt", kCert);
  dir.write("pki/client.key", kKey);
  dir.write("pki/token", std::string(kToken) + "\n");
  std::string path = dir.write("sub/config",
                               "clusters:\n"
                               "- name: c\n"
                               "  cluster: {server: 'https://h:1', certificate-authority: ../pki/ca.crt}\n"
                               "users:\n"
                               "- name: u\n"
                               "  user:\n"
                               "    client-certificate: ../pki/client.crt\n"
                               "    client-key: ../pki/client.key\n"
                               "    tokenFile: ../pki/token\n"
                               "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                               "current-context: x\n");
  RestConfig rc = loadKubeconfig({.explicitPath = path});
  EXPECT_EQ(rc.caPem, kCa);
  EXPECT_EQ(rc.clientCertPem, kCert);
  EXPECT_EQ(rc.clientKeyPem.reveal(), kKey);
  EXPECT_EQ(rc.bearerToken.reveal(), kToken);  // trailing newline trimmed
}

TEST(Kubeconfig, DataFieldWinsOverFileAndTokenWinsOverTokenFile) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- name: c\n"
                               "  cluster:\n"
                               "    server: https://h:1\n"
                               "    certificate-authority: /nonexistent/ca.crt\n"
                               "    certificate-authority-data: " +
                                   base64Encode(kCa) +
                                   "\n"
                                   "users:\n"
                                   "- name: u\n"
                                   "  user: {token: inline, tokenFile: /nonexistent/token}\n"
                                   "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                   "current-context: x\n");
  RestConfig rc = loadKubeconfig({.explicitPath = path});
  EXPECT_EQ(rc.caPem, kCa);
  EXPECT_EQ(rc.bearerToken.reveal(), "inline");
}

TEST(Kubeconfig, InsecureFlagAndTlsServerName) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- {name: c, cluster: {server: 'https://1.2.3.4:6443', insecure-skip-tls-verify: true,"
                               " tls-server-name: kubernetes.default}}\n"
                               "contexts: [{name: x, context: {cluster: c}}]\n"
                               "current-context: x\n");
  RestConfig rc = loadKubeconfig({.explicitPath = path});
  EXPECT_TRUE(rc.insecureSkipTlsVerify);
  EXPECT_EQ(rc.tlsServerName, "kubernetes.default");
  EXPECT_THAT(describe(rc), HasSubstr("TLS verification OFF"));
}

TEST(Kubeconfig, InsecureWithCertificateAuthorityIsRejected) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- name: c\n"
                               "  cluster:\n"
                               "    server: https://h:1\n"
                               "    insecure-skip-tls-verify: true\n"
                               "    certificate-authority-data: " +
                                   base64Encode(kCa) +
                                   "\n"
                                   "contexts: [{name: x, context: {cluster: c}}]\n"
                                   "current-context: x\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr(path + ":5"));
  EXPECT_THAT(msg, HasSubstr("clusters[0].cluster.insecure-skip-tls-verify"));
}

TEST(Kubeconfig, MissingExplicitFileNamesTheFile) {
  std::string msg = configError([] { loadKubeconfig({.explicitPath = "/nonexistent/kubeconfig"}); });
  EXPECT_THAT(msg, HasSubstr("/nonexistent/kubeconfig"));
  EXPECT_THAT(msg, HasSubstr("No such file"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);  // one line
}

TEST(Kubeconfig, MissingDefaultFileNamesThePath) {
  TempDir dir;
  std::string msg = configError([&] { loadKubeconfig({.homeDir = dir.path().string()}); });
  EXPECT_THAT(msg, HasSubstr(".kube/config"));
}

TEST(Kubeconfig, KubeconfigEnvWithNoExistingFile) {
  std::string msg = configError([] { loadKubeconfig({.kubeconfigEnv = "/nope/a:/nope/b"}); });
  EXPECT_THAT(msg, HasSubstr("KUBECONFIG"));
  EXPECT_THAT(msg, HasSubstr("/nope/a:/nope/b"));
}

TEST(Kubeconfig, MalformedYamlGivesFileAndLine) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- name: c\n"
                               "  cluster: {server: 'https://h:1'\n"  // unclosed flow map
                               "contexts: []\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr(path + ":"));
  EXPECT_THAT(msg, HasSubstr("malformed YAML"));
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(Kubeconfig, WrongFieldTypeNamesFieldPathAndLine) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters:\n"
                               "- name: c\n"
                               "  cluster: {server: 'https://h:1'}\n"
                               "users:\n"
                               "- name: u\n"
                               "  user:\n"
                               "    client-certificate-data: " +
                                   base64Encode(kCert) +
                                   "\n"
                                   "    client-key: [not, a, path]\n"
                                   "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                   "current-context: x\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr(path + ":8"));
  EXPECT_THAT(msg, HasSubstr("users[0].user.client-key"));
}

TEST(Kubeconfig, ClustersNotAListIsRejected) {
  TempDir dir;
  std::string path = dir.write("config", "clusters: {a: b}\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr("'clusters'"));
  EXPECT_THAT(msg, HasSubstr("expected a list"));
}

TEST(Kubeconfig, BadBase64NamesFieldWithoutEchoingIt) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    client-certificate-data: " + base64Encode(kCert) +
                                                      "\n    client-key-data: NOT*BASE64*SECRETVALUE\n"));
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr("users[0].user.client-key-data"));
  EXPECT_THAT(msg, HasSubstr(path + ":12"));
  EXPECT_THAT(msg, Not(HasSubstr("SECRETVALUE")));
}

TEST(Kubeconfig, UnknownContextListsAvailableOnes) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    token: t\n"));
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path, .context = "prod"}); });
  EXPECT_THAT(msg, HasSubstr("--context"));
  EXPECT_THAT(msg, HasSubstr("'prod' not found"));
  EXPECT_THAT(msg, HasSubstr("ctx1"));
}

TEST(Kubeconfig, UnknownCurrentContextPointsAtItsLine) {
  TempDir dir;
  std::string path = dir.write("config", "clusters: []\ncontexts: []\ncurrent-context: gone\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr(path + ":3"));
  EXPECT_THAT(msg, HasSubstr("'gone' not found"));
}

TEST(Kubeconfig, NoCurrentContext) {
  TempDir dir;
  std::string path = dir.write("config", "clusters: []\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr("current-context"));
  EXPECT_THAT(msg, HasSubstr("--context"));
}

TEST(Kubeconfig, ContextWithMissingClusterOrUser) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters: [{name: c, cluster: {server: 'https://h:1'}}]\n"
                               "contexts:\n"
                               "- {name: nocluster, context: {cluster: nope}}\n"
                               "- {name: nouser, context: {cluster: c, user: ghost}}\n");
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path, .context = "nocluster"}); });
  EXPECT_THAT(msg, HasSubstr("contexts[0].context.cluster"));
  EXPECT_THAT(msg, HasSubstr("cluster 'nope' not found"));
  msg = configError([&] { loadKubeconfig({.explicitPath = path, .context = "nouser"}); });
  EXPECT_THAT(msg, HasSubstr("contexts[1].context.user"));
  EXPECT_THAT(msg, HasSubstr("user 'ghost' not found"));
}

TEST(Kubeconfig, ServerMustBeAnHttpUrl) {
  TempDir dir;
  std::string path = dir.write("config",
                               "clusters: [{name: c, cluster: {server: 'h:6443'}}]\n"
                               "contexts: [{name: x, context: {cluster: c}}]\n"
                               "current-context: x\n");
  EXPECT_THAT(configError([&] { loadKubeconfig({.explicitPath = path}); }), HasSubstr("clusters[0].cluster.server"));
}

TEST(Kubeconfig, ExecPluginIsAClearNotSupportedError) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    exec:\n"
                                                      "      apiVersion: client.authentication.k8s.io/v1\n"
                                                      "      command: aws\n"));
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr("users[0].user.exec"));
  EXPECT_THAT(msg, HasSubstr("exec credential plugins"));
  EXPECT_THAT(msg, HasSubstr("not supported yet"));
  EXPECT_THAT(msg, HasSubstr(path + ":11"));
}

TEST(Kubeconfig, CertificateWithoutKeyIsRejected) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    client-certificate-data: " + base64Encode(kCert) + "\n"));
  EXPECT_THAT(configError([&] { loadKubeconfig({.explicitPath = path}); }), HasSubstr("users[0].user.client-key"));
}

TEST(Kubeconfig, MissingTokenFileNamesFieldNotContent) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig("    tokenFile: missing-token\n"));
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = path}); });
  EXPECT_THAT(msg, HasSubstr("users[0].user.tokenFile"));
  EXPECT_THAT(msg, HasSubstr((dir.path() / "missing-token").string()));
}

TEST(Kubeconfig, CredentialsNeverPrinted) {
  TempDir dir;
  std::string path = dir.write("config", simpleConfig(std::string("    token: ") + kToken +
                                                      "\n    client-certificate-data: " + base64Encode(kCert) +
                                                      "\n    client-key-data: " + base64Encode(kKey) + "\n"));
  RestConfig rc = loadKubeconfig({.explicitPath = path});
  ASSERT_EQ(rc.bearerToken.reveal(), kToken);
  std::ostringstream os;
  os << rc << " " << rc.bearerToken << " " << rc.clientKeyPem;
  EXPECT_THAT(os.str(), Not(HasSubstr(kToken)));
  EXPECT_THAT(os.str(), Not(HasSubstr("KEYBYTES")));
  EXPECT_THAT(os.str(), HasSubstr("<redacted>"));
  EXPECT_THAT(os.str(), HasSubstr("client certificate + bearer token"));
  EXPECT_THAT(os.str(), HasSubstr("https://10.0.0.1:6443"));

  // An error about the user's entry must not leak the token that sits next to it.
  std::string bad = dir.write(
      "bad", simpleConfig(std::string("    token: ") + kToken + "\n    client-key-data: " + base64Encode(kKey) + "\n"));
  std::string msg = configError([&] { loadKubeconfig({.explicitPath = bad}); });
  EXPECT_THAT(msg, Not(HasSubstr(kToken)));
  EXPECT_THAT(msg, Not(HasSubstr("KEYBYTES")));
}

// A pod's service account volume, as the kubelet mounts it.
InClusterOptions inCluster(const TempDir& dir, std::string host = "10.96.0.1", std::string port = "443") {
  dir.write("sa/token", std::string(kToken) + "\n");
  dir.write("sa/ca.crt", kCa);
  dir.write("sa/namespace", "load-test");
  return {.serviceHost = std::move(host), .servicePort = std::move(port), .dir = (dir.path() / "sa").string()};
}

TEST(InCluster, ReadsTheServiceEnvironmentAndTheServiceAccountVolume) {
  TempDir dir;
  RestConfig rc = loadInCluster(inCluster(dir));
  EXPECT_EQ(rc.server, "https://10.96.0.1:443");
  EXPECT_EQ(rc.bearerToken.reveal(), kToken);  // the file's trailing newline is not part of it
  EXPECT_EQ(rc.caPem, kCa);
  EXPECT_EQ(rc.defaultNamespace, "load-test");
  EXPECT_EQ(rc.contextName, "in-cluster");
  EXPECT_EQ(rc.sourceFile, (dir.path() / "sa").string());
  EXPECT_FALSE(rc.insecureSkipTlsVerify);
  std::ostringstream os;
  os << rc << " " << rc.bearerToken;
  EXPECT_THAT(os.str(), Not(HasSubstr(kToken)));
  EXPECT_THAT(os.str(), HasSubstr("bearer token, custom CA"));

  // An IPv6 service address goes in brackets; the namespace file is optional.
  InClusterOptions v6 = inCluster(dir, "fd00:10:96::1", "6443");
  std::filesystem::remove(dir.path() / "sa/namespace");
  rc = loadInCluster(v6);
  EXPECT_EQ(rc.server, "https://[fd00:10:96::1]:6443");
  EXPECT_EQ(rc.defaultNamespace, "");
  EXPECT_EQ(loadInCluster(inCluster(dir, "kubernetes.default.svc")).server, "https://kubernetes.default.svc:443");
}

TEST(InCluster, NamesTheVariableOrFileThatIsMissingOrMalformed) {
  TempDir dir;
  InClusterOptions o = inCluster(dir);
  auto fails = [&](InClusterOptions opt, const std::string& where, const std::string& field) {
    try {
      loadInCluster(opt);
      ADD_FAILURE() << "accepted; expected an error at " << where << " field " << field;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
      EXPECT_EQ(e.field(), field) << e.what();
      EXPECT_THAT(e.what(), Not(HasSubstr(kToken)));
    }
  };
  InClusterOptions noHost = o;
  noHost.serviceHost.reset();
  fails(noHost, "environment", "KUBERNETES_SERVICE_HOST");
  InClusterOptions noPort = o;
  noPort.servicePort = "";
  fails(noPort, "environment", "KUBERNETES_SERVICE_PORT");
  for (const char* port : {"0", "65536", "https", "44 3", "-1", "123456"}) {
    InClusterOptions bad = o;
    bad.servicePort = port;
    fails(bad, "environment", "KUBERNETES_SERVICE_PORT");
  }
  for (const char* host : {"[::1]", "a/b", "user@host", "a b"}) {
    InClusterOptions bad = o;
    bad.serviceHost = host;
    fails(bad, "environment", "KUBERNETES_SERVICE_HOST");
  }
  const std::string sa = (dir.path() / "sa").string();
  dir.write("sa/token", "\n");
  fails(o, sa + "/token", "token");
  std::filesystem::remove(dir.path() / "sa/token");
  fails(o, sa + "/token", "token");
  o = inCluster(dir);
  std::filesystem::remove(dir.path() / "sa/ca.crt");
  fails(o, sa + "/ca.crt", "ca.crt");
  o.dir = (dir.path() / "nowhere").string();
  fails(o, o.dir + "/token", "token");
}

TEST(Base64, RoundTripsAndRejectsGarbage) {
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\x01\xff\x80 binary"}) {
    auto d = base64Decode(base64Encode(s));
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, s);
  }
  EXPECT_EQ(base64Decode("aGVs\nbG8=\n").value_or(""), "hello");  // wrapped lines
  EXPECT_FALSE(base64Decode("aGVsbG8=x").has_value());
  EXPECT_FALSE(base64Decode("a").has_value());
  EXPECT_FALSE(base64Decode("aGV*").has_value());
}

}  // namespace
}  // namespace cpscale::kube
