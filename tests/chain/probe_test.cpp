// probe: seeded unit-norm inputs, one row per seed, and the degenerate rule of product.md: a
// seed where both shards output all zeros (an MoE pack that got no token) is reported and not
// gated; every seed degenerate is "no evidence" (fail); exactly one side zero is cosine 0.
#include "shardgate/probe.h"

#include "shardgate/gate_policy.h"
#include "shardgate/golden_report.h"
#include "shardgate/readers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace sg {
namespace {

const std::string kSample = SG_SOURCE_DIR "/goldens/sample/shards/";

// A routed "pack": out = x · gate · w, where gate = 1 when sum(x) > 0 else 0 — half of the
// random inputs route no token here and both shards output zeros. `w` differs between the
// baseline (all ones) and a candidate (a small per-channel error).
std::shared_ptr<Shard> routed_pack(const std::string& w, const std::string& extra_scale = "1.0") {
  const std::string text = R"(program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-version", "3500.32.1"}})]
{
    func main<ios16>(tensor<fp32, [1, 8]> x) {
            tensor<int32, [1]> axes = const()[name = tensor<string, []>("axes"), val = tensor<int32, [1]>([-1])];
            tensor<bool, []> keep = const()[name = tensor<string, []>("keep"), val = tensor<bool, []>(true)];
            tensor<fp32, [1, 1]> s = reduce_sum(axes = axes, keep_dims = keep, x = x)[name = tensor<string, []>("s")];
            tensor<fp32, []> zero = const()[name = tensor<string, []>("zero"), val = tensor<fp32, []>(0)];
            tensor<bool, [1, 1]> routed = greater(x = s, y = zero)[name = tensor<string, []>("routed")];
            tensor<string, []> f32 = const()[name = tensor<string, []>("f32"), val = tensor<string, []>("fp32")];
            tensor<fp32, [1, 1]> gate = cast(dtype = f32, x = routed)[name = tensor<string, []>("gate")];
            tensor<fp32, [1, 8]> y = mul(x = x, y = gate)[name = tensor<string, []>("y")];
            tensor<fp32, [8]> w = const()[name = tensor<string, []>("w"), val = tensor<fp32, [8]>()" +
                           w + R"()];
            tensor<fp32, []> k = const()[name = tensor<string, []>("k"), val = tensor<fp32, []>()" +
                           extra_scale + R"()];
            tensor<fp32, [1, 8]> yw = mul(x = y, y = w)[name = tensor<string, []>("yw")];
            tensor<fp32, [1, 8]> out = mul(x = yw, y = k)[name = tensor<string, []>("out")];
    } -> (out);
}
)";
  auto program = parse_mil_text(text, "routed_pack.mil");
  EXPECT_TRUE(program.is_ok()) << program.status().to_string();
  if (!program.is_ok()) return nullptr;
  return Shard::from_program(std::move(*program), ModelInfo{}, "");
}

const std::string kOnes = "[1, 1, 1, 1, 1, 1, 1, 1]";
const std::string kNoisy = "[1.02, 0.97, 1.01, 0.99, 1.03, 0.98, 1.0, 1.01]";

GoldenReport gate(const ProbeResult& r) {
  FidelityRun run;
  run.command = "probe";
  run.checks = r.checks;
  auto report = make_golden_report(run, builtin_gate_policy(), false, "test");
  EXPECT_TRUE(report.is_ok()) << report.status().to_string();
  return report.is_ok() ? *report : GoldenReport{};
}

TEST(SeededInputs, UnitNormPerPositionAndDeterministic) {
  auto shard = Shard::open(kSample + "L0_attn_fp16.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  auto a = make_seeded_inputs(**shard, "main", 3);
  auto b = make_seeded_inputs(**shard, "main", 3);
  auto c = make_seeded_inputs(**shard, "main", 4);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok()) << a.status().to_string();
  const Tensor& x = a->inputs.at("hidden");
  EXPECT_EQ(x.shape(), (Shape{1, 8, 64}));
  const std::vector<double> va = *to_double_vector(x);
  EXPECT_EQ(va, *to_double_vector(b->inputs.at("hidden")));
  EXPECT_NE(va, *to_double_vector(c->inputs.at("hidden")));
  double total = 0;
  int negative = 0;
  for (int p = 0; p < 8; ++p) {
    double ss = 0;
    for (int k = 0; k < 64; ++k) {
      ss += va[p * 64 + k] * va[p * 64 + k];
      total += va[p * 64 + k];
      negative += va[p * 64 + k] < 0;
    }
    EXPECT_NEAR(ss, 1.0, 1e-5) << "position " << p;
  }
  // Centred draws: each position's sum is ~N(0, 1), so the total is ~N(0, 8); both signs occur.
  EXPECT_LT(std::fabs(total), 4 * std::sqrt(8.0));
  EXPECT_GT(negative, 128);
  EXPECT_LT(negative, 384);
}

TEST(SeededInputs, TokenIdsStayInsideTheEmbeddingTable) {
  auto shard = Shard::open(kSample + "embed_fp16.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  auto in = make_seeded_inputs(**shard, "main", 0);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_TRUE(in->notes.empty()) << in->notes.front();
  const Tensor& ids = in->inputs.at("input_ids");
  EXPECT_EQ(ids.dtype(), DType::kI32);
  const std::vector<int64_t> v = *to_int64_vector(ids);
  int64_t lo = v[0], hi = v[0];
  for (int64_t id : v) {
    lo = std::min(lo, id);
    hi = std::max(hi, id);
  }
  EXPECT_GE(lo, 0);
  EXPECT_LT(hi, 192);  // the sample's vocabulary
  EXPECT_NE(lo, hi);
}

TEST(SeededInputs, GivenInputsAreCheckedAndUsed) {
  auto shard = routed_pack(kOnes);
  ASSERT_TRUE(shard);
  const Tensor x = Tensor::from_f32({1, 8}, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  auto in = make_seeded_inputs(*shard, "main", 0, {{"x", x}});
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_EQ(*to_double_vector(in->inputs.at("x")), *to_double_vector(x));
  const Tensor wrong = Tensor::from_f32({1, 4}, std::vector<float>{1, 2, 3, 4});
  EXPECT_EQ(make_seeded_inputs(*shard, "main", 0, {{"x", wrong}}).status().code(), ErrorCode::kShape);
  EXPECT_EQ(make_seeded_inputs(*shard, "main", 0, {{"y", x}}).status().code(), ErrorCode::kUsage);
  EXPECT_EQ(make_seeded_inputs(*shard, "other", 0).status().code(), ErrorCode::kUsage);
}

TEST(Probe, SeedsWhereNoTokenIsRoutedAreDegenerateNotFailures) {
  auto baseline = routed_pack(kOnes);
  auto candidate = routed_pack(kNoisy);
  ASSERT_TRUE(baseline && candidate);
  ProbeOptions o;
  o.seeds = 8;
  auto r = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->checks.size(), 1u);
  const CheckResult& c = r->checks[0];
  EXPECT_EQ(c.identity.checkpoint, "out");
  ASSERT_EQ(c.rows.size(), 8u);  // one row per seed
  int degenerate = 0, measured = 0;
  for (const RowResult& row : c.rows) {
    if (row.degenerate) {
      ++degenerate;
      EXPECT_FALSE(row.value(Metric::kCosine).has_value());
    } else {
      ++measured;
      EXPECT_GT(*row.value(Metric::kCosine), 0.99);
      EXPECT_LT(*row.value(Metric::kCosine), 1.0);
    }
  }
  // With these seeds both cases occur (sum(x) > 0 for about half of the draws).
  EXPECT_GT(degenerate, 0);
  EXPECT_GT(measured, 0);
  const GoldenReport report = gate(*r);
  EXPECT_EQ(report.evaluation.summary.verdict, Verdict::kPass) << report.evaluation.summary.message;
  EXPECT_EQ(report.evaluation.summary.degenerate_rows, degenerate);
}

TEST(Probe, EverySeedDegenerateIsNoEvidence) {
  auto baseline = routed_pack(kOnes, "0.0");
  auto candidate = routed_pack(kNoisy, "0.0");
  ASSERT_TRUE(baseline && candidate);
  ProbeOptions o;
  o.seeds = 5;
  auto r = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  for (const RowResult& row : r->checks[0].rows) EXPECT_TRUE(row.degenerate);
  const GoldenReport report = gate(*r);
  EXPECT_EQ(report.evaluation.summary.verdict, Verdict::kFail);
  EXPECT_EQ(report.evaluation.checks[0].verdict, Verdict::kNoEvidence);
}

TEST(Probe, OnlyTheCandidateZeroIsCosineZeroAndFails) {
  auto baseline = routed_pack(kOnes);
  auto candidate = routed_pack(kNoisy, "0.0");
  ASSERT_TRUE(baseline && candidate);
  ProbeOptions o;
  o.seeds = 8;
  auto r = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  bool saw_zero_cosine = false;
  for (const RowResult& row : r->checks[0].rows) {
    if (!row.degenerate) {
      EXPECT_EQ(*row.value(Metric::kCosine), 0.0);
      saw_zero_cosine = true;
    }
  }
  EXPECT_TRUE(saw_zero_cosine);
  EXPECT_EQ(gate(*r).evaluation.summary.verdict, Verdict::kFail);
}

TEST(Probe, QuantizedSampleShardAgainstItsBaseline) {
  ProbeOptions o;
  o.seeds = 3;
  auto lut4 = probe_shard(kSample + "L0_moe_p0_lut4.mlpackage", kSample + "L0_moe_p0_fp16.mlpackage", o);
  ASSERT_TRUE(lut4.is_ok()) << lut4.status().to_string();
  ASSERT_EQ(lut4->checks.size(), 1u);
  EXPECT_EQ(lut4->checks[0].rows.size(), 3u);
  EXPECT_FALSE(lut4->candidate_sha256.empty());
  int measured = 0;
  for (const RowResult& row : lut4->checks[0].rows) {
    if (row.degenerate) continue;
    ++measured;
    ASSERT_TRUE(row.value(Metric::kCosine).has_value());
    EXPECT_GT(*row.value(Metric::kCosine), 0.9);
    EXPECT_LT(*row.value(Metric::kCosine), 1.0);  // quantization is visible
  }
  EXPECT_GT(measured, 0) << "every LUT4 probe row is degenerate: nothing was compared";
  // The baseline against itself is exact.
  auto same = probe_shard(kSample + "L0_moe_p0_fp16.mlpackage", kSample + "L0_moe_p0_fp16.mlpackage", o);
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  int measured_same = 0;
  for (const RowResult& row : same->checks[0].rows) {
    if (!row.degenerate) {
      ++measured_same;
      ASSERT_TRUE(row.value(Metric::kCosine).has_value());
      EXPECT_EQ(*row.value(Metric::kCosine), 1.0);
    }
  }
  EXPECT_GT(measured_same, 0) << "every baseline probe row is degenerate: nothing was compared";
  // Shards with different inputs cannot be probed against each other.
  auto mismatch = probe_shard(kSample + "embed_lut4.mlpackage", kSample + "L0_moe_p0_fp16.mlpackage", o);
  EXPECT_EQ(mismatch.status().code(), ErrorCode::kShape) << mismatch.status().to_string();
}

}  // namespace
}  // namespace sg
