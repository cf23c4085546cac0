#include "sim/controlplane/pki.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace cpscale::controlplane {
namespace fs = std::filesystem;

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PKeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

[[noreturn]] void fail(const std::string& what) {
  char buf[256];
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  throw std::runtime_error("pki: " + what + ": " + buf);
}

void check(int ok, const char* what) {
  if (ok != 1) fail(what);
}

// ECDSA P-256 for TLS (fast handshakes); RSA for the service-account key, which
// kube-apiserver's token signer expects to be RSA or ECDSA; RSA is the common choice.
PKeyPtr newEcKey() {
  PKeyPtr key(EVP_EC_gen("P-256"));
  if (!key) fail("generate EC key");
  return key;
}

PKeyPtr newRsaKey(unsigned bits) {
  PKeyPtr key(EVP_RSA_gen(bits));
  if (!key) fail("generate RSA key");
  return key;
}

std::string pemOfKey(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), "write private key");
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio.get(), &mem);
  return std::string(mem->data, mem->length);
}

std::string pemOfPublicKey(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PUBKEY(bio.get(), key), "write public key");
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio.get(), &mem);
  return std::string(mem->data, mem->length);
}

std::string pemOfCert(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(bio.get(), cert), "write certificate");
  BUF_MEM* mem = nullptr;
  BIO_get_mem_ptr(bio.get(), &mem);
  return std::string(mem->data, mem->length);
}

PKeyPtr loadKey(const fs::path& path) {
  std::string pem = readFile(path);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  PKeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) fail("read private key " + path.string());
  return key;
}

X509Ptr loadCert(const fs::path& path) {
  std::string pem = readFile(path);
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) fail("read certificate " + path.string());
  return cert;
}

void addExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) fail("build extension " + value);
  check(X509_add_ext(cert, ext, -1), "add extension");
  X509_EXTENSION_free(ext);
}

struct Subject {
  std::string commonName;
  std::vector<std::string> organizations;
};

// Issues a certificate for `key`. With `issuer == nullptr` it is self-signed (the CA).
X509Ptr issue(EVP_PKEY* key, const Subject& subject, X509* issuerCert, EVP_PKEY* issuerKey, int days, bool isCa,
              const std::string& extKeyUsage, const std::string& san) {
  X509Ptr cert(X509_new());
  check(X509_set_version(cert.get(), 2), "set version");
  // Random 127-bit serial, as RFC 5280 recommends (positive, unpredictable).
  unsigned char serial[16];
  check(RAND_bytes(serial, sizeof serial), "random serial");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60 * 60);  // tolerate clock skew
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days) * 24 * 60 * 60);
  check(X509_set_pubkey(cert.get(), key), "set public key");

  X509_NAME* name = X509_get_subject_name(cert.get());
  for (const auto& o : subject.organizations) {
    check(X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(o.c_str()), -1,
                                     -1, 0),
          "set O");
  }
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                   reinterpret_cast<const unsigned char*>(subject.commonName.c_str()), -1, -1, 0),
        "set CN");
  X509* issuerForExt = issuerCert ? issuerCert : cert.get();
  check(X509_set_issuer_name(cert.get(), X509_get_subject_name(issuerForExt)), "set issuer");

  if (isCa) {
    addExtension(cert.get(), issuerForExt, NID_basic_constraints, "critical,CA:TRUE");
    addExtension(cert.get(), issuerForExt, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  } else {
    addExtension(cert.get(), issuerForExt, NID_basic_constraints, "critical,CA:FALSE");
    addExtension(cert.get(), issuerForExt, NID_key_usage, "critical,digitalSignature,keyEncipherment");
    addExtension(cert.get(), issuerForExt, NID_ext_key_usage, extKeyUsage);
  }
  addExtension(cert.get(), issuerForExt, NID_subject_key_identifier, "hash");
  if (issuerCert) addExtension(cert.get(), issuerForExt, NID_authority_key_identifier, "keyid:always");
  if (!san.empty()) addExtension(cert.get(), issuerForExt, NID_subject_alt_name, san);

  check(X509_sign(cert.get(), issuerKey ? issuerKey : key, EVP_sha256()) > 0 ? 1 : 0, "sign");
  return cert;
}

bool allExist(std::initializer_list<fs::path> paths) {
  for (const auto& p : paths)
    if (!fs::exists(p)) return false;
  return true;
}

}  // namespace

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const fs::path& path, const std::string& content, fs::perms perms) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    // Create with restrictive permissions first, so a secret is never readable by
    // others even for the instant before the chmod.
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
    fs::permissions(tmp, perms, fs::perm_options::replace);
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

void ensurePki(const PkiPaths& p, const PkiOptions& options) {
  fs::create_directories(p.dir);
  fs::permissions(p.dir, fs::perms::owner_all, fs::perm_options::replace);
  constexpr auto kSecret = fs::perms::owner_read | fs::perms::owner_write;
  constexpr auto kPublic = kSecret | fs::perms::group_read | fs::perms::others_read;

  PKeyPtr caKey;
  X509Ptr caCert;
  if (allExist({p.caCert(), p.caKey()})) {
    caKey = loadKey(p.caKey());
    caCert = loadCert(p.caCert());
  } else {
    caKey = newEcKey();
    caCert = issue(caKey.get(), {"cpscale-local-ca", {}}, nullptr, nullptr, options.validityDays * 10, true, "", "");
    writeFile(p.caKey(), pemOfKey(caKey.get()), kSecret);
    writeFile(p.caCert(), pemOfCert(caCert.get()), kPublic);
  }

  if (!allExist({p.servingCert(), p.servingKey()})) {
    std::string san =
        "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        "DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,"
        "IP:127.0.0.1,IP:10.0.0.1";
    for (const auto& d : options.extraDnsNames) san += ",DNS:" + d;
    for (const auto& ip : options.extraIps) san += ",IP:" + ip;
    PKeyPtr key = newEcKey();
    X509Ptr cert = issue(key.get(), {"kube-apiserver", {}}, caCert.get(), caKey.get(), options.validityDays, false,
                         "serverAuth", san);
    writeFile(p.servingKey(), pemOfKey(key.get()), kSecret);
    writeFile(p.servingCert(), pemOfCert(cert.get()), kPublic);
  }

  if (!allExist({p.adminCert(), p.adminKey()})) {
    PKeyPtr key = newEcKey();
    X509Ptr cert = issue(key.get(), {"cpscale-admin", {"system:masters"}}, caCert.get(), caKey.get(),
                         options.validityDays, false, "clientAuth", "");
    writeFile(p.adminKey(), pemOfKey(key.get()), kSecret);
    writeFile(p.adminCert(), pemOfCert(cert.get()), kPublic);
  }

  if (!allExist({p.loadCert(), p.loadKey()})) {
    PKeyPtr key = newEcKey();
    X509Ptr cert = issue(key.get(), {"cpscale-load", {"cpscale:load"}}, caCert.get(), caKey.get(), options.validityDays,
                         false, "clientAuth", "");
    writeFile(p.loadKey(), pemOfKey(key.get()), kSecret);
    writeFile(p.loadCert(), pemOfCert(cert.get()), kPublic);
  }

  for (const std::string component : kPkiComponents) {
    if (allExist({p.componentCert(component), p.componentKey(component)})) continue;
    PKeyPtr key = newEcKey();
    X509Ptr cert = issue(key.get(), {"system:" + component, {}}, caCert.get(), caKey.get(), options.validityDays, false,
                         "serverAuth,clientAuth", "DNS:localhost,IP:127.0.0.1");
    writeFile(p.componentKey(component), pemOfKey(key.get()), kSecret);
    writeFile(p.componentCert(component), pemOfCert(cert.get()), kPublic);
  }

  if (!allExist({p.serviceAccountKey(), p.serviceAccountPub()})) {
    PKeyPtr key = newRsaKey(2048);
    writeFile(p.serviceAccountKey(), pemOfKey(key.get()), kSecret);
    writeFile(p.serviceAccountPub(), pemOfPublicKey(key.get()), kPublic);
  }
}

}  // namespace cpscale::controlplane
