// The fixed metric rules (README.md, Metrics) on hand-made vectors whose answers are known exactly:
// zero vectors, one zero vector, identical vectors, ties in argmax / top-k, percentile edges.
#include "shardgate/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sg {
namespace {

const std::vector<double> kZero = {0, 0, 0, 0};
const std::vector<double> kA = {1, 2, 3, 4};
const std::vector<double> kB = {4, 3, 2, 1};

TEST(MetricRules, BothZeroIsDegenerate) {
  EXPECT_TRUE(std::isnan(cosine_similarity(kZero, kZero)));
  EXPECT_TRUE(std::isnan(norm_ratio(kZero, kZero)));
  EXPECT_EQ(relative_l2(kZero, kZero), 0.0);
  const RowMetricValues m = compute_row_metrics(kZero, kZero, true, 2);
  EXPECT_TRUE(m.degenerate);
  EXPECT_FALSE(m.top1.has_value());
}

TEST(MetricRules, ExactlyOneZeroGivesCosineZero) {
  EXPECT_EQ(cosine_similarity(kZero, kA), 0.0);
  EXPECT_EQ(cosine_similarity(kA, kZero), 0.0);
  // candidate zero: the norm ratio is 0, the relative error 1, the SNR 0 dB.
  EXPECT_EQ(norm_ratio(kZero, kA), 0.0);
  EXPECT_DOUBLE_EQ(relative_l2(kZero, kA), 1.0);
  EXPECT_DOUBLE_EQ(snr_db(kZero, kA), 0.0);
  // reference zero: the norm ratio and relative error are infinite, the SNR -inf.
  EXPECT_TRUE(std::isinf(norm_ratio(kA, kZero)) && norm_ratio(kA, kZero) > 0);
  EXPECT_TRUE(std::isinf(relative_l2(kA, kZero)));
  EXPECT_TRUE(std::isinf(snr_db(kA, kZero)) && snr_db(kA, kZero) < 0);
  const RowMetricValues m = compute_row_metrics(kA, kZero, false, 5);
  EXPECT_FALSE(m.degenerate);
  EXPECT_EQ(m.cosine, 0.0);
}

TEST(MetricRules, IdenticalVectors) {
  EXPECT_DOUBLE_EQ(cosine_similarity(kA, kA), 1.0);
  // Exactly 1, not within rounding: (1, 1) has Σ = 2 and √2·√2 = 2.0000000000000004, which made
  // its cosine with itself 0.9999999999999998 and failed --min-cosine 1 on identical tensors.
  const std::vector<double> ones = {1, 1};
  EXPECT_EQ(cosine_similarity(ones, ones), 1.0);
  EXPECT_EQ(cosine_similarity(kA, kA), 1.0);
  // Tiny vectors (Σ c·r underflows as a product) keep a cosine of 1 within rounding.
  const std::vector<double> tiny = {1e-160, 2e-160};
  EXPECT_NEAR(cosine_similarity(tiny, tiny), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(norm_ratio(kA, kA), 1.0);
  EXPECT_EQ(relative_l2(kA, kA), 0.0);
  EXPECT_EQ(max_abs_error(kA, kA), 0.0);
  EXPECT_TRUE(std::isinf(snr_db(kA, kA)) && snr_db(kA, kA) > 0);
}

TEST(MetricRules, KnownValues) {
  // cos(a, b) = 20 / 30
  EXPECT_DOUBLE_EQ(cosine_similarity(kA, kB), 20.0 / 30.0);
  EXPECT_DOUBLE_EQ(max_abs_error(kA, kB), 3.0);
  // ‖a − b‖² = 9 + 1 + 1 + 9 = 20, ‖b‖² = 30
  EXPECT_DOUBLE_EQ(relative_l2(kA, kB), std::sqrt(20.0 / 30.0));
  EXPECT_NEAR(snr_db(kA, kB), 10 * std::log10(30.0 / 20.0), 1e-12);
  const std::vector<double> neg = {-1, -2, -3, -4};
  EXPECT_DOUBLE_EQ(cosine_similarity(neg, kA), -1.0);
}

TEST(MetricRules, ArgmaxAndTopkTiesGoToLowerIndex) {
  const std::vector<double> x = {1, 5, 5, 2, 5};
  EXPECT_EQ(argmax(x), 1);
  EXPECT_EQ(topk_indices(x, 3), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(topk_indices(x, 10).size(), 5u);  // k clamped to the length
  const std::vector<double> y = {5, 1, 1, 1, 5};
  // topk(x, 2) = {1, 2}, topk(y, 2) = {0, 4}: no overlap
  EXPECT_EQ(topk_overlap(x, y, 2), 0.0);
  EXPECT_DOUBLE_EQ(topk_overlap(x, x, 2), 1.0);
}

TEST(MetricRules, KlIsZeroForShiftedLogitsAndFiniteForHugeOnes) {
  const std::vector<double> r = {1, 2, 3};
  const std::vector<double> c = {101, 102, 103};
  EXPECT_NEAR(kl_divergence_softmax(r, c), 0.0, 1e-12);
  const std::vector<double> huge = {1e4, -1e4, 0};
  const std::vector<double> huge2 = {-1e4, 1e4, 0};
  const double kl = kl_divergence_softmax(huge, huge2);
  EXPECT_TRUE(std::isfinite(kl));
  EXPECT_NEAR(kl, 2e4, 1e-6);  // p = (1, 0, 0); log p0 − log q0 = 0 − (−2e4)
}

TEST(MetricRules, BatchedLogitsRowsSplitIntoVectors) {
  // Two logits vectors of length 3 in one row: argmax agrees in the first only.
  const std::vector<double> ref = {0, 1, 9, 9, 1, 0};
  const std::vector<double> cand = {0, 1, 9, 0, 1, 9};
  const RowMetricValues m = compute_row_metrics(cand, ref, true, 1, 3);
  ASSERT_TRUE(m.top1.has_value());
  EXPECT_DOUBLE_EQ(*m.top1, 0.5);
  EXPECT_DOUBLE_EQ(*m.topk_overlap, 0.0);  // the minimum over the vectors
  // Cosine too: vector 0 equal (1), vector 1 (9,1,0)·(0,1,9) / 82 = 1/82; the concatenation's
  // 83/164 = 0.506 would hide the second vector.
  EXPECT_DOUBLE_EQ(m.cosine, 1.0 / 82.0);
}

TEST(MetricRules, PercentileEdges) {
  EXPECT_TRUE(std::isnan(percentile({}, 5)));
  EXPECT_EQ(percentile({3}, 50), 3);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 0), 1);
  EXPECT_EQ(percentile({4, 1, 3, 2}, 100), 4);
  EXPECT_DOUBLE_EQ(percentile({4, 1, 3, 2}, 50), 2.5);
}

}  // namespace
}  // namespace sg
