// probe: seeded unit-norm inputs, one row per seed, and the degenerate rule (README.md, Metrics): a
// seed where both shards output all zeros (an MoE pack that got no token) is reported and not
// gated; every seed degenerate is "no evidence" (fail); exactly one side zero is cosine 0.
// Realistic inputs (a given base plus seeded perturbations), --input-rms, and the
// input-stability check: a seed on a near-tied router is `unstable`, not a failure.
#include "shardgate/probe.h"

#include "shardgate/gate_policy.h"
#include "shardgate/golden_report.h"
#include "shardgate/readers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace sg {
namespace {

const std::string kSampleShards = SG_SOURCE_DIR "/goldens/sample/shards/";

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
  auto shard = Shard::open(kSampleShards + "L0_attn_fp16.mlpackage");
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
    // Drawn in fp32, then stored in the input's declared dtype (fp16 here: 11 significant bits).
    EXPECT_NEAR(ss, 1.0, 3e-3) << "position " << p;
  }
  // Centred draws: each position's sum is ~N(0, 1), so the total is ~N(0, 8); both signs occur.
  EXPECT_LT(std::fabs(total), 4 * std::sqrt(8.0));
  EXPECT_GT(negative, 128);
  EXPECT_LT(negative, 384);
}

TEST(SeededInputs, TokenIdsStayInsideTheEmbeddingTable) {
  auto shard = Shard::open(kSampleShards + "embed_fp16.mlpackage");
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
  auto lut4 = probe_shard(kSampleShards + "L0_moe_p0_lut4.mlpackage",
                          kSampleShards + "L0_moe_p0_fp16.mlpackage", o);
  ASSERT_TRUE(lut4.is_ok()) << lut4.status().to_string();
  ASSERT_EQ(lut4->checks.size(), 1u);
  EXPECT_EQ(lut4->checks[0].rows.size(), 3u * 8u);  // seeds x positions of [1, 8, 64]
  EXPECT_FALSE(lut4->candidate_sha256.empty());
  int measured = 0, close = 0;
  for (const RowResult& row : lut4->checks[0].rows) {
    ASSERT_TRUE(row.seed.has_value());
    if (row.degenerate) continue;
    ++measured;
    ASSERT_TRUE(row.value(Metric::kCosine).has_value());
    // A token the quantized router sends to another pack is all-zero on one side: cosine 0.
    EXPECT_LT(*row.value(Metric::kCosine), 1.0);  // quantization is visible
    close += *row.value(Metric::kCosine) > 0.9 ? 1 : 0;
  }
  EXPECT_GT(measured, 0) << "every LUT4 probe row is degenerate: nothing was compared";
  EXPECT_GT(close, measured / 2);
  // The baseline against itself is exact.
  auto same = probe_shard(kSampleShards + "L0_moe_p0_fp16.mlpackage",
                          kSampleShards + "L0_moe_p0_fp16.mlpackage", o);
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  int measured_same = 0;
  for (const RowResult& row : same->checks[0].rows) {
    if (!row.degenerate) {
      ++measured_same;
      ASSERT_TRUE(row.value(Metric::kCosine).has_value());
      EXPECT_NEAR(*row.value(Metric::kCosine), 1.0, 1e-12);
      EXPECT_EQ(*row.value(Metric::kMaxAbs), 0.0);
    }
  }
  EXPECT_GT(measured_same, 0) << "every baseline probe row is degenerate: nothing was compared";
  // Shards with different inputs cannot be probed against each other.
  auto mismatch = probe_shard(kSampleShards + "embed_lut4.mlpackage",
                              kSampleShards + "L0_moe_p0_fp16.mlpackage", o);
  EXPECT_EQ(mismatch.status().code(), ErrorCode::kShape) << mismatch.status().to_string();
}

// The routed pack with a router threshold: out = x · w when sum(x) > threshold, else zeros.
std::shared_ptr<Shard> routed_pack_at(const std::string& threshold, const std::string& w) {
  const std::string text = R"(program(1.0)
[buildInfo = dict<tensor<string, []>, tensor<string, []>>({{"coremlc-version", "3500.32.1"}})]
{
    func main<ios16>(tensor<fp32, [1, 8]> x) {
            tensor<int32, [1]> axes = const()[name = tensor<string, []>("axes"), val = tensor<int32, [1]>([-1])];
            tensor<bool, []> keep = const()[name = tensor<string, []>("keep"), val = tensor<bool, []>(true)];
            tensor<fp32, [1, 1]> s = reduce_sum(axes = axes, keep_dims = keep, x = x)[name = tensor<string, []>("s")];
            tensor<fp32, []> t = const()[name = tensor<string, []>("t"), val = tensor<fp32, []>()" +
                           threshold + R"()];
            tensor<bool, [1, 1]> routed = greater(x = s, y = t)[name = tensor<string, []>("routed")];
            tensor<string, []> f32 = const()[name = tensor<string, []>("f32"), val = tensor<string, []>("fp32")];
            tensor<fp32, [1, 1]> gate = cast(dtype = f32, x = routed)[name = tensor<string, []>("gate")];
            tensor<fp32, [1, 8]> y = mul(x = x, y = gate)[name = tensor<string, []>("y")];
            tensor<fp32, [8]> w = const()[name = tensor<string, []>("w"), val = tensor<fp32, [8]>()" +
                           w + R"()];
            tensor<fp32, [1, 8]> out = mul(x = y, y = w)[name = tensor<string, []>("out")];
    } -> (out);
}
)";
  auto program = parse_mil_text(text, "routed_pack_at.mil");
  EXPECT_TRUE(program.is_ok()) << program.status().to_string();
  if (!program.is_ok()) return nullptr;
  return Shard::from_program(std::move(*program), ModelInfo{}, "");
}

// A recorded input whose router sum is 1e-6 above the baseline's threshold: the baseline routes
// it, a candidate whose (quantized) threshold moved to 1e-4 does not. On that input the two
// differ completely although the candidate is fine everywhere else.
const std::vector<float> kNearTie = {0.5f, -0.5f, 0.5f, -0.5f, 0.5f, -0.5f, 0.5f, -0.499999f};

TEST(Probe, NearTiedRouterSeedIsUnstableNotAQuantizationFailure) {
  auto baseline = routed_pack_at("0.0", kOnes);
  auto candidate = routed_pack_at("0.0001", kNoisy);
  ASSERT_TRUE(baseline && candidate);
  ProbeOptions o;
  o.seeds = 6;
  o.base_inputs = {{"x", Tensor::from_f32({1, 8}, kNearTie)}};
  o.base_inputs_origin = "a recorded input";
  o.perturbation = 0.2;  // later seeds leave the tie: both route, or neither (degenerate)

  // Without the stability check, seed 0 (the recorded input) is a quantization failure.
  o.stability_rms = 0;
  auto plain = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(plain.is_ok()) << plain.status().to_string();
  ASSERT_EQ(plain->checks[0].rows.size(), 6u);
  EXPECT_EQ(*plain->checks[0].rows[0].value(Metric::kCosine), 0.0);
  EXPECT_FALSE(plain->checks[0].rows[0].stability_cosine.has_value());
  const GoldenReport failed = gate(*plain);
  EXPECT_EQ(failed.evaluation.summary.verdict, Verdict::kFail);
  EXPECT_NE(failed.evaluation.summary.message.find("at seed 0"), std::string::npos)
      << failed.evaluation.summary.message;

  // With it, the baseline itself flips on the tiny perturbation of seed 0: unstable, excluded,
  // reported with its margin; the other seeds decide.
  o.stability_rms = 1e-3;
  auto r = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const CheckResult& c = r->checks[0];
  EXPECT_EQ(c.row_axis, "seed");
  ASSERT_TRUE(c.rows[0].stability_cosine.has_value());
  EXPECT_LT(*c.rows[0].stability_cosine, 0.97);
  int measured = 0;
  for (size_t i = 1; i < c.rows.size(); ++i) {
    ASSERT_TRUE(c.rows[i].stability_cosine.has_value());
    EXPECT_GE(*c.rows[i].stability_cosine, 0.97) << "seed " << i;
    measured += c.rows[i].degenerate ? 0 : 1;
  }
  ASSERT_GT(measured, 0) << "every perturbed seed is degenerate: nothing decides";
  const GoldenReport report = gate(*r);
  EXPECT_EQ(report.evaluation.summary.verdict, Verdict::kPass) << report.evaluation.summary.message;
  EXPECT_EQ(report.evaluation.summary.unstable_rows, 1);
  EXPECT_EQ(report.evaluation.checks[0].rows[0].verdict, Verdict::kUnstable);
  const std::string& note = report.evaluation.checks[0].unstable_note;
  EXPECT_NE(note.find("1 of 6 rows unstable"), std::string::npos) << note;
  EXPECT_NE(note.find("seed 0 (baseline moves to cosine"), std::string::npos) << note;
  EXPECT_NE(note.find("margin"), std::string::npos) << note;
  EXPECT_NE(report.evaluation.summary.message.find("1 unstable"), std::string::npos)
      << report.evaluation.summary.message;

  // Only unstable (and degenerate) seeds: no evidence, never a pass.
  o.seeds = 1;
  auto only = probe_shards(candidate, baseline, o);
  ASSERT_TRUE(only.is_ok()) << only.status().to_string();
  const GoldenReport none = gate(*only);
  EXPECT_EQ(none.evaluation.checks[0].verdict, Verdict::kNoEvidence);
  EXPECT_EQ(none.evaluation.summary.verdict, Verdict::kFail);
}

TEST(Probe, RecordedInputIsSeedZeroAndLaterSeedsArePerturbedByTheStatedSize) {
  auto shard = routed_pack_at("-100.0", kOnes);  // routes everything: out = x
  ASSERT_TRUE(shard);
  ProbeOptions o;
  o.seeds = 4;
  o.first_seed = 10;
  o.stability_rms = 0;
  o.perturbation = 0.05;
  o.base_inputs = {{"x", Tensor::from_f32({1, 8}, kNearTie)}};
  o.base_inputs_origin = "a recorded input";
  auto r = probe_shards(shard, shard, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // The check's rows are seeds 10..13 (the [1, 8] output has no position axis: one row per
  // seed); the perturbations are perturbed()'s with the seed's stream.
  ASSERT_EQ(r->checks[0].rows.size(), 4u);
  EXPECT_EQ(r->checks[0].rows[0].seed, 10);
  EXPECT_EQ(r->checks[0].rows[3].seed, 13);
  EXPECT_EQ(r->checks[0].rows[3].position, -1);
  const Tensor base = Tensor::from_f32({1, 8}, kNearTie);
  double base_ss = 0;
  for (float v : kNearTie) base_ss += static_cast<double>(v) * v;
  for (uint64_t seed : {11u, 12u, 13u}) {
    auto p = perturbed(base, 0.05, seed, "x", 0x5EED5EED5EED5EEDULL);
    ASSERT_TRUE(p.is_ok());
    const std::vector<double> v = *to_double_vector(*p);
    double dd = 0;
    for (size_t k = 0; k < 8; ++k) dd += (v[k] - kNearTie[k]) * (v[k] - kNearTie[k]);
    EXPECT_NEAR(std::sqrt(dd / base_ss), 0.05, 1e-6) << "seed " << seed;
  }
  EXPECT_NE(r->notes.back().find("inputs from a recorded input"), std::string::npos)
      << r->notes.back();
}

TEST(SeededInputs, InputRmsAndScaleSetTheSizeOfEveryVector) {
  auto shard = Shard::open(kSampleShards + "L0_attn_fp16.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  InputScale rms;
  rms.rms = 2.0;
  auto a = make_seeded_inputs(**shard, "main", 3, {}, rms);
  InputScale scaled;
  scaled.scale = 3.0;
  auto b = make_seeded_inputs(**shard, "main", 3, {}, scaled);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << a.status().to_string();
  const std::vector<double> va = *to_double_vector(a->inputs.at("hidden"));
  const std::vector<double> vb = *to_double_vector(b->inputs.at("hidden"));
  for (int p = 0; p < 8; ++p) {
    double ssa = 0, ssb = 0;
    for (int k = 0; k < 64; ++k) {
      ssa += va[p * 64 + k] * va[p * 64 + k];
      ssb += vb[p * 64 + k] * vb[p * 64 + k];
    }
    EXPECT_NEAR(std::sqrt(ssa / 64), 2.0, 2e-3) << "position " << p;  // RMS per element
    EXPECT_NEAR(std::sqrt(ssb), 3.0, 3e-3) << "position " << p;       // 3 x unit norm
  }
  InputScale bad;
  bad.rms = -1;
  EXPECT_EQ(make_seeded_inputs(**shard, "main", 3, {}, bad).status().code(), ErrorCode::kUsage);
}

}  // namespace
}  // namespace sg
