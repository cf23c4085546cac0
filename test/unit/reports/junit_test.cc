#include "reports/junit.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "test/support/sample_result.h"

namespace cpscale::reports {
namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

TEST(JunitTest, OneCasePerGatePlusRunCompleted) {
  std::string xml = renderJunit(result::testing::sampleResult());
  EXPECT_EQ(count(xml, "<testsuite "), 1);
  EXPECT_EQ(count(xml, "<testcase "), 4);
  EXPECT_EQ(count(xml, "<failure "), 2);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"2\""), std::string::npos);
  EXPECT_NE(
      xml.find("<testcase classname=\"cpscale.mixed-smoke\" name=\"run completed\" time=\"60.000\">\n    </testcase>"),
      std::string::npos);
  // Gate text is escaped in the name; the failure carries measured, threshold and reason.
  EXPECT_NE(xml.find("name=\"write_qps{resource=leases} &lt;= 600\""), std::string::npos);
  EXPECT_NE(xml.find("<failure type=\"GateFailed\" message=\"measured 12.3 ms, threshold &lt;= 10ms: failed\">"),
            std::string::npos);
  EXPECT_NE(xml.find("message=\"measured unavailable, threshold &gt;= 50%: failed (etcd_lease_proposal_share is "
                     "unavailable: leases share an etcd with everything else)\""),
            std::string::npos);
  EXPECT_NE(xml.find("<system-out>measured 100/s, threshold &lt;= 600: passed</system-out>"), std::string::npos);
}

TEST(JunitTest, RunThatDidNotCompleteFails) {
  result::RunResult r = result::testing::sampleResult();
  r.gates.clear();
  r.status = result::RunStatus::kFailed;
  r.statusDetail = "apiserver <0> exited & \"etcd\" too";
  std::string xml = renderJunit(r);
  EXPECT_NE(xml.find("tests=\"1\" failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("message=\"run failed: apiserver &lt;0&gt; exited &amp; &quot;etcd&quot; too\""),
            std::string::npos);
}

TEST(JunitTest, EscapesMarkupAndDropsCharactersXmlForbids) {
  EXPECT_EQ(xmlEscape("a<b>&\"c\"'"), "a&lt;b&gt;&amp;&quot;c&quot;&apos;");
  EXPECT_EQ(xmlEscape(std::string("x\x01y\tz\n")), "x\xEF\xBF\xBDy\tz\n");
}

// The real check a CI system makes: an XML parser accepts the file.
TEST(JunitTest, XmllintAcceptsIt) {
  if (std::system("command -v xmllint >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "xmllint not installed (Debian libxml2-utils); run `make deps`";
  result::RunResult r = result::testing::sampleResult();
  r.gates[0].gate.text = "odd <gate> & \"quotes\" \x02";
  r.status = result::RunStatus::kInterrupted;
  auto path = std::filesystem::temp_directory_path() / ("cpscale-junit-" + std::to_string(::getpid()) + ".xml");
  std::ofstream(path) << renderJunit(r);
  int rc = std::system(("xmllint --noout " + path.string()).c_str());
  std::filesystem::remove(path);
  EXPECT_EQ(rc, 0);
}

}  // namespace
}  // namespace cpscale::reports
