// Opens report.html in a real headless Chromium: the page must lay out and paint its
// charts, not merely be well-formed text.
#include <png.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "reports/capacity_report.h"
#include "reports/html.h"
#include "reports/run_outputs.h"
#include "sim/result/result.h"
#include "test/support/capacity_sample.h"
#include "test/support/sample_result.h"

namespace cpscale::reports {
namespace {

namespace fs = std::filesystem;

std::string chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (std::system(("command -v " + std::string(c) + " >/dev/null 2>&1").c_str()) == 0) return c;
  return "";
}

// Flags that keep a headless run hermetic: no profile reuse, no network chatter.
std::string chromiumCommand(const std::string& bin, const fs::path& profile) {
  return bin +
         " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking"
         " --disable-component-update --disable-sync --disable-dev-shm-usage --hide-scrollbars"
         " --user-data-dir=" +
         profile.string();
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 65536> buf;
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  ::pclose(p);
  return out;
}

struct Image {
  png_uint_32 width = 0, height = 0;
  std::size_t distinctColours = 0;
  double nonBackground = 0;  // share of pixels that differ from the top-left pixel
};

Image decode(const fs::path& file) {
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  Image out;
  if (!png_image_begin_read_from_file(&img, file.c_str())) return out;
  img.format = PNG_FORMAT_RGB;
  std::vector<png_byte> px(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, px.data(), 0, nullptr)) return out;
  out.width = img.width;
  out.height = img.height;
  std::set<std::uint32_t> colours;
  std::size_t differ = 0, n = px.size() / 3;
  const std::uint32_t first = (std::uint32_t{px[0]} << 16) | (std::uint32_t{px[1]} << 8) | px[2];
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t c = (std::uint32_t{px[3 * i]} << 16) | (std::uint32_t{px[3 * i + 1]} << 8) | px[3 * i + 2];
    colours.insert(c);
    differ += c != first;
  }
  out.distinctColours = colours.size();
  out.nonBackground = static_cast<double>(differ) / static_cast<double>(n);
  return out;
}

TEST(ChromiumRenderTest, ReportRendersWithEveryChart) {
  std::string bin = chromium();
  if (bin.empty()) GTEST_SKIP() << "chromium is not installed; run `make deps`";
  fs::path dir = fs::temp_directory_path() / ("cpscale-chromium-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  result::RunResult r = result::testing::sampleResult();
  writeRunOutputs(r, dir / "run");
  fs::path html = fs::absolute(dir / "run" / std::string(result::kHtmlFile));

  std::string dom =
      run(chromiumCommand(bin, dir / "profile-dom") + " --dump-dom file://" + html.string() + " 2>/dev/null");
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "chromium printed no DOM";
  // The parsed DOM still holds every chart's <svg> with drawn series: nothing was
  // dropped as invalid markup.
  for (std::string id : {std::string(kChartWriteQps), std::string(kChartLeaseShare), std::string(kChartHeap),
                         std::string(kChartObjects), latencyChartId("leases", "PUT")}) {
    auto at = dom.find("id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    std::string svg = dom.substr(at, dom.find("</svg>", at) - at);
    EXPECT_NE(svg.find("class=\"series"), std::string::npos) << id;
  }

  fs::path png = dir / "report.png";
  if (const char* keep = std::getenv("CPSCALE_KEEP_SCREENSHOT")) png = keep;
  run(chromiumCommand(bin, dir / "profile-shot") + " --window-size=1280,4000 --screenshot=" + png.string() +
      " file://" + html.string() + " 2>/dev/null");
  ASSERT_TRUE(fs::exists(png)) << "chromium wrote no screenshot";
  EXPECT_GT(fs::file_size(png), 50'000u);
  Image img = decode(png);
  EXPECT_EQ(img.width, 1280u);
  EXPECT_EQ(img.height, 4000u);
  // Text, charts and their palette: a blank or single-colour page has a handful.
  EXPECT_GT(img.distinctColours, 200u);
  EXPECT_GT(img.nonBackground, 0.05);
  fs::remove_all(dir);
}

TEST(ChromiumRenderTest, CapacityRunRendersItsStepCharts) {
  std::string bin = chromium();
  if (bin.empty()) GTEST_SKIP() << "chromium is not installed; run `make deps`";
  fs::path dir = fs::temp_directory_path() / ("cpscale-chromium-capacity-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  writeRunOutputs(result::testing::capacityResult(), dir / "run");
  fs::path html = fs::absolute(dir / "run" / std::string(result::kHtmlFile));
  std::string dom =
      run(chromiumCommand(bin, dir / "profile-dom") + " --dump-dom file://" + html.string() + " 2>/dev/null");
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "chromium printed no DOM";
  ASSERT_NE(dom.find("<section id=\"capacity\">"), std::string::npos);
  // Every chart against the knob kept its line, its points and the break marker.
  for (std::string id : {capacityGateChartId(1), std::string(kChartCapacityPressure), std::string(kChartCapacityHeap),
                         std::string(kChartCapacityClientP99)}) {
    auto at = dom.find("id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    std::string svg = dom.substr(at, dom.find("</svg>", at) - at);
    EXPECT_NE(svg.find("class=\"series line\""), std::string::npos) << id;
    EXPECT_NE(svg.find("class=\"point held\""), std::string::npos) << id;
    EXPECT_NE(svg.find("class=\"point not-held\""), std::string::npos) << id;
    EXPECT_NE(svg.find("class=\"break-mark\""), std::string::npos) << id;
  }
  // The capacity index is a page of the same family: it parses with its table whole.
  writeCapacityIndexOutputs(result::testing::capacityIndex(), dir / "index");
  fs::path index = fs::absolute(dir / "index" / std::string(kCapacityIndexHtmlFile));
  std::string idom =
      run(chromiumCommand(bin, dir / "profile-index") + " --dump-dom file://" + index.string() + " 2>/dev/null");
  ASSERT_NE(idom.find("</html>"), std::string::npos) << "chromium printed no DOM for the index";
  EXPECT_NE(idom.find("id=\"measured-on\""), std::string::npos);
  EXPECT_NE(idom.find("<a href=\"classic-ha/node/result.json\">"), std::string::npos);
  if (const char* keep = std::getenv("CPSCALE_KEEP_CAPACITY_SCREENSHOT")) {
    run(chromiumCommand(bin, dir / "profile-shot") + " --window-size=1280,2400 --screenshot=" + std::string(keep) +
        " file://" + html.string() + " 2>/dev/null");
    EXPECT_TRUE(fs::exists(keep));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cpscale::reports
