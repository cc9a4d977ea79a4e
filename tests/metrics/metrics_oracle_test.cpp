// Metric values against numpy: tests/data/metrics/gen_metrics_cases.py computed every expected
// number (float64) from the same inputs, independently of this code.
#include "shardgate/fidelity.h"
#include "shardgate/io.h"
#include "shardgate/metrics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace sg {
namespace {

using Json = nlohmann::json;

Json load_cases() {
  auto text = read_file(SG_TEST_DATA_DIR "/metrics/metrics_cases.json");
  EXPECT_TRUE(text.is_ok()) << text.status().to_string();
  return text.is_ok() ? Json::parse(*text) : Json::object();
}

std::vector<double> doubles(const Json& j) { return j.get<std::vector<double>>(); }

// Relative tolerance: both sides are float64 computations of the same formula.
void expect_close(double actual, double expected, const std::string& what) {
  const double tol = 1e-9 * std::max(1.0, std::fabs(expected));
  EXPECT_NEAR(actual, expected, tol) << what;
}

TEST(MetricsOracle, VectorMetricsMatchNumpy) {
  const Json cases = load_cases();
  ASSERT_GE(cases["vectors"].size(), 10u);
  for (const Json& c : cases["vectors"]) {
    const std::string name = c["name"];
    const auto cand = doubles(c["candidate"]), ref = doubles(c["reference"]);
    const Json& e = c["expected"];
    expect_close(cosine_similarity(cand, ref), e["cosine"], name + " cosine");
    expect_close(norm_ratio(cand, ref), e["norm_ratio"], name + " norm_ratio");
    expect_close(relative_l2(cand, ref), e["rel_l2"], name + " rel_l2");
    expect_close(max_abs_error(cand, ref), e["max_abs"], name + " max_abs");
    expect_close(snr_db(cand, ref), e["snr_db"], name + " snr_db");
    if (c["logits"].get<bool>()) {
      const int64_t k = c["topk"];
      const RowMetricValues m = compute_row_metrics(cand, ref, true, k);
      ASSERT_TRUE(m.top1 && m.topk_overlap && m.kl) << name;
      EXPECT_EQ(*m.top1, e["top1"].get<double>()) << name;
      EXPECT_EQ(*m.topk_overlap, e["topk_overlap"].get<double>()) << name;
      // KL is a sum of small differences of logs: compare with an absolute floor.
      EXPECT_NEAR(*m.kl, std::max(0.0, e["kl"].get<double>()), 1e-9 + 1e-9 * e["kl"].get<double>())
          << name;
    }
  }
}

TEST(MetricsOracle, PercentileMatchesNumpyLinear) {
  const Json cases = load_cases();
  ASSERT_FALSE(cases["percentiles"].empty());
  for (const Json& c : cases["percentiles"]) {
    expect_close(percentile(doubles(c["values"]), c["p"]), c["expected"],
                 "p" + c["p"].dump() + " of " + std::to_string(c["values"].size()));
  }
}

TEST(MetricsOracle, PerPositionRowsMatchNumpy) {
  const Json cases = load_cases();
  ASSERT_GE(cases["tensors"].size(), 5u);
  for (const Json& c : cases["tensors"]) {
    const std::string name = c["name"];
    const Shape shape = c["shape"].get<Shape>();
    std::vector<float> cf, rf;
    for (double v : doubles(c["candidate"])) cf.push_back(static_cast<float>(v));
    for (double v : doubles(c["reference"])) rf.push_back(static_cast<float>(v));
    // fp32 storage: compare against numpy on the same float32-rounded values is not exact, so
    // build fp64 tensors through fp32 only when the case says so; here we use the doubles.
    auto cand = Tensor::zeros(DType::kF64, shape);
    auto ref = Tensor::zeros(DType::kF64, shape);
    ASSERT_TRUE(cand.is_ok() && ref.is_ok());
    const auto cd = doubles(c["candidate"]), rd = doubles(c["reference"]);
    std::copy(cd.begin(), cd.end(), cand->mutable_data<double>());
    std::copy(rd.begin(), rd.end(), ref->mutable_data<double>());
    CheckIdentity id;
    id.checkpoint = name;
    id.kind = c["kind"];
    std::optional<int64_t> pa;
    if (!c["position_axis"].is_null()) pa = c["position_axis"].get<int64_t>();
    MetricOptions opt;
    opt.topk = c["topk"];
    auto check = compare_tensors(id, *cand, *ref, pa, opt);
    ASSERT_TRUE(check.is_ok()) << check.status().to_string();
    ASSERT_EQ(check->rows.size(), c["rows"].size()) << name;
    for (size_t r = 0; r < check->rows.size(); ++r) {
      const Json& e = c["rows"][r];
      const RowResult& row = check->rows[r];
      EXPECT_EQ(row.position, e["position"].is_null() ? -1 : e["position"].get<int64_t>());
      for (const char* m : {"cosine", "norm_ratio", "rel_l2", "max_abs", "snr_db", "top1",
                            "topk_overlap", "kl"}) {
        const auto metric = metric_from_name(m);
        ASSERT_TRUE(metric);
        if (!e.contains(m)) {
          EXPECT_FALSE(row.value(*metric).has_value()) << name << " " << m;
          continue;
        }
        ASSERT_TRUE(row.value(*metric).has_value()) << name << " " << m;
        const double want = std::string(m) == "kl" ? std::max(0.0, e[m].get<double>()) : e[m].get<double>();
        EXPECT_NEAR(*row.value(*metric), want, 1e-9 * std::max(1.0, std::fabs(want)))
            << name << " row " << r << " " << m;
      }
    }
  }
}

}  // namespace
}  // namespace sg
