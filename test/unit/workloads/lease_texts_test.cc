#include "workloads/lease_texts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cpscale::workloads {
namespace {

// A Lease as the fleet caches it: sorted keys, the node's name three times, two uids, a
// creation time, the resourceVersion and a renewTime placeholder.
struct Text {
  std::string text;
  std::size_t rvPos, rvLen, renewPos;
};

constexpr std::size_t kRenewLen = 27;

Text lease(int node, const std::string& rv, bool rvFirst = true) {
  const std::string name = "cpscale-bf-4242-r0-" + std::to_string(node);
  char uid[37];
  std::snprintf(uid, sizeof uid, "%08x-1111-4222-8333-%012x", node * 2654435761u, node * 40503u);
  char nodeUid[37];
  std::snprintf(nodeUid, sizeof nodeUid, "%08x-aaaa-4bbb-8ccc-%012x", node * 97u, node * 7919u);
  const std::string created = "2026-12-04T19:0" + std::to_string(node % 10) + ":1" + std::to_string(node % 7) + "Z";
  std::string head = R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"creationTimestamp":")" +
                     created +
                     R"(","managedFields":[{"apiVersion":"coordination.k8s.io/v1","fieldsType":"FieldsV1",)"
                     R"("fieldsV1":{"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\")" +
                     nodeUid +
                     R"(\"}":{}}},"f:spec":{"f:holderIdentity":{},"f:leaseDurationSeconds":{},"f:renewTime":{}}},)"
                     R"("manager":"kubelet","operation":"Update","time":")" +
                     created + R"("}],"name":")" + name +
                     R"(","namespace":"kube-node-lease","ownerReferences":[{"apiVersion":"v1","kind":"Node","name":")" +
                     name + R"(","uid":")" + nodeUid + R"("}],)";
  const std::string rvField = R"("resourceVersion":")";
  const std::string renewField =
      R"("spec":{"holderIdentity":")" + name + R"(","leaseDurationSeconds":40,"renewTime":")";
  Text t;
  if (rvFirst) {
    t.text = head + rvField;
    t.rvPos = t.text.size();
    t.text += rv + R"(","uid":")" + uid + R"("},)" + renewField;
    t.renewPos = t.text.size();
    t.text += std::string(kRenewLen, '0') + R"("}})";
  } else {
    // The renewTime before the resourceVersion.
    t.text = head + R"("uid":")" + uid + R"("},)" + renewField;
    t.renewPos = t.text.size();
    t.text += std::string(kRenewLen, '0') + R"(","x":{)" + rvField;
    t.rvPos = t.text.size();
    t.text += rv + R"("}}})";
  }
  t.rvLen = rv.size();
  return t;
}

std::string built(const LeaseTexts& texts, const LeaseText& t, std::size_t* renewPos = nullptr) {
  std::string out = "left over from an earlier request";
  std::size_t at = 0;
  texts.build(t, out, at);
  if (renewPos) *renewPos = at;
  return out;
}

TEST(LeaseTexts, EveryTextIsRebuiltExactlyAndKeepsOnlyItsDifferences) {
  LeaseTexts texts;
  std::vector<Text> in;
  std::vector<LeaseText> stored;
  for (int node = 0; node < 2000; ++node) {
    // Names of 1 to 4 digits and resourceVersions of several lengths.
    in.push_back(lease(node, std::to_string(1000 + node * 37)));
    stored.push_back(texts.store(in.back().text, in.back().rvPos, in.back().rvLen, in.back().renewPos, kRenewLen));
  }
  std::size_t deltaBytes = 0, textBytes = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::size_t renewPos = 0;
    ASSERT_EQ(built(texts, stored[i], &renewPos), in[i].text) << "node " << i;
    EXPECT_EQ(renewPos, in[i].renewPos);
    EXPECT_EQ(stored[i].resourceVersion(), std::to_string(1000 + i * 37));
    EXPECT_FALSE(stored[i].whole) << "node " << i;
    deltaBytes += stored[i].data.size();
    textBytes += in[i].text.size();
  }
  // One reference per length of name (and so of text), not one per node.
  EXPECT_LE(texts.references(), 8u);
  // The uids, the name's digits, the times and the resourceVersion: ~100 of ~1,000 bytes.
  EXPECT_LT(deltaBytes * 6, textBytes);
}

TEST(LeaseTexts, ANewResourceVersionOfAnotherLengthMovesTheRenewTime) {
  for (bool rvFirst : {true, false}) {
    LeaseTexts texts;
    const Text ref = lease(10, "999", rvFirst);
    texts.store(ref.text, ref.rvPos, ref.rvLen, ref.renewPos, kRenewLen);
    const Text in = lease(11, "999", rvFirst);
    LeaseText t = texts.store(in.text, in.rvPos, in.rvLen, in.renewPos, kRenewLen);
    ASSERT_FALSE(t.whole);
    t.setResourceVersion("1000000");
    const Text want = lease(11, "1000000", rvFirst);
    std::size_t renewPos = 0;
    EXPECT_EQ(built(texts, t, &renewPos), want.text) << rvFirst;
    EXPECT_EQ(renewPos, want.renewPos) << rvFirst;
  }
}

TEST(LeaseTexts, TheRenewTimeIsNeverADifference) {
  // Whatever bytes a text had at its renewTime, they are not kept: every renewal writes
  // its own there.
  LeaseTexts texts;
  Text a = lease(5, "7");
  texts.store(a.text, a.rvPos, a.rvLen, a.renewPos, kRenewLen);
  Text b = a;
  b.text.replace(b.renewPos, kRenewLen, "2026-12-04T19:00:10.123456Z");
  const LeaseText t = texts.store(b.text, b.rvPos, b.rvLen, b.renewPos, kRenewLen);
  EXPECT_EQ(t.data, "7");
  EXPECT_EQ(built(texts, t), a.text);
}

TEST(LeaseTexts, ATextUnlikeItsReferenceIsKeptWhole) {
  LeaseTexts texts;
  const Text a = lease(1, "5");
  texts.store(a.text, a.rvPos, a.rvLen, a.renewPos, kRenewLen);
  // Same length, every byte else different.
  Text b = a;
  for (std::size_t i = 0; i < b.text.size(); ++i)
    if ((i < b.rvPos || i >= b.rvPos + b.rvLen) && (i < b.renewPos || i >= b.renewPos + kRenewLen)) b.text[i] ^= 0x20;
  const LeaseText t = texts.store(b.text, b.rvPos, b.rvLen, b.renewPos, kRenewLen);
  EXPECT_TRUE(t.whole);
  EXPECT_EQ(built(texts, t), b.text);
  // Same length, the renewTime somewhere else: whole too.
  Text c = lease(2, "5");
  c.renewPos -= 2;
  const LeaseText u = texts.store(c.text, c.rvPos, c.rvLen, c.renewPos, kRenewLen);
  EXPECT_TRUE(u.whole);
  EXPECT_EQ(built(texts, u), c.text);
}

}  // namespace
}  // namespace cpscale::workloads
