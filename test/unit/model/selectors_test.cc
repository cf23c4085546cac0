#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/model/object_store.h"
#include "sim/model/selectors.h"

namespace cpscale::model {
namespace {

TEST(LabelSelector, EqualityInAndExists) {
  LabelSet labels = {{"app", "web"}, {"cpscale.io/run", "r1"}, {"tier", "front"}};
  auto match = [&](std::string_view s) {
    auto sel = LabelSelector::parse(s);
    EXPECT_TRUE(sel.has_value()) << s;
    return sel && sel->matches(labels);
  };
  EXPECT_TRUE(match(""));
  EXPECT_TRUE(match("app=web"));
  EXPECT_TRUE(match("app==web,cpscale.io/run=r1"));
  EXPECT_FALSE(match("app=db"));
  EXPECT_TRUE(match("app!=db"));
  EXPECT_FALSE(match("app!=web"));
  EXPECT_TRUE(match("tier in (front, back)"));
  EXPECT_FALSE(match("tier notin (front,back)"));
  EXPECT_TRUE(match("tier"));
  EXPECT_FALSE(match("!tier"));
  EXPECT_TRUE(match("!missing,app in (web)"));
  EXPECT_FALSE(LabelSelector::parse("app in front").has_value());
}

TEST(FieldSelector, MetadataAndOtherFields) {
  auto sel = FieldSelector::parse("metadata.name=a,metadata.namespace!=kube-system");
  ASSERT_TRUE(sel);
  EXPECT_TRUE(sel->metadataOnly());
  EXPECT_TRUE(sel->matches("a", "default", nullptr));
  EXPECT_FALSE(sel->matches("b", "default", nullptr));
  EXPECT_FALSE(sel->matches("a", "kube-system", nullptr));
  auto node = FieldSelector::parse("spec.nodeName=n1");
  ASSERT_TRUE(node);
  EXPECT_FALSE(node->metadataOnly());
  EXPECT_TRUE(node->matches("p", "ns", [](std::string_view f) -> std::optional<std::string> {
    return f == "spec.nodeName" ? std::optional<std::string>("n1") : std::nullopt;
  }));
}

TEST(FieldSelector, PinnedIsTheValueAnEqualityRequirementGivesTheField) {
  // What the watch cache's trigger index reads: only "field=value" pins the field.
  auto sel = FieldSelector::parse("spec.nodeName=n1,metadata.namespace!=kube-system");
  ASSERT_TRUE(sel);
  EXPECT_EQ(sel->pinned("spec.nodeName"), "n1");
  EXPECT_EQ(sel->pinned("metadata.namespace"), std::nullopt);
  EXPECT_EQ(sel->pinned("metadata.name"), std::nullopt);
  EXPECT_EQ(FieldSelector::parse("spec.nodeName==n2")->pinned("spec.nodeName"), "n2");
  EXPECT_EQ(FieldSelector::parse("spec.nodeName!=n2")->pinned("spec.nodeName"), std::nullopt);
}

// KEP-5866's grammar as kube-apiserver reads it: quoted 16-digit hex bounds, [start,
// end), the last range ending at 2^64. Bare integers, short hex and an empty range
// are refused, with the apiserver's words.
TEST(ShardRange, ParsesKep5866Ranges) {
  auto r = ShardRange::parse("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->contains(0));
  EXPECT_TRUE(r->contains(0x7fffffffffffffffull));
  EXPECT_FALSE(r->contains(0x8000000000000000ull));
  auto last = ShardRange::parse("shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')");
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->contains(~0ull));
  EXPECT_FALSE(last->contains(0x7fffffffffffffffull));
  std::string error;
  EXPECT_FALSE(ShardRange::parse("shardRange(object.metadata.uid, 0x0, 0x8000000000000000)", &error));
  EXPECT_NE(error.find("hexStart must be a string literal"), std::string::npos) << error;
  EXPECT_FALSE(ShardRange::parse("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')", &error));
  EXPECT_NE(error.find("16-digit"), std::string::npos) << error;
  EXPECT_FALSE(ShardRange::parse("shardRange(object.metadata.uid, '0x8000000000000000', '0x8000000000000000')"));
  EXPECT_FALSE(ShardRange::parse("shardRange(object.metadata.name, '0x0000000000000000', '0x0000000000000001')"));
  EXPECT_EQ(fnv1a64(""), 14695981039346656037ull);
}

TEST(StrategicMergePatch, MergesConditionsByTypeAndDropsDirectives) {
  nlohmann::json node = nlohmann::json::parse(R"({"status":{"conditions":[
      {"type":"MemoryPressure","status":"False","lastHeartbeatTime":"t0"},
      {"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"t0"}],
      "images":[{"names":["a"]}]}})");
  strategicMergePatch(node, nlohmann::json::parse(R"({"status":{
      "$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],
      "conditions":[{"type":"MemoryPressure","lastHeartbeatTime":"t1"},{"type":"Ready","lastHeartbeatTime":"t1"}]}})"));
  const auto& c = node["status"]["conditions"];
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1]["type"], "Ready");
  EXPECT_EQ(c[1]["status"], "True");  // kept: merged by type, not replaced
  EXPECT_EQ(c[1]["lastHeartbeatTime"], "t1");
  EXPECT_FALSE(node["status"].contains("$setElementOrder/conditions"));
  EXPECT_EQ(node["status"]["images"].size(), 1u);
  // A new condition is appended; $patch: delete removes one; null removes a field.
  strategicMergePatch(node, nlohmann::json::parse(R"({"status":{"conditions":[
      {"type":"DiskPressure","status":"False"},{"type":"MemoryPressure","$patch":"delete"}],"images":null}})"));
  ASSERT_EQ(node["status"]["conditions"].size(), 2u);
  EXPECT_EQ(node["status"]["conditions"][1]["type"], "DiskPressure");
  EXPECT_FALSE(node["status"].contains("images"));
}

}  // namespace
}  // namespace cpscale::model
