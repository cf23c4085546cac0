#include "sim/kube/watch.h"

#include <gtest/gtest.h>

#include <vector>

namespace cpscale::kube {
namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Lease","metadata":{"name":"a","resourceVersion":"1"}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Lease","metadata":{"name":"a","resourceVersion":"2"},"spec":{"holderIdentity":"x\ny"}}})"
    "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Lease","metadata":{"resourceVersion":"3"}}})"
    "\n"
    R"({"type":"DELETED","object":{"kind":"Lease","metadata":{"name":"a","resourceVersion":"4"}}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})"
    "\n";

std::vector<std::string> summarize(const std::vector<WatchEvent>& evs) {
  std::vector<std::string> out;
  for (const auto& e : evs) {
    out.push_back(std::string(toString(e.type)) + ":" +
                  e.object.value("/metadata/resourceVersion"_json_pointer, std::string(e.object.value("reason", ""))));
  }
  return out;
}

const std::vector<std::string> kWant{"ADDED:1", "MODIFIED:2", "BOOKMARK:3", "DELETED:4", "ERROR:Expired"};

TEST(WatchStreamDecoder, WholeStreamInOneChunk) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> evs;
  ASSERT_TRUE(d.feed(kStream, [&](const WatchEvent& e) { evs.push_back(e); }));
  EXPECT_EQ(summarize(evs), kWant);
  EXPECT_EQ(d.events(), 5u);
  EXPECT_EQ(d.bufferedBytes(), 0u);
  // The escaped newline inside a string is not a line break.
  EXPECT_EQ(evs[1].object["spec"]["holderIdentity"], "x\ny");
}

TEST(WatchStreamDecoder, SplitAtEveryPossibleBoundary) {
  for (std::size_t cut = 0; cut <= kStream.size(); ++cut) {
    WatchStreamDecoder d;
    std::vector<WatchEvent> evs;
    auto sink = [&](const WatchEvent& e) { evs.push_back(e); };
    ASSERT_TRUE(d.feed(std::string_view(kStream).substr(0, cut), sink));
    ASSERT_TRUE(d.feed(std::string_view(kStream).substr(cut), sink));
    ASSERT_EQ(summarize(evs), kWant) << "cut at " << cut;
  }
}

TEST(WatchStreamDecoder, ByteByByte) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> evs;
  for (char c : kStream) ASSERT_TRUE(d.feed(std::string_view(&c, 1), [&](const WatchEvent& e) { evs.push_back(e); }));
  EXPECT_EQ(summarize(evs), kWant);
}

TEST(WatchStreamDecoder, FinalLineWithoutNewlineNeedsFinish) {
  WatchStreamDecoder d;
  std::vector<WatchEvent> evs;
  auto sink = [&](const WatchEvent& e) { evs.push_back(e); };
  ASSERT_TRUE(d.feed("{\"type\":\"ADDED\",\"object\":{}}\r\n{\"type\":\"DELETED\",\"object\":{}}", sink));
  EXPECT_EQ(evs.size(), 1u);
  ASSERT_TRUE(d.finish(sink));
  ASSERT_EQ(evs.size(), 2u);
  EXPECT_EQ(evs[1].type, WatchEventType::kDeleted);
}

TEST(WatchStreamDecoder, StatusBodyIsKeptNotFailed) {
  WatchStreamDecoder d;
  int n = 0;
  ASSERT_TRUE(d.feed(R"({"kind":"Status","code":403,"reason":"Forbidden"})"
                     "\n",
                     [&](const WatchEvent&) { ++n; }));
  EXPECT_EQ(n, 0);
  ASSERT_TRUE(d.nonEvent().has_value());
  EXPECT_EQ((*d.nonEvent())["reason"], "Forbidden");
}

TEST(WatchStreamDecoder, MalformedLineStopsTheStream) {
  WatchStreamDecoder d;
  int n = 0;
  auto sink = [&](const WatchEvent&) { ++n; };
  EXPECT_FALSE(d.feed("{\"type\":\"ADDED\",\"object\":{}}\nnot json\n{\"type\":\"ADDED\",\"object\":{}}\n", sink));
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(d.error().empty());
  EXPECT_FALSE(d.feed("{\"type\":\"ADDED\",\"object\":{}}\n", sink));  // stays failed
  EXPECT_EQ(n, 1);
}

TEST(WatchStreamDecoder, UnknownTypeIsAnError) {
  WatchStreamDecoder d;
  EXPECT_FALSE(d.feed("{\"type\":\"RENAMED\",\"object\":{}}\n", [](const WatchEvent&) {}));
}

// A projection builds only the kept parts of each object: a kube-proxy's EndpointSlice
// stream keeps each endpoint's addresses and readiness, nothing of a Node's images.
TEST(WatchStreamDecoder, AProjectionKeepsOnlyTheNamedPartsAtTheirPlaces) {
  WatchStreamDecoder d({"/metadata/resourceVersion", "/metadata/annotations/k8s.io~1initial-events-end",
                        "/endpoints/*/addresses", "/endpoints/*/conditions/ready", "/code"});
  const std::string slice =
      R"({"type":"MODIFIED","object":{"kind":"EndpointSlice","metadata":{"name":"s","resourceVersion":"7",)"
      R"("labels":{"a":"b"},"managedFields":[{"manager":"x","fieldsV1":{"f:a":{}}}]},"addressType":"IPv4",)"
      R"("endpoints":[{"addresses":["10.128.0.1"],"conditions":{"ready":true,"serving":true},"nodeName":"n0"},)"
      R"({"addresses":["10.128.0.2"],"conditions":{"ready":false},"targetRef":{"kind":"Pod","name":"p"}}],)"
      R"("ports":[{"port":8080}]}})"
      "\n"
      R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":"9","annotations":)"
      R"({"k8s.io/initial-events-end":"true","other":"x"}}}})"
      "\n"
      R"({"type":"ADDED","object":{"kind":"Service","spec":{"clusterIP":"10.0.0.9"}}})"
      "\n"
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
      "\n";
  std::vector<WatchEvent> evs;
  ASSERT_TRUE(d.feed(slice, [&](const WatchEvent& e) { evs.push_back(e); }));
  ASSERT_EQ(evs.size(), 4u);
  EXPECT_EQ(evs[0].type, WatchEventType::kModified);
  EXPECT_EQ(evs[0].object, nlohmann::json::parse(R"({"metadata":{"resourceVersion":"7"},"endpoints":[)"
                                                 R"({"addresses":["10.128.0.1"],"conditions":{"ready":true}},)"
                                                 R"({"addresses":["10.128.0.2"],"conditions":{"ready":false}}]})"));
  EXPECT_EQ(evs[1].object,
            nlohmann::json::parse(
                R"({"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}})"));
  EXPECT_EQ(evs[2].object, nlohmann::json::object());  // nothing kept: an empty object, not null
  // An ERROR's Status is decoded whole, as without a projection.
  EXPECT_EQ(evs[3].object["message"], "too old");
  EXPECT_EQ(evs[3].object["code"], 410);
  // Invalid JSON is still refused.
  EXPECT_FALSE(d.feed("{\"type\":\"ADDED\",\"object\":{\"a\":[}\n", [](const WatchEvent&) {}));
}

// N kube-proxies get each EndpointSlice change as the same line: the second decoder with
// the same projection on this thread copies the first one's event instead of parsing it,
// and gets exactly what parsing would give. A different projection, or a line that
// differs in one byte, is parsed.
TEST(WatchStreamDecoder, AnIdenticalLineIsDecodedOncePerThreadAndProjection) {
  std::string endpoints;
  for (int i = 0; i < 20; ++i) {
    endpoints += std::string(i ? "," : "") + R"({"addresses":["10.128.0.)" + std::to_string(i) +
                 R"("],"conditions":{"ready":true},"nodeName":"node-)" + std::to_string(i) + R"("})";
  }
  const std::string line = R"({"type":"MODIFIED","object":{"kind":"EndpointSlice","metadata":{"name":"s",)"
                           R"("resourceVersion":"70"},"endpoints":[)" +
                           endpoints + "]}}\n";
  ASSERT_GE(line.size(), 600u);  // long enough to be shared
  const WatchProjection proxy = {"/metadata/resourceVersion", "/endpoints/*/addresses"};
  auto decodeWith = [&](WatchStreamDecoder& d, const std::string& text) {
    std::vector<WatchEvent> evs;
    EXPECT_TRUE(d.feed(text, [&](const WatchEvent& e) { evs.push_back(e); }));
    EXPECT_EQ(evs.size(), 1u);
    return evs.empty() ? nlohmann::json() : evs[0].object;
  };
  WatchStreamDecoder first(proxy), second(proxy), whole, otherView({"/metadata/resourceVersion"});
  const nlohmann::json a = decodeWith(first, line);
  EXPECT_EQ(first.reused(), 0u);
  const nlohmann::json b = decodeWith(second, line);
  EXPECT_EQ(second.reused(), 1u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(b["endpoints"].size(), 20u);
  EXPECT_FALSE(b["endpoints"][0].contains("nodeName"));

  // Without a projection, or with another one, the same line is parsed (once each).
  EXPECT_EQ(decodeWith(whole, line)["endpoints"][3]["nodeName"], "node-3");
  EXPECT_EQ(whole.reused(), 0u);
  EXPECT_EQ(decodeWith(otherView, line), nlohmann::json::parse(R"({"metadata":{"resourceVersion":"70"}})"));
  EXPECT_EQ(otherView.reused(), 0u);

  // One byte changed (the next resourceVersion, same length): parsed, and its own value.
  std::string next = line;
  next.replace(next.find("\"70\""), 4, "\"71\"");
  WatchStreamDecoder third(proxy);
  EXPECT_EQ(decodeWith(third, next)["metadata"]["resourceVersion"], "71");
  EXPECT_EQ(third.reused(), 0u);
}

}  // namespace
}  // namespace cpscale::kube
