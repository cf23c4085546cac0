#include "sim/controlplane/pki.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>

namespace cpscale::controlplane {
namespace {
namespace fs = std::filesystem;

X509* loadCert(const fs::path& p) {
  std::string pem = readFile(p);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return c;
}

// Verifies `leaf` against `ca` for the given purpose, as a TLS peer would.
bool verifies(X509* ca, X509* leaf, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

class PkiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    paths.dir = fs::path(::testing::TempDir()) / ("pki-" + std::to_string(::getpid()));
    fs::remove_all(paths.dir);
    ensurePki(paths);
  }
  void TearDown() override { fs::remove_all(paths.dir); }
  PkiPaths paths;
};

TEST_F(PkiTest, PrivateKeysAreOwnerOnly) {
  for (const auto& key :
       {paths.caKey(), paths.servingKey(), paths.adminKey(), paths.loadKey(), paths.serviceAccountKey(),
        paths.componentKey("kube-controller-manager"), paths.componentKey("kube-scheduler")}) {
    SCOPED_TRACE(key);
    EXPECT_EQ(fs::status(key).permissions(), fs::perms::owner_read | fs::perms::owner_write);
  }
  EXPECT_EQ(fs::status(paths.dir).permissions(), fs::perms::owner_all);
}

TEST_F(PkiTest, ServingCertVerifiesForLoopbackNames) {
  X509* ca = loadCert(paths.caCert());
  X509* serving = loadCert(paths.servingCert());
  ASSERT_TRUE(ca && serving);
  EXPECT_TRUE(verifies(ca, serving, X509_PURPOSE_SSL_SERVER));
  EXPECT_FALSE(verifies(ca, serving, X509_PURPOSE_SSL_CLIENT));
  EXPECT_EQ(X509_check_host(serving, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(serving, "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(serving, "example.com", 0, 0, nullptr), 1);
  X509_free(ca);
  X509_free(serving);
}

// The client identities: the admin in system:masters, and the workloads' own, an
// ordinary client (flow control exempts system:masters) in the group the plane binds
// to cluster-admin.
TEST_F(PkiTest, ClientCertsAreTheAdminAndTheWorkloadsOwn) {
  struct Identity {
    fs::path cert;
    const char* commonName;
    const char* organization;
  };
  X509* ca = loadCert(paths.caCert());
  ASSERT_TRUE(ca);
  for (const Identity& id : {Identity{paths.adminCert(), "cpscale-admin", "system:masters"},
                             Identity{paths.loadCert(), "cpscale-load", "cpscale:load"}}) {
    SCOPED_TRACE(id.cert);
    X509* cert = loadCert(id.cert);
    ASSERT_TRUE(cert);
    EXPECT_TRUE(verifies(ca, cert, X509_PURPOSE_SSL_CLIENT));
    EXPECT_FALSE(verifies(ca, cert, X509_PURPOSE_SSL_SERVER));
    char buf[256];
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_organizationName, buf, sizeof buf);
    EXPECT_STREQ(buf, id.organization);
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
    EXPECT_STREQ(buf, id.commonName);
    X509_free(cert);
  }
  X509_free(ca);
}

TEST_F(PkiTest, ComponentCertsAreTheirUpstreamIdentityAndServeLoopback) {
  // CN system:kube-controller-manager is the user upstream's default RBAC binds the
  // controller-manager's role to; the same certificate serves its /metrics on loopback.
  X509* ca = loadCert(paths.caCert());
  ASSERT_TRUE(ca);
  for (const std::string component : kPkiComponents) {
    SCOPED_TRACE(component);
    X509* cert = loadCert(paths.componentCert(component));
    ASSERT_TRUE(cert);
    EXPECT_TRUE(verifies(ca, cert, X509_PURPOSE_SSL_CLIENT));
    EXPECT_TRUE(verifies(ca, cert, X509_PURPOSE_SSL_SERVER));
    char buf[256];
    X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof buf);
    EXPECT_EQ(std::string(buf), "system:" + component);
    EXPECT_EQ(X509_NAME_get_index_by_NID(X509_get_subject_name(cert), NID_organizationName, -1), -1)
        << "no group: never system:masters";
    EXPECT_EQ(X509_check_ip_asc(cert, "127.0.0.1", 0), 1);
    EXPECT_NE(X509_check_ip_asc(cert, "10.0.0.1", 0), 1);
    X509_free(cert);
  }
  X509_free(ca);
}

TEST_F(PkiTest, ExistingCaIsReused) {
  std::string caBefore = readFile(paths.caCert());
  fs::remove(paths.servingCert());
  ensurePki(paths);
  EXPECT_EQ(readFile(paths.caCert()), caBefore);
  X509* ca = loadCert(paths.caCert());
  X509* serving = loadCert(paths.servingCert());
  EXPECT_TRUE(verifies(ca, serving, X509_PURPOSE_SSL_SERVER));
  X509_free(ca);
  X509_free(serving);
}

}  // namespace
}  // namespace cpscale::controlplane
