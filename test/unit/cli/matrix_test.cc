// Every shipped scenario on every shipped profile, on the model, as a user runs it:
// `cpscale simulate` for a scenario, `cpscale capacity --model` for an index scenario
// (its gate is the capacity the search finds). Each must exit 0: a shipped scenario
// that fails on a shipped profile fails every CI job that adopts it, on day one, for a
// reason that says nothing about the plane. Two kinds of cell are held to something
// else, each for a reason of the plane's (refused, choked below). New scenarios and
// profiles join the matrix by being shipped.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace cpscale::cli {
namespace {
namespace fs = std::filesystem;

struct Cell {
  fs::path scenario;
  fs::path profile;
  bool index = false;  // scenarios/index: judged by a capacity search
};

std::vector<fs::path> yamlIn(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Cell> matrix() {
  const fs::path root = CPSCALE_SOURCE_DIR;
  std::vector<Cell> out;
  for (const auto& p : yamlIn(root / "profiles")) {
    for (const auto& s : yamlIn(root / "scenarios")) out.push_back({s, p, false});
    for (const auto& s : yamlIn(root / "scenarios" / "index")) out.push_back({s, p, true});
  }
  return out;
}

void PrintTo(const Cell& c, std::ostream* os) {
  *os << c.scenario.filename().string() << " on " << c.profile.filename().string();
}

// The cells a user is refused before anything starts (exit 2, naming the gate and
// why): node-bound-realistic times how long the node lifecycle controller takes to mark
// a silent node NotReady, and these profiles run no kube-controller-manager.
bool refused(const Cell& c) {
  return c.scenario.stem() == "node-bound-realistic" &&
         (c.profile.stem() == "apiserver-only" || c.profile.stem() == "overload");
}

// The overload profile is a plane built not to hold: one mutating and four read-only
// seats, APF off, the load as an ordinary user. The overload rehearsal passes on it;
// any other scenario must run to its end and be judged (exit 0, or 1 for the gates a
// choked plane fails: objects never created, latency past its bound), never refused
// or cut short.
bool choked(const Cell& c) { return c.profile.stem() == "overload" && c.scenario.stem() != "overload"; }

std::string nameOf(const ::testing::TestParamInfo<Cell>& info) {
  std::string n = (info.param.index ? "index_" : "") + info.param.scenario.stem().string() + "_on_" +
                  info.param.profile.stem().string();
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

struct Outcome {
  int exitCode = -1;
  std::string output;
};

Outcome run(const std::string& command) {
  Outcome o;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return o;
  std::array<char, 4096> buf;
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) o.output += buf.data();
  const int status = ::pclose(p);
  o.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

class ShippedMatrix : public ::testing::TestWithParam<Cell> {};

TEST_P(ShippedMatrix, PassesItsOwnGatesOnTheModel) {
  const Cell& c = GetParam();
  const fs::path out =
      fs::temp_directory_path() / ("cpscale-matrix-" + nameOf({c, 0}) + "-" + std::to_string(::getpid()));
  const std::string command = std::string(CPSCALE_BINARY) + (c.index ? " capacity --model " : " simulate ") +
                              c.scenario.string() + " --profile " + c.profile.string() + " --quiet --out " +
                              out.string();
  const Outcome o = run(command);
  if (refused(c)) {
    EXPECT_EQ(o.exitCode, 2) << command << "\n" << o.output;
    EXPECT_NE(o.output.find("runs no kube-controller-manager"), std::string::npos) << o.output;
    EXPECT_FALSE(fs::exists(out)) << "a refused run creates nothing";
  } else if (choked(c)) {
    EXPECT_TRUE(o.exitCode == 0 || o.exitCode == 1) << command << "\n" << o.output;
  } else {
    EXPECT_EQ(o.exitCode, 0) << command << "\n" << o.output;
  }
  fs::remove_all(out);
}

INSTANTIATE_TEST_SUITE_P(Shipped, ShippedMatrix, ::testing::ValuesIn(matrix()), nameOf);

}  // namespace
}  // namespace cpscale::cli
