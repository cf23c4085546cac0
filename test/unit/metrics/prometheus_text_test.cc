#include "sim/metrics/prometheus_text.h"

#include <gtest/gtest.h>

#include <cctype>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

namespace cpscale::metrics {
namespace {

std::string readFixture(const std::string& name) {
  std::ifstream in(std::string(CPSCALE_METRICS_FIXTURES) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "missing fixture " << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ParseResult parseOk(std::string_view body, const FamilyFilter& keep = {}) {
  ParseResult r = parsePrometheusText(body, keep);
  EXPECT_TRUE(r.ok()) << (r.error ? r.error->describe() : "");
  return r;
}

const MetricFamily& family(const ParseResult& r, std::string_view name) {
  auto it = r.families.find(name);
  if (it == r.families.end()) throw std::runtime_error("no family " + std::string(name));
  return it->second;
}

TEST(PrometheusText, CounterGaugeUntypedWithHelp) {
  auto r = parseOk(
      "# HELP a_total Requests\\\\served\\nso far.\n"
      "# TYPE a_total counter\n"
      "a_total{code=\"200\",verb=\"GET\"} 7\n"
      "a_total{verb=\"PUT\",code=\"409\"} 1e3\n"
      "# TYPE g gauge\n"
      "g 3.5\n"
      "loose 1 1700000000000\n");
  const MetricFamily& a = family(r, "a_total");
  EXPECT_EQ(a.type, MetricType::kCounter);
  EXPECT_EQ(a.help, "Requests\\served\nso far.");
  ASSERT_EQ(a.samples.size(), 2u);
  // Labels come out sorted whatever order they were written in.
  EXPECT_EQ(a.samples[1].labels, (Labels{{"code", "409"}, {"verb", "PUT"}}));
  EXPECT_EQ(a.samples[1].value, 1000);
  EXPECT_EQ(family(r, "g").type, MetricType::kGauge);
  EXPECT_EQ(family(r, "g").samples[0].value, 3.5);
  const MetricFamily& loose = family(r, "loose");
  EXPECT_EQ(loose.type, MetricType::kUntyped);
  EXPECT_EQ(loose.samples[0].timestampMs, 1700000000000);
  EXPECT_FALSE(family(r, "g").samples[0].timestampMs.has_value());
}

TEST(PrometheusText, EscapedLabelValues) {
  auto r = parseOk("m{path=\"C:\\\\dir\",msg=\"say \\\"hi\\\"\\nbye\",empty=\"\",} 1\n");
  const Labels& l = family(r, "m").samples[0].labels;
  EXPECT_EQ(labelValue(l, "path"), "C:\\dir");
  EXPECT_EQ(labelValue(l, "msg"), "say \"hi\"\nbye");
  EXPECT_EQ(labelValue(l, "empty"), "");
  EXPECT_EQ(l.size(), 3u);
}

TEST(PrometheusText, SpecialValues) {
  auto r = parseOk("a NaN\nb +Inf\nc -Inf\nd -0.5\ne +12\nf 1.5e-3 -42\n");
  EXPECT_TRUE(std::isnan(family(r, "a").samples[0].value));
  EXPECT_EQ(family(r, "b").samples[0].value, HUGE_VAL);
  EXPECT_EQ(family(r, "c").samples[0].value, -HUGE_VAL);
  EXPECT_EQ(family(r, "d").samples[0].value, -0.5);
  EXPECT_EQ(family(r, "e").samples[0].value, 12);
  EXPECT_EQ(family(r, "f").samples[0].timestampMs, -42);
}

TEST(PrometheusText, HistogramAndSummaryGroupSuffixedSamples) {
  auto r = parseOk(
      "# TYPE h histogram\n"
      "h_bucket{le=\"0.1\"} 1\n"
      "h_bucket{le=\"1\"} 3\n"
      "h_bucket{le=\"+Inf\"} 4\n"
      "h_sum 2.5\n"
      "h_count 4\n"
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 0.2\n"
      "s{quantile=\"0.99\"} NaN\n"
      "s_sum 1\n"
      "s_count 5\n");
  const MetricFamily& h = family(r, "h");
  EXPECT_EQ(h.type, MetricType::kHistogram);
  ASSERT_EQ(h.samples.size(), 5u);
  EXPECT_EQ(h.samples[2].name, "h_bucket");
  EXPECT_EQ(labelValue(h.samples[2].labels, "le"), "+Inf");
  EXPECT_EQ(h.samples[4].name, "h_count");
  const MetricFamily& s = family(r, "s");
  EXPECT_EQ(s.type, MetricType::kSummary);
  EXPECT_EQ(s.samples.size(), 4u);
  EXPECT_FALSE(r.families.contains("h_bucket"));
  EXPECT_FALSE(r.families.contains("s_sum"));
}

TEST(PrometheusText, LenientWhereReferenceParsersAre) {
  auto r = parseOk(
      "\n"
      "# just a comment\n"
      "#\n"
      "   \t\n"
      "a{x=\"1\"} 1\r\n"
      "b 2\n"
      "a{x=\"2\"} 3");  // non-contiguous family, no final newline
  EXPECT_EQ(family(r, "a").samples.size(), 2u);
  EXPECT_EQ(family(r, "a").samples[1].value, 3);
}

TEST(PrometheusText, FilterDropsFamiliesButStillChecksThem) {
  FamilyFilter keepH = [](std::string_view n) { return n == "h"; };
  auto r = parseOk("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\nother 1\n", keepH);
  EXPECT_EQ(r.families.size(), 1u);
  EXPECT_EQ(family(r, "h").samples.size(), 2u);
  ParseResult bad = parsePrometheusText("other{x=\"1} 1\n", keepH);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->line, 1u);
}

struct Malformed {
  const char* body;
  std::size_t line;
  const char* mentions;
};

class PrometheusTextMalformed : public ::testing::TestWithParam<Malformed> {};

TEST_P(PrometheusTextMalformed, NamesLineAndProblem) {
  const Malformed& m = GetParam();
  ParseResult r = parsePrometheusText(m.body);
  ASSERT_FALSE(r.ok()) << m.body;
  EXPECT_TRUE(r.families.empty());
  EXPECT_EQ(r.error->line, m.line) << r.error->describe();
  EXPECT_NE(r.error->describe().find(m.mentions), std::string::npos) << r.error->describe();
  EXPECT_EQ(r.error->describe().rfind("line " + std::to_string(m.line) + ": ", 0), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PrometheusTextMalformed,
    ::testing::Values(
        Malformed{"ok 1\n9bad 1\n", 2, "invalid metric name"}, Malformed{"a{x=\"1\" 2\n", 1, "expected ',' or '}'"},
        Malformed{"a 1\na{x=\"1\n", 2, "unterminated value of label 'x'"}, Malformed{"a{x=1} 2\n", 1, "expected '\"'"},
        Malformed{"a{x} 2\n", 1, "expected '='"}, Malformed{"a{1x=\"v\"} 2\n", 1, "invalid label name"},
        Malformed{"a{x=\"\\t\"} 2\n", 1, "invalid escape sequence '\\t'"},
        Malformed{"a{x=\"1\",x=\"2\"} 2\n", 1, "duplicate label 'x'"}, Malformed{"a{x=\"1\"\n", 1, "missing '}'"},
        Malformed{"a{\n", 1, "missing '}'"}, Malformed{"\n\na\n", 3, "missing value"},
        Malformed{"a one\n", 1, "invalid value 'one'"}, Malformed{"a 1 12.5\n", 1, "invalid timestamp '12.5'"},
        Malformed{"a 1 2 3\n", 1, "unexpected '3'"}, Malformed{"# TYPE a countr\n", 1, "unknown metric type 'countr'"},
        Malformed{"# TYPE a counter\n# TYPE a gauge\n", 2, "second TYPE line for a"},
        Malformed{"# HELP a x\n# HELP a y\n", 2, "second HELP line for a"},
        Malformed{"a 1\n# TYPE a counter\n", 2, "TYPE line for a after its samples"},
        Malformed{"# TYPE\n", 1, "TYPE line without a metric name"},
        Malformed{"# TYPE a counter extra\n", 1, "unexpected 'extra'"},
        Malformed{"# TYPE h histogram\nh_bucket 1\n", 2, "without an 'le' label"},
        Malformed{"# TYPE h histogram\nh_bucket{le=\"big\"} 1\n", 2, "non-numeric le='big'"},
        Malformed{"# TYPE h histogram\nh 1\n", 2, "must end in _bucket, _sum or _count"},
        Malformed{"# TYPE s summary\ns 1\n", 2, "without a 'quantile' label"},
        Malformed{"# TYPE s summary\ns{quantile=\"p50\"} 1\n", 2, "non-numeric quantile='p50'"},
        Malformed{"a ++1\n", 1, "invalid value"}, Malformed{"{x=\"1\"} 1\n", 1, "invalid metric name"}),
    // Named by what the error must say, not by the case's bytes (its pointers would
    // change the test's name from one build to the next).
    [](const ::testing::TestParamInfo<Malformed>& info) {
      std::string name = std::to_string(info.index) + "_";
      for (const char* c = info.param.mentions; *c != '\0'; ++c)
        name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
      return name;
    });

// Real scrapes of the pinned kube-apiserver and etcd (see test/fixtures/metrics/README.md).
TEST(PrometheusTextFixtures, KubeApiserver) {
  std::string body = readFixture("kube-apiserver.prom");
  ParseResult r = parseOk(body);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r.families.size(), 100u);
  EXPECT_EQ(family(r, "apiserver_request_total").type, MetricType::kCounter);
  EXPECT_EQ(family(r, "go_memstats_heap_inuse_bytes").type, MetricType::kGauge);
  EXPECT_EQ(family(r, "process_resident_memory_bytes").type, MetricType::kGauge);
  EXPECT_EQ(family(r, "apiserver_resource_objects").type, MetricType::kGauge);
  EXPECT_EQ(family(r, "watch_cache_capacity").type, MetricType::kGauge);
  const MetricFamily& d = family(r, "apiserver_request_duration_seconds");
  ASSERT_EQ(d.type, MetricType::kHistogram);

  // Every label set's buckets are cumulative and end at +Inf with _count.
  std::map<Labels, std::vector<std::pair<double, double>>> series;
  std::map<Labels, double> counts;
  for (const Sample& s : d.samples) {
    Labels rest;
    std::string le;
    for (const Label& l : s.labels) {
      if (l.name == "le")
        le = l.value;
      else
        rest.push_back(l);
    }
    if (s.name == "apiserver_request_duration_seconds_bucket") {
      series[rest].push_back({le == "+Inf" ? HUGE_VAL : std::stod(le), s.value});
    } else if (s.name == "apiserver_request_duration_seconds_count") {
      counts[rest] = s.value;
    }
  }
  ASSERT_FALSE(series.empty());
  for (const auto& [labels, buckets] : series) {
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_LT(buckets[i - 1].first, buckets[i].first);
      EXPECT_LE(buckets[i - 1].second, buckets[i].second);
    }
    EXPECT_EQ(buckets.back().first, HUGE_VAL);
    EXPECT_EQ(buckets.back().second, counts[labels]);
  }
  // Label values with escapes survive: kube-apiserver's HELP lines carry quotes.
  bool sawWriteVerb = false;
  for (const Sample& s : family(r, "apiserver_request_total").samples) {
    sawWriteVerb = sawWriteVerb || labelValue(s.labels, "verb") == "POST";
  }
  EXPECT_TRUE(sawWriteVerb);
}

TEST(PrometheusTextFixtures, Etcd) {
  ParseResult r = parseOk(readFixture("etcd.prom"));
  ASSERT_TRUE(r.ok());
  for (const char* name :
       {"etcd_server_proposals_committed_total", "etcd_server_has_leader", "etcd_mvcc_db_total_size_in_bytes",
        "etcd_mvcc_db_total_size_in_use_in_bytes", "etcd_debugging_mvcc_keys_total"}) {
    ASSERT_TRUE(r.families.contains(name)) << name;
    EXPECT_EQ(family(r, name).samples.size(), 1u) << name;
  }
  EXPECT_EQ(family(r, "etcd_server_has_leader").samples[0].value, 1);
  EXPECT_EQ(family(r, "etcd_disk_wal_fsync_duration_seconds").type, MetricType::kHistogram);
}

TEST(PrometheusTextFixtures, EscapesInFixture) {
  // The fixture file holds one synthetic family with every escape, appended to the
  // real scrape, so the real and the tricky are parsed in one body.
  ParseResult r = parseOk(readFixture("kube-apiserver.prom"));
  const MetricFamily& e = family(r, "cpscale_fixture_escapes");
  EXPECT_EQ(labelValue(e.samples[0].labels, "v"), "a\\b\"c\nd");
}

// Not a pass/fail test: prints the parser's throughput on the real apiserver scrape,
// parsed as the Scraper does (a few families kept, the rest checked and dropped) and
// in full.
TEST(PrometheusTextFixtures, Throughput) {
  std::string flat = readFixture("kube-apiserver.prom");
  auto measure = [&](const FamilyFilter& keep) {
    const int kRounds = static_cast<int>((40u << 20) / flat.size()) + 1;  // ~40 MB in all
    auto start = std::chrono::steady_clock::now();
    std::size_t samples = 0;
    for (int i = 0; i < kRounds; ++i) {
      ParseResult r = parsePrometheusText(flat, keep);
      EXPECT_TRUE(r.ok());
      for (auto& [n, f] : r.families) samples += f.samples.size();
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::make_pair(static_cast<double>(flat.size()) * kRounds / s / 1e6, samples / kRounds);
  };
  auto [filteredMBs, keptSamples] = measure(
      [](std::string_view n) { return n.starts_with("apiserver_request") || n.starts_with("go_memstats_heap"); });
  auto [fullMBs, allSamples] = measure({});
  std::printf("parser throughput on a %.2f MB scrape: %.0f MB/s keeping %zu samples, %.0f MB/s keeping all %zu\n",
              static_cast<double>(flat.size()) / 1e6, filteredMBs, keptSamples, fullMBs, allSamples);
  RecordProperty("filtered_MBps", std::to_string(filteredMBs));
  RecordProperty("full_MBps", std::to_string(fullMBs));
  EXPECT_GT(fullMBs, 0);
}

}  // namespace
}  // namespace cpscale::metrics
