// A live run's threads on the wall clock: the supervisor's monitor thread, the scrape
// loop's, two engine workers and the progress reporter, against a target in this
// process. Every request is answered by a quiet in-process apiserver that counts what
// it answered and serves the counts on /metrics, so the figures the run derives from
// its scrapes can be checked against what the workers sent. No plane, no sockets: what
// is under test is the run's threads (make tsan runs this under ThreadSanitizer).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/common/interrupt.h"
#include "sim/engine/clock.h"
#include "sim/metrics/figures.h"
#include "sim/run/runner.h"

namespace cpscale::run {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;

// What the quiet apiserver answered, shared by every connection to it.
struct ServerState {
  std::mutex mu;
  std::uint64_t rv = 1000;
  std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> answered;  // (verb, group, resource)
  // The load's connections: opened in all, and open now.
  std::atomic<int> loadConnectionsOpened{0};
  std::atomic<int> loadConnections{0};

  std::string metrics() {
    std::lock_guard lock(mu);
    std::string out = "# TYPE apiserver_request_total counter\n";
    for (const auto& [k, n] : answered) {
      const auto& [verb, group, resource] = k;
      out += "apiserver_request_total{code=\"200\",group=\"" + group + "\",resource=\"" + resource + "\",verb=\"" +
             verb + "\"} " + std::to_string(n) + "\n";
    }
    return out;
  }
};

// One connection to the quiet apiserver: creates and updates are echoed with a
// resourceVersion, a collection lists empty, a named object is not found, a watch
// stays open until cancelled. Answers are handed over by poll(), which waits (at most
// maxWait, woken by wakeup()) as a socket poll would.
class QuietApiserver : public kube::Transport {
 public:
  explicit QuietApiserver(ServerState& state) : state_(state) {}

  kube::RequestId submit(kube::HttpRequest req, kube::ResponseHandler done) override {
    std::lock_guard lock(mu_);
    const kube::RequestId id = ++next_;
    if (req.stream) {
      streams_.emplace(id, std::move(done));
    } else {
      ready_.push_back({id, answer(req), std::move(done)});
      cv_.notify_all();
    }
    return id;
  }
  void cancel(kube::RequestId id) override {
    kube::ResponseHandler done;
    {
      std::lock_guard lock(mu_);
      auto s = streams_.find(id);
      if (s != streams_.end()) {
        done = std::move(s->second);
        streams_.erase(s);
      }
      for (auto it = ready_.begin(); it != ready_.end(); ++it)
        if (it->id == id) {
          done = std::move(it->done);
          ready_.erase(it);
          break;
        }
    }
    if (!done) return;
    kube::HttpResponse r;
    r.outcome = kube::TransportOutcome::kAborted;
    done(std::move(r));
  }
  std::size_t poll(engine::Duration maxWait) override {
    std::deque<Answer> batch;
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::min<engine::Duration>(maxWait, 20ms), [this] { return !ready_.empty() || woken_; });
      woken_ = false;
      batch.swap(ready_);
    }
    for (auto& a : batch) a.done(std::move(a.response));
    return batch.size();
  }
  std::size_t inFlight() const override {
    std::lock_guard lock(mu_);
    return ready_.size() + streams_.size();
  }
  void wakeup() override {
    std::lock_guard lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  const std::string& server() const override { return server_; }

 private:
  struct Answer {
    kube::RequestId id;
    kube::HttpResponse response;
    kube::ResponseHandler done;
  };

  kube::HttpResponse answer(const kube::HttpRequest& req) {
    kube::HttpResponse r;
    r.headers.push_back({"content-type", "application/json"});
    const std::string path = req.path.substr(0, req.path.find('?'));
    if (path == "/metrics") {
      r.status = 200;
      r.headers = {{"content-type", "text/plain; version=0.0.4"}};
      r.body = state_.metrics();
      return r;
    }
    std::string rv;
    {
      std::lock_guard lock(state_.mu);
      rv = std::to_string(++state_.rv);
      // /apis/<group>/<version>/...; the core group is "".
      const std::string group = path.starts_with("/apis/") ? path.substr(6, path.find('/', 6) - 6) : "";
      ++state_.answered[{req.statsVerb.empty() ? req.method : req.statsVerb, group, req.statsResource}];
    }
    if (path == "/version") {
      r.status = 200;
      r.body = json{{"gitVersion", "v0.0.0-quiet"}}.dump();
    } else if (req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      json obj = req.method == "PATCH" ? json::object() : json::parse(req.body);
      obj["metadata"]["resourceVersion"] = rv;
      obj["metadata"]["uid"] = "uid-" + rv;
      r.status = req.method == "POST" ? 201 : 200;
      r.body = obj.dump();
    } else if (req.method == "GET" && req.statsVerb == "LIST") {
      r.status = 200;
      r.body =
          json{
              {"kind", "List"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}, {"items", json::array()}}
              .dump();
    } else if (req.method == "GET") {
      r.status = 404;
      r.body =
          json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"}, {"reason", "NotFound"}, {"code", 404}}
              .dump();
    } else {
      r.status = 200;
      r.body = json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Success"}}.dump();
    }
    return r;
  }

  ServerState& state_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Answer> ready_;
  std::map<kube::RequestId, kube::ResponseHandler> streams_;
  kube::RequestId next_ = 0;
  bool woken_ = false;
  std::string server_ = "quiet://apiserver";
};

// A paced target whose every connection is to the quiet apiserver.
class QuietTarget final : public Target {
 public:
  engine::SimulatorMode mode() const override { return engine::SimulatorMode::kPaced; }
  void open(result::RunResult& r) override {
    r.target.kind = "quiet";
    r.target.server = setup_.server();
  }
  kube::Transport& setupTransport() override { return setup_; }
  engine::Clock& setupClock() override { return clock_; }
  kube::TransportPtr loadTransport(const scenario::Scenario&) override {
    // A load connection, counted while it is open.
    class Counted final : public QuietApiserver {
     public:
      explicit Counted(ServerState& s) : QuietApiserver(s), s_(s) {
        ++s_.loadConnectionsOpened;
        ++s_.loadConnections;
      }
      ~Counted() override { --s_.loadConnections; }

     private:
      ServerState& s_;
    };
    return std::make_unique<Counted>(state);
  }
  void close() override { loadConnectionsAtClose = state.loadConnections.load(); }
  std::vector<metrics::ScrapeTarget> scrapeTargets(const result::RunResult&) override {
    metrics::ScrapeTarget t;
    t.info.name = "kube-apiserver-0";
    t.info.role = metrics::TargetRole::kApiserver;
    t.transport = std::make_shared<QuietApiserver>(state);
    return {t};
  }
  bool needsCleanup() const override { return false; }

  ServerState state;
  int loadConnectionsAtClose = -1;

 private:
  QuietApiserver setup_{state};
  engine::WallClock clock_{std::chrono::steady_clock::now()};
};

class LiveRunTest : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("cpscale-live-run-test-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override {
    setInterrupted(false);
    if (!std::getenv("KEEP")) fs::remove_all(dir_);
  }
  scenario::Scenario scenario(const std::string& duration) {
    const fs::path file = dir_ / "fleet.yaml";
    std::ofstream(file) << "apiVersion: cpscale.io/v1alpha1\n"
                           "kind: Scenario\n"
                           "name: quiet-fleet\n"
                           "duration: "
                        << duration
                        << "\n"
                           "workers: 2\n"
                           "scrapeInterval: 1s\n"
                           "drain: 2s\n"
                           "setupTimeout: 30s\n"
                           "workloads:\n"
                           "  - kind: kubelets\n"
                           "    name: fleet\n"
                           "    count: 20\n"
                           "    registrationQps: 200\n"
                           "    leaseDurationSeconds: 4\n"
                           "    watches: {mode: shared}\n";  // the test server lists, but has no streaming list
    return scenario::loadScenario(file);
  }
  RunOptions options() const {
    RunOptions o;
    o.runId = "live";
    o.outDir = dir_ / "out";
    o.progress = true;  // the reporter's thread too
    return o;
  }
};

const metrics::Figure* figure(const result::RunResult& r, const std::string& name, metrics::Window w,
                              const metrics::Labels& labels = {}) {
  for (const auto& f : r.figures)
    if (f.name == name && f.window == w && f.labels == labels) return &f;
  return nullptr;
}

TEST_F(LiveRunTest, TheRunsThreadsMeasureWhatTheWorkersSent) {
  QuietTarget target;
  scenario::Scenario sc = scenario("4s");
  result::RunResult r = executeRun(sc, options(), target);
  EXPECT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_EQ(r.exitCode, 0);
  ASSERT_FALSE(r.phases.empty());
  const auto steady = std::find_if(r.phases.begin(), r.phases.end(), [](const auto& p) { return p.name == "steady"; });
  ASSERT_NE(steady, r.phases.end());
  EXPECT_TRUE(steady->complete);
  EXPECT_NEAR(steady->endSeconds - steady->startSeconds, 4.0, 0.5);
  // Twenty nodes renewing every second: about 20 PUTs a second, sent by the workers and
  // counted by the server the scrape loop read.
  const metrics::Figure* sent = figure(r, "client_requests", metrics::Window::kSteady,
                                       {{"outcome", "2xx"}, {"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_TRUE(sent && sent->value) << "no client_requests for lease PUTs";
  EXPECT_GT(*sent->value, 40);
  const metrics::Figure* served = figure(r, "write_qps", metrics::Window::kSteady,
                                         {{"group", "coordination.k8s.io"}, {"resource", "leases"}, {"verb", "PUT"}});
  ASSERT_TRUE(served && served->value) << (served ? served->unavailableReason : "no write_qps{resource=leases}");
  EXPECT_GT(*served->value, 10);
  EXPECT_LT(*served->value, 30);
  EXPECT_TRUE(fs::exists(dir_ / "out" / result::kResultFile));
}

// The load's connections (its watch streams with them) are closed before the target
// stops: a kube-apiserver told to stop waits for its open streams, and the local plane
// kills it after 15 s (each run's end took 15 s more per apiserver before).
TEST_F(LiveRunTest, TheLoadsConnectionsAreClosedBeforeTheTargetStops) {
  QuietTarget target;
  scenario::Scenario sc = scenario("2s");
  result::RunResult r = executeRun(sc, options(), target);
  EXPECT_EQ(r.status, result::RunStatus::kCompleted) << r.statusDetail;
  EXPECT_GE(target.state.loadConnectionsOpened.load(), 2);  // one per worker
  EXPECT_EQ(target.loadConnectionsAtClose, 0);
}

TEST_F(LiveRunTest, CtrlCCutsTheLiveWindowAndTheResultSaysSo) {
  QuietTarget target;
  scenario::Scenario sc = scenario("10m");
  std::thread ctrlC([] {
    std::this_thread::sleep_for(3s);
    setInterrupted(true);
  });
  result::RunResult r = executeRun(sc, options(), target);
  ctrlC.join();
  EXPECT_EQ(r.status, result::RunStatus::kInterrupted);
  EXPECT_NE(r.exitCode, 0);
  EXPECT_LT(r.measuredSeconds, 60);
  EXPECT_TRUE(fs::exists(dir_ / "out" / result::kResultFile));
}

}  // namespace
}  // namespace cpscale::run
