// classify on the fixture results and capacity index (test/fixtures/classify/README.md
// has their numbers): the binding axis, the rung, the reasons, and the headroom.
#include "reports/classify.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/common/error.h"
#include "sim/result/result.h"

namespace cpscale::reports {
namespace {

const std::string kDir = CPSCALE_CLASSIFY_FIXTURES;

CapacityTable fixtureTable() {
  CapacityTable t;
  addToTable(t, result::readCapacityIndex(kDir + "/capacity.json"), kDir + "/capacity.json");
  return t;
}

std::vector<metrics::Figure> pressures(const std::string& name) {
  return resultPressures(result::readResult(kDir + "/" + name), name);
}

Classification classifyFixture(const std::string& name, double headroom = kDefaultHeadroom,
                               const CapacityTable& table = fixtureTable()) {
  result::RunResult r = result::readResult(kDir + "/" + name);
  ClassifyOptions o;
  o.source = name;
  o.recipe = r.profile.name;
  o.recipeFrom = "the result's profile";
  o.headroom = headroom;
  return classify(pressures(name), table, o);
}

const AxisVerdict& axis(const Classification& c, std::string_view a) {
  for (const auto& v : c.axes)
    if (v.axis == a) return v;
  throw std::runtime_error("no axis " + std::string(a));
}

bool has(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

TEST(Classify, TableOrdersTheLadderAndTakesPressureAtTheHeldStep) {
  CapacityTable t = fixtureTable();
  EXPECT_EQ(t.recipes, (std::vector<std::string>{"classic", "classic-ha"}));
  const AxisCapacity* node = t.find("classic", "node");
  ASSERT_TRUE(node && node->capacity);
  EXPECT_DOUBLE_EQ(*node->capacity, 2990);  // the 30,000-node step, not the failed 40,000 one
  EXPECT_DOUBLE_EQ(*node->held, 30000);
  EXPECT_FALSE(node->atLeast);
  const AxisCapacity* churn = t.find("classic-ha", "churn");
  ASSERT_TRUE(churn && churn->capacity);
  EXPECT_TRUE(churn->atLeast);  // every step up to the search's max held
}

TEST(Classify, NodeBoundResultBindsOnNodeAndFitsClassicHa) {
  Classification c = classifyFixture("node-bound.json");
  EXPECT_EQ(c.recipe, "classic");
  ASSERT_TRUE(c.binding);
  EXPECT_EQ(*c.binding, "node");
  EXPECT_NEAR(*axis(c, "node").pressure.value, 2900, 1e-6);
  EXPECT_NEAR(*axis(c, "node").utilization, 2900.0 / 2990, 1e-9);
  // The reason in words, naming the figure and what classic held.
  EXPECT_TRUE(has(c.bindingReason, "node: 2,900 liveness writes/s (axis_pressure{axis=node})")) << c.bindingReason;
  EXPECT_TRUE(has(c.bindingReason, "is 97 % of what classic held (2,990/s at 30,000 nodes)")) << c.bindingReason;
  ASSERT_TRUE(c.rung);
  EXPECT_EQ(*c.rung, "classic-ha");
  ASSERT_EQ(c.ladder.size(), 2u);
  EXPECT_FALSE(c.ladder[0].fits);
  EXPECT_EQ(c.ladder[0].axes[0].reason, "node: needs 3,625/s, held 2,990/s at 30,000 nodes");
  EXPECT_TRUE(c.ladder[0].axes[1].fits);
}

TEST(Classify, ChurnBoundResultBindsOnChurnNamingTheCustomResource) {
  Classification c = classifyFixture("churn-bound.json");
  EXPECT_EQ(c.recipe, "classic-ha");
  ASSERT_TRUE(c.binding);
  EXPECT_EQ(*c.binding, "churn");
  const AxisVerdict& churn = axis(c, "churn");
  EXPECT_NEAR(*churn.pressure.value, 750, 1e-6);
  // Liveness writes are the node axis', not churn: 3,000 nodes beside the sessions.
  EXPECT_NEAR(*axis(c, "node").pressure.value, 310.2, 1e-6);
  EXPECT_TRUE(has(churn.reason, "churn_custom_resource_share 96.0 %")) << churn.reason;
  EXPECT_TRUE(has(churn.reason, "sessions.agents.example.com")) << churn.reason;
  // classic-ha's churn search reached its max: utilization is an upper bound.
  EXPECT_TRUE(has(churn.reason, "is at most 62 % of what classic-ha held (at least 1,200/s")) << churn.reason;
  ASSERT_TRUE(c.rung);
  EXPECT_EQ(*c.rung, "classic-ha");
  // The state axis counts every replica's copy beside the largest one.
  EXPECT_TRUE(has(axis(c, "state").reason, "resident_objects_all_replicas 34,899 over 3 replicas"));
}

TEST(Classify, StateBoundResultExceedsEveryRecipeAndHaHoldsLessState) {
  Classification c = classifyFixture("state-bound.json");
  ASSERT_TRUE(c.binding);
  EXPECT_EQ(*c.binding, "state");
  EXPECT_TRUE(has(c.bindingReason, "124,272 resident objects per replica (axis_pressure{axis=state}"));
  EXPECT_FALSE(c.rung);
  EXPECT_TRUE(has(c.rungReason, "state exceeds every measured recipe")) << c.rungReason;
  EXPECT_TRUE(has(c.rungReason, "the most: classic held 150,500 objects")) << c.rungReason;
}

TEST(Classify, HeadroomChangesTheRung) {
  Classification tight = classifyFixture("node-bound.json", 0.8);
  Classification full = classifyFixture("node-bound.json", 1.0);
  ASSERT_TRUE(tight.rung && full.rung);
  EXPECT_EQ(*tight.rung, "classic-ha");
  EXPECT_EQ(*full.rung, "classic");
  // The binding axis is the same: headroom only moves the rung.
  EXPECT_EQ(*tight.binding, *full.binding);

  EXPECT_EQ(*classifyFixture("state-bound.json", 0.9).rung, "classic");
  // Below what classic-ha was shown to hold (at least 1,200/s): no rung, and churn says so.
  Classification churn = classifyFixture("churn-bound.json", 0.6);
  EXPECT_FALSE(churn.rung);
  EXPECT_TRUE(has(churn.rungReason, "churn exceeds every measured recipe")) << churn.rungReason;
  EXPECT_TRUE(has(churn.ladder[1].axes[1].reason, "not shown to hold 1,250/s")) << churn.ladder[1].axes[1].reason;
}

TEST(Classify, WithoutATableThePressuresAreReportedAndNothingIsGuessed) {
  Classification c = classifyFixture("churn-bound.json", kDefaultHeadroom, CapacityTable{});
  EXPECT_FALSE(c.binding);
  EXPECT_FALSE(c.rung);
  EXPECT_TRUE(has(c.bindingReason, "no capacity table was given"));
  for (const auto& v : c.axes) EXPECT_TRUE(v.pressure.available()) << v.axis;
  std::string text = renderClassification(c);
  EXPECT_TRUE(has(text, "capacity  none given")) << text;
  EXPECT_TRUE(has(text, "750 churn writes/s")) << text;
}

TEST(Classify, RecipeIsGuessedFromTheReplicasWhenNotGiven) {
  Classification c = classify(pressures("churn-bound.json"), fixtureTable(), {});
  EXPECT_TRUE(c.recipeGuessed);
  EXPECT_EQ(c.recipe, "classic-ha");
  EXPECT_TRUE(has(c.recipeFrom, "guessed from 3 kube-apiserver replicas")) << c.recipeFrom;
}

TEST(Classify, ARecipeWithoutSearchesAndASearchThatHeldNothingAreSaid) {
  CapacityTable t = fixtureTable();
  result::CapacityIndex idx;
  result::CapacitySearch s;
  s.profile = "role-split";
  s.axis = "node";
  s.knob = "workloads.fleet.count";
  s.unit = "nodes";
  s.limit = result::CapacityLimit::kServer;
  s.brokeBy = "client_latency_p99{...} <= 1s: measured 3 s";
  idx.searches.push_back(s);
  addToTable(t, idx, "extra.json");
  EXPECT_EQ(t.recipes, (std::vector<std::string>{"classic", "classic-ha", "role-split"}));
  ClassifyOptions o;
  o.recipe = "role-split";
  Classification c = classify(pressures("node-bound.json"), t, o);
  ASSERT_TRUE(c.binding);
  EXPECT_EQ(*c.binding, "node");
  EXPECT_TRUE(std::isinf(*axis(c, "node").utilization));
  EXPECT_TRUE(has(c.bindingReason, "did not hold its first step")) << c.bindingReason;
  EXPECT_TRUE(has(axis(c, "churn").reason, "the capacity table has no churn search for role-split"));
}

TEST(Classify, JsonDocumentCarriesTheVerdictAndParsesBack) {
  Classification c = classifyFixture("node-bound.json");
  nlohmann::json j = nlohmann::json::parse(toJson(c).dump());
  EXPECT_EQ(j["kind"], "Classification");
  EXPECT_EQ(j["binding"]["axis"], "node");
  EXPECT_EQ(j["rung"]["recipe"], "classic-ha");
  EXPECT_EQ(j["recipe"]["name"], "classic");
  ASSERT_EQ(j["axes"].size(), 3u);
  EXPECT_EQ(j["axes"][0]["axis"], "node");
  EXPECT_EQ(j["axes"][0]["unit"], "1/s");
  EXPECT_DOUBLE_EQ(j["axes"][0]["capacity"]["value"].get<double>(), 2990);
  EXPECT_EQ(j["ladder"][1]["fits"], true);
  EXPECT_FALSE(j["figures"].empty());
}

TEST(Classify, AResultWithoutSteadyPressuresIsAConfigErrorSayingWhy) {
  result::RunResult r = result::readResult(kDir + "/node-bound.json");
  for (auto& f : r.figures)
    if (f.window == metrics::Window::kSteady && (f.name == "write_qps" || f.name == "apiserver_objects"))
      f = metrics::Figure::unavailable(f.name, f.labels, f.unit, f.source,
                                       "the steady window never started: interrupted");
  try {
    resultPressures(r, "cut.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "cut.json: field '/figures'")) << e.what();
    EXPECT_TRUE(has(e.what(), "the steady window never started")) << e.what();
  }
  r.figures.clear();
  EXPECT_THROW(resultPressures(r, "empty.json"), ConfigError);
}

TEST(Classify, MissingOrGarbledCapacityFileIsAConfigErrorNamingIt) {
  try {
    result::readCapacityIndex(kDir + "/no-such-index.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "no-such-index.json")) << e.what();
  }
  // A result is not an index: its kind says so.
  try {
    result::readCapacityIndex(kDir + "/node-bound.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(has(e.what(), "node-bound.json")) << e.what();
    EXPECT_TRUE(has(e.what(), "kind")) << e.what();
  }
}

}  // namespace
}  // namespace cpscale::reports
