// The loopback check that lets load and deletes go without --yes: every trick that
// makes a URL look local while the connection goes elsewhere must say "not loopback".
#include "sim/run/target_check.h"

#include <gtest/gtest.h>

namespace cpscale::run {
namespace {

std::vector<std::string> localhostOnly(const std::string& host) {
  if (host == "localhost") return {"127.0.0.1", "::1"};
  return {};
}

bool loopback(const std::string& url) { return isLoopbackServer(url, localhostOnly); }

TEST(TargetCheckTest, LoopbackAddressesAndLocalhostAreLoopback) {
  EXPECT_TRUE(loopback("https://127.0.0.1:6443"));
  EXPECT_TRUE(loopback("https://127.0.0.1:6443/"));
  EXPECT_TRUE(loopback("https://127.45.3.2"));
  EXPECT_TRUE(loopback("http://127.255.255.254:8080/some/prefix"));
  EXPECT_TRUE(loopback("https://[::1]:6443"));
  EXPECT_TRUE(loopback("https://[0:0:0:0:0:0:0:1]:6443"));
  EXPECT_TRUE(loopback("https://[::ffff:127.0.0.1]:6443"));
  EXPECT_TRUE(loopback("https://[::ffff:7f00:1]:6443"));
  EXPECT_TRUE(loopback("https://localhost:6443"));
  EXPECT_TRUE(loopback("HTTPS://LOCALHOST:6443"));
  EXPECT_TRUE(loopback("https://LocalHost"));
}

TEST(TargetCheckTest, NumericFormsLibcurlConnectsToLoopbackAreLoopback) {
  // libcurl (the transport) connects to 127.0.0.1 for each of these.
  EXPECT_TRUE(loopback("https://0x7f000001:6443"));
  EXPECT_TRUE(loopback("https://2130706433:6443"));
  EXPECT_TRUE(loopback("https://017700000001:6443"));
  EXPECT_TRUE(loopback("https://127.1:6443"));
}

TEST(TargetCheckTest, UserinfoNeverPasses) {
  // The host is evil.example; 127.0.0.1 is a user name.
  EXPECT_FALSE(loopback("https://127.0.0.1@evil.example:6443"));
  EXPECT_FALSE(loopback("https://localhost@evil.example"));
  EXPECT_FALSE(loopback("https://127.0.0.1:6443@evil.example"));
  EXPECT_FALSE(loopback("https://127.0.0.1;x@evil.example"));
  // Even a loopback host with userinfo: nothing legitimate writes one.
  EXPECT_FALSE(loopback("https://user:pw@127.0.0.1:6443"));
  EXPECT_FALSE(loopback("https://:@127.0.0.1:6443"));
  EXPECT_FALSE(loopback("https://evil.example\\\\@127.0.0.1"));
}

TEST(TargetCheckTest, NamesThatMerelyLookLocalAreNotLoopback) {
  EXPECT_FALSE(loopback("https://127.evil.example"));
  EXPECT_FALSE(loopback("https://127.0.0.1.evil.example:6443"));
  // Public wildcard DNS that answers 127.0.0.1 today: not trusted, never resolved.
  EXPECT_FALSE(isLoopbackServer("https://127.0.0.1.nip.io:6443",
                                [](const std::string&) { return std::vector<std::string>{"127.0.0.1"}; }));
  EXPECT_FALSE(loopback("https://localhost.evil.example"));
  EXPECT_FALSE(loopback("https://evil-localhost"));
  EXPECT_FALSE(loopback("https://localhost.localdomain"));
  // A trailing dot makes an absolute DNS name: only loopback if it resolves there.
  EXPECT_FALSE(loopback("https://localhost.:6443"));
  EXPECT_TRUE(isLoopbackServer("https://localhost.:6443", [](const std::string& h) {
    return h == "localhost." ? std::vector<std::string>{"127.0.0.1"} : std::vector<std::string>{};
  }));
  EXPECT_FALSE(loopback("https://127.0.0.1.:6443"));
}

TEST(TargetCheckTest, LocalhostMustResolveToLoopbackOnly) {
  auto resolvingTo = [](std::vector<std::string> addrs) { return [addrs](const std::string&) { return addrs; }; };
  EXPECT_TRUE(isLoopbackServer("https://localhost:6443", resolvingTo({"127.0.0.1"})));
  EXPECT_TRUE(isLoopbackServer("https://localhost:6443", resolvingTo({"::1", "127.0.1.1"})));
  EXPECT_FALSE(isLoopbackServer("https://localhost:6443", resolvingTo({"127.0.0.1", "10.0.0.5"})));
  EXPECT_FALSE(isLoopbackServer("https://localhost:6443", resolvingTo({"::ffff:10.0.0.5"})));
  EXPECT_FALSE(isLoopbackServer("https://localhost:6443", resolvingTo({})));
}

TEST(TargetCheckTest, OtherAddressesAreNotLoopback) {
  EXPECT_FALSE(loopback("https://10.0.0.1:6443"));
  EXPECT_FALSE(loopback("https://128.0.0.1:6443"));
  EXPECT_FALSE(loopback("https://0.0.0.0:6443"));
  EXPECT_FALSE(loopback("https://[::]:6443"));
  EXPECT_FALSE(loopback("https://[::2]:6443"));
  EXPECT_FALSE(loopback("https://[::ffff:10.0.0.1]:6443"));
  EXPECT_FALSE(loopback("https://[::127.0.0.1]:6443"));  // IPv4-compatible, deprecated
  EXPECT_FALSE(loopback("https://[fe80::1%25lo]:6443"));
  EXPECT_FALSE(loopback("https://kubernetes.example.com"));
}

TEST(TargetCheckTest, UnparseableOrUnusualUrlsAreNotLoopback) {
  EXPECT_FALSE(loopback(""));
  EXPECT_FALSE(loopback("127.0.0.1:6443"));  // no scheme
  EXPECT_FALSE(loopback("localhost"));
  EXPECT_FALSE(loopback("https://"));
  EXPECT_FALSE(loopback("https://127.0.0.1 evil.example"));
  EXPECT_FALSE(loopback("ftp://127.0.0.1"));
  EXPECT_FALSE(loopback("unix:///var/run/kube.sock"));
  EXPECT_FALSE(loopback("https://127.0.0.1#@evil.example"));
  EXPECT_FALSE(loopback("https://127.0.0.1?@evil.example"));
  EXPECT_FALSE(loopback("https://[::1"));
}

TEST(TargetCheckTest, TheDefaultResolverFindsLocalhostOnLoopback) {
  // /etc/hosts on any sane machine; the real getaddrinfo path.
  EXPECT_TRUE(isLoopbackServer("https://localhost:6443"));
  EXPECT_TRUE(isLoopbackServer("https://127.0.0.1:6443"));
  EXPECT_FALSE(isLoopbackServer("https://127.0.0.1@evil.example:6443"));
}

}  // namespace
}  // namespace cpscale::run
