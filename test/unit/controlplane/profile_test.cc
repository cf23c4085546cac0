#include "sim/controlplane/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/common/error.h"

namespace cpscale::controlplane {
namespace {
namespace fs = std::filesystem;

class ProfileTest : public ::testing::Test {
 protected:
  fs::path write(const std::string& text) {
    fs::path p = fs::path(::testing::TempDir()) /
                 (std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".yaml");
    std::ofstream(p) << text;
    return p;
  }
  // The ConfigError message for `text`, or "" if it loaded.
  std::string errorOf(const std::string& text) {
    try {
      loadProfile(write(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(ProfileTest, ShippedProfilesLoad) {
  int loaded = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(CPSCALE_SOURCE_DIR) / "profiles")) {
    // profiles/calibration/ holds the model's calibrations, not profiles.
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path());
    ++loaded;
    Profile p = loadProfile(entry.path());
    EXPECT_EQ(p.name + ".yaml", entry.path().filename().string());
    EXPECT_GE(p.apiservers, 1);
    EXPECT_FALSE(p.etcds.empty());
  }
  EXPECT_GE(loaded, 3);
}

TEST_F(ProfileTest, PartitionedStorageRoutesLeasesAndEvents) {
  Profile p = loadProfile(fs::path(CPSCALE_SOURCE_DIR) / "profiles/partitioned-storage.yaml");
  ASSERT_EQ(p.etcds.size(), 2u);
  EXPECT_EQ(p.etcdServersOverrides({"http://a:1", "http://b:2"}),
            "coordination.k8s.io/leases#http://b:2,/events#http://b:2");
}

TEST_F(ProfileTest, SingleEtcdHasNoOverrides) {
  Profile p;
  EXPECT_EQ(p.etcdServersOverrides({"http://a:1"}), "");
}

TEST_F(ProfileTest, CoreResourcesWithoutGroupGetLeadingSlash) {
  Profile p = loadProfile(write("name: x\netcds:\n  - name: main\n  - name: ev\n    resources: [events]\n"));
  EXPECT_EQ(p.etcds[1].resources, std::vector<std::string>{"/events"});
}

TEST_F(ProfileTest, UnknownFieldNamesFileLineAndField) {
  std::string e = errorOf("name: x\napiservers: 2\nwatchcache: false\n");
  EXPECT_NE(e.find("UnknownFieldNamesFileLineAndField.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("'watchcache'"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown field"), std::string::npos) << e;
}

TEST_F(ProfileTest, BadValuesNameTheField) {
  EXPECT_NE(errorOf("name: x\napiservers: 0\n").find("field 'apiservers': must be between 1 and 16"),
            std::string::npos);
  EXPECT_NE(errorOf("name: x\napiservers: many\n").find("field 'apiservers': expected an integer"), std::string::npos);
  EXPECT_NE(errorOf("name: x\nwatchCache: maybe\n").find("field 'watchCache'"), std::string::npos);
  EXPECT_NE(errorOf("apiservers: 1\n").find("field 'name': is required"), std::string::npos);
  std::string e = errorOf("name: x\netcds:\n  - name: main\n  - name: b\n    resources: [a/b/c]\n");
  EXPECT_NE(e.find(":5: field 'etcds[1].resources[0]'"), std::string::npos) << e;
  EXPECT_NE(errorOf("name: x\napiserverArgs: [\"no-dashes\"]\n").find("field 'apiserverArgs[0]'"), std::string::npos);
  EXPECT_NE(errorOf("name: x\netcds:\n  - name: a\n  - name: a\n    resources: [x/y]\n").find("duplicate etcd name"),
            std::string::npos);
  EXPECT_NE(errorOf("name: x\netcds:\n  - name: a\n  - name: b\n").find("needs 'resources'"), std::string::npos);
  EXPECT_NE(
      errorOf("name: x\netcds:\n  - name: a\n  - name: b\n    resources: [x/y]\n  - name: c\n    resources: [x/y]\n")
          .find("routed to two etcds"),
      std::string::npos);
}

// A lease tier in front of the plane: off unless the profile says so; its period must
// stay below the node monitor grace period (50 s, or the controller-manager's own
// --node-monitor-grace-period), where the controller would mark live nodes Unknown.
TEST_F(ProfileTest, ALeaseTierWritesThroughBelowTheGracePeriod) {
  EXPECT_FALSE(loadProfile(write("name: x\n")).leaseTier);
  Profile p = loadProfile(write("name: x\nleaseTier: {propagateEvery: 30s}\n"));
  ASSERT_TRUE(p.leaseTier);
  EXPECT_EQ(p.leaseTier->propagateEvery, std::chrono::seconds(30));
  EXPECT_EQ(loadProfile(write("name: x\nleaseTier: {}\n")).leaseTier->propagateEvery, std::chrono::seconds(30));
  std::string e = errorOf("name: x\nleaseTier:\n  propagateEvery: 50s\n");
  EXPECT_NE(e.find(":3: field 'leaseTier.propagateEvery'"), std::string::npos) << e;
  EXPECT_NE(e.find("not below the node monitor grace period (50s)"), std::string::npos) << e;
  EXPECT_NE(errorOf("name: x\nleaseTier: {propagateEvery: 500ms}\n").find("at least 1s"), std::string::npos);
  EXPECT_NE(errorOf("name: x\nleaseTier: {every: 5s}\n").find("unknown field"), std::string::npos);
  // A longer grace period allows a longer period; no controller-manager, no bound.
  EXPECT_TRUE(loadProfile(write("name: x\ncontrollerManager:\n  args: [--node-monitor-grace-period=2m]\n"
                                "leaseTier: {propagateEvery: 90s}\n"))
                  .leaseTier);
  EXPECT_TRUE(
      loadProfile(write("name: x\ncontrollerManager: {enabled: false}\nleaseTier: {propagateEvery: 5m}\n")).leaseTier);
}

TEST_F(ProfileTest, LoadIdentityIsAdminUnlessTheProfileSaysUser) {
  EXPECT_EQ(loadProfile(write("name: x\n")).loadIdentity, LoadIdentity::kAdmin);
  EXPECT_EQ(loadProfile(write("name: x\nloadIdentity: user\n")).loadIdentity, LoadIdentity::kUser);
  EXPECT_EQ(loadProfile(write("name: x\nloadIdentity: admin\n")).loadIdentity, LoadIdentity::kAdmin);
  std::string e = errorOf("name: x\nloadIdentity: root\n");
  EXPECT_NE(e.find(":2: field 'loadIdentity': is 'root' (one of admin, user)"), std::string::npos) << e;
  Profile overload = loadProfile(fs::path(CPSCALE_SOURCE_DIR) / "profiles/overload.yaml");
  EXPECT_EQ(overload.loadIdentity, LoadIdentity::kUser);
  EXPECT_FALSE(overload.priorityAndFairness);
  EXPECT_EQ(overload.maxMutatingRequestsInflight, 1);
}

TEST_F(ProfileTest, FlagsCpscaleOwnsAreRefusedNamingFileLineAndField) {
  // Each would re-bind the plane, swap its storage or credentials, or open it up.
  for (const char* flag : {"--bind-address=0.0.0.0",
                           "--secure-port=443",
                           "--advertise-address=10.0.0.1",
                           "--etcd-servers=http://x:2379",
                           "--etcd-servers-overrides=/events#http://x:1",
                           "--etcd-prefix=/other",
                           "--authorization-mode=AlwaysAllow",
                           "--anonymous-auth=true",
                           "--token-auth-file=/tmp/tokens.csv",
                           "--client-ca-file=/tmp/ca.crt",
                           "--tls-cert-file=/tmp/c",
                           "--tls-private-key-file=/tmp/k",
                           "--tls-min-version=VersionTLS10",
                           "--proxy-client-cert-file=/tmp/c",
                           "--kubelet-client-key=/tmp/k",
                           "--service-account-key-file=/tmp/k",
                           "--service-account-issuer=https://evil",
                           "--authentication-config=/tmp/a",
                           "--oidc-issuer-url=https://x",
                           "--requestheader-client-ca-file=/tmp/ca",
                           "--watch-cache=false",
                           "--feature-gates=A=true",
                           "--max-requests-inflight=1",
                           "--disable-admission-plugins=",
                           "--bind_address=0.0.0.0",
                           "--secure-port"}) {
    SCOPED_TRACE(flag);
    std::string e = errorOf(std::string("name: x\napiserverArgs:\n  - --v=2\n  - \"") + flag + "\"\n");
    EXPECT_NE(e.find("FlagsCpscaleOwnsAreRefusedNamingFileLineAndField.yaml:4: field 'apiserverArgs[1]': --"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("cannot be set by a profile"), std::string::npos) << e;
  }
  EXPECT_NE(errorOf("name: x\napiserverArgs: [\"--watch-cache=false\"]\n").find("profile field 'watchCache'"),
            std::string::npos);
  for (const char* flag :
       {"--data-dir=/tmp/elsewhere", "--listen-client-urls=http://0.0.0.0:2379", "--listen-peer-urls=http://0.0.0.0:1",
        "--advertise-client-urls=http://x:1", "--initial-cluster=a=http://x:1", "--initial-cluster-state=existing",
        "--name=other", "--listen-metrics-urls=http://0.0.0.0:1", "--cert-file=/tmp/c", "--key-file=/tmp/k",
        "--trusted-ca-file=/tmp/ca", "--peer-cert-file=/tmp/c", "--client-cert-auth=false", "--config-file=/tmp/e.yaml",
        "--wal-dir=/tmp/w", "--discovery-srv=example.com", "--auto-tls=true"}) {
    SCOPED_TRACE(flag);
    std::string e = errorOf(std::string("name: x\netcds:\n  - name: main\n    extraArgs:\n      - \"") + flag + "\"\n");
    EXPECT_NE(e.find(":5: field 'etcds[0].extraArgs[0]': --"), std::string::npos) << e;
    EXPECT_NE(e.find("cannot be set by a profile"), std::string::npos) << e;
  }
  // Tuning flags stay allowed.
  Profile p = loadProfile(write(
      "name: x\napiserverArgs: [\"--v=2\", \"--enable-admission-plugins=NodeRestriction\", "
      "\"--etcd-count-metric-poll-period=5s\", \"--default-watch-cache-size=500\"]\n"
      "etcds:\n  - name: main\n    extraArgs: [\"--quota-backend-bytes=8589934592\", \"--snapshot-count=10000\"]\n"));
  EXPECT_EQ(p.apiserverArgs.size(), 4u);
  EXPECT_EQ(p.etcds[0].extraArgs.size(), 2u);
}

TEST_F(ProfileTest, ControllerComponentsRunByDefaultAndCanBeTurnedOff) {
  Profile builtIn;
  EXPECT_TRUE(builtIn.controllerManager.enabled);
  EXPECT_TRUE(builtIn.scheduler.enabled);
  EXPECT_EQ(builtIn.clientApiservers(), std::vector<int>{0});
  Profile p = loadProfile(write("name: x\ncontrollerManager: false\nscheduler:\n  enabled: false\n"));
  EXPECT_FALSE(p.controllerManager.enabled);
  EXPECT_FALSE(p.scheduler.enabled);
  Profile args = loadProfile(
      write("name: x\ncontrollerManager:\n  args: [\"--node-monitor-grace-period=40s\", \"--concurrent-gc-syncs=30\"]\n"
            "scheduler:\n  args: [\"--v=2\"]\n"));
  EXPECT_EQ(args.controllerManager.args,
            (std::vector<std::string>{"--node-monitor-grace-period=40s", "--concurrent-gc-syncs=30"}));
  EXPECT_EQ(args.scheduler.args, std::vector<std::string>{"--v=2"});
}

TEST_F(ProfileTest, RoleSplitDedicatesReplicasThatClientsDoNotReach) {
  Profile p = loadProfile(fs::path(CPSCALE_SOURCE_DIR) / "profiles/role-split.yaml");
  EXPECT_EQ(p.apiservers, 4);
  EXPECT_EQ(p.scheduler.apiserver, 2);
  EXPECT_EQ(p.controllerManager.apiserver, 3);
  EXPECT_EQ(p.clientApiservers(), (std::vector<int>{0, 1}));
  EXPECT_EQ(p.etcdServersOverrides({"http://a:1", "http://b:2"}), "/events#http://b:2");
  // A dedicated replica of a component that does not run is the workloads' again.
  p.scheduler.enabled = false;
  EXPECT_EQ(p.clientApiservers(), (std::vector<int>{0, 1, 2}));
}

TEST_F(ProfileTest, ComponentErrorsNameTheField) {
  std::string e = errorOf("name: x\napiservers: 2\nscheduler:\n  apiserver: 2\n");
  EXPECT_NE(e.find(":4: field 'scheduler.apiserver': replica 2 does not exist: the profile has 2 apiservers"),
            std::string::npos)
      << e;
  e = errorOf("name: x\napiservers: 3\nscheduler: {apiserver: 1}\ncontrollerManager: {apiserver: 1}\n");
  EXPECT_NE(e.find("already dedicated to the controller-manager"), std::string::npos) << e;
  e = errorOf("name: x\napiservers: 1\nscheduler: {apiserver: 0}\n");
  EXPECT_NE(e.find("every apiserver is dedicated to a component"), std::string::npos) << e;
  e = errorOf("name: x\ncontrollerManager: {replicas: 2}\n");
  EXPECT_NE(e.find("field 'controllerManager.replicas': unknown field"), std::string::npos) << e;
  // What cpscale sets for them: addresses, credentials, the apiserver they reach.
  for (const char* flag :
       {"--kubeconfig=/tmp/k", "--master=https://evil:6443", "--bind-address=0.0.0.0", "--secure-port=10257",
        "--authentication-kubeconfig=/tmp/k", "--authorization-always-allow-paths=/", "--client-ca-file=/tmp/ca",
        "--tls-cert-file=/tmp/c", "--service-account-private-key-file=/tmp/k", "--cluster-signing-key-file=/tmp/k",
        "--use-service-account-credentials=false", "--root-ca-file=/tmp/ca", "--requestheader-client-ca-file=/tmp/ca",
        "--config=/tmp/c"}) {
    SCOPED_TRACE(flag);
    for (const char* component : {"controllerManager", "scheduler"}) {
      e = errorOf(std::string("name: x\n") + component + ":\n  args:\n    - \"" + flag + "\"\n");
      EXPECT_NE(e.find(":4: field '" + std::string(component) + ".args[0]': --"), std::string::npos) << e;
      EXPECT_NE(e.find("cannot be set by a profile"), std::string::npos) << e;
    }
  }
}

TEST_F(ProfileTest, ProfileAndEtcdNamesAreDnsLabels) {
  // They name directories: runs/<id>/<profile>/ and <state>/etcd-<name>/.
  for (const char* bad : {"../../etc", "a/b", "..", "Classic", "-x", "x-", "a_b", "a.b", "\"\"",
                          "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}) {
    SCOPED_TRACE(bad);
    std::string e = errorOf(std::string("apiservers: 1\nname: ") + bad + "\n");
    EXPECT_NE(e.find(":2: field 'name': "), std::string::npos) << e;
    EXPECT_NE(e.find("must be a DNS label"), std::string::npos) << e;
    e = errorOf(std::string("name: x\netcds:\n  - name: ") + bad + "\n");
    EXPECT_NE(e.find(":3: field 'etcds[0].name': "), std::string::npos) << e;
    EXPECT_NE(e.find("must be a DNS label"), std::string::npos) << e;
  }
  EXPECT_EQ(loadProfile(write("name: a-1\netcds:\n  - name: m0\n")).name, "a-1");
  EXPECT_EQ(loadProfile(write(std::string("name: ") + std::string(63, 'a') + "\n")).name.size(), 63u);
}

TEST_F(ProfileTest, SyntaxErrorNamesLineAndColumn) {
  std::string e = errorOf("name: x\napiservers: [1\n");
  EXPECT_NE(e.find("SyntaxErrorNamesLineAndColumn.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}

TEST_F(ProfileTest, MissingFileIsAConfigError) {
  try {
    loadProfile("/nonexistent/profile.yaml");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/profile.yaml: cannot open file"), std::string::npos);
  }
}

TEST_F(ProfileTest, FeatureGatesAndArgsAreRead) {
  Profile p =
      loadProfile(write("name: x\nfeatureGates:\n  A: true\n  B: false\napiserverArgs: [\"--v=2\"]\n"
                        "maxRequestsInflight: 10\nwatchCache: false\n"));
  EXPECT_EQ(p.featureGates, (std::map<std::string, bool>{{"A", true}, {"B", false}}));
  EXPECT_EQ(p.apiserverArgs, std::vector<std::string>{"--v=2"});
  EXPECT_EQ(p.maxRequestsInflight, 10);
  EXPECT_FALSE(p.watchCache);
}

}  // namespace
}  // namespace cpscale::controlplane
