// The comparison engine's rules (README.md, Metrics): per-position rows, NaN/Inf located by tensor,
// flat index and position, shape and dtype-class mismatches as input errors, degenerate rows
// excluded, all-degenerate checks failing, and compare_sources over the test dumps.
#include "shardgate/fidelity.h"
#include "shardgate/gate_policy.h"
#include "shardgate/golden.h"
#include "shardgate/memory_budget.h"
#include "shardgate/metrics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace sg {
namespace {

Tensor f32(const Shape& shape, std::vector<float> v) { return Tensor::from_f32(shape, v); }

CheckIdentity ident(const std::string& name, const std::string& kind = "hidden",
                    std::optional<int64_t> layer = 0) {
  CheckIdentity id;
  id.checkpoint = name;
  id.kind = kind;
  id.layer = layer;
  return id;
}

Result<GateEvaluation> gate(const CheckResult& c, GatePolicy policy = builtin_gate_policy()) {
  FidelityRun run;
  run.checks.push_back(c);
  return evaluate_gate(run, policy);
}

TEST(Compare, RowsSplitAlongPositionAxis) {
  // [1, 3, 2]: position 1 is a scaled copy (cosine 1, norm ratio 2), position 2 orthogonal.
  const Tensor ref = f32({1, 3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor cand = f32({1, 3, 2}, {1, 0, 0, 2, -1, 1});
  auto c = compare_tensors(ident("hidden.0"), cand, ref, 1, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->rows.size(), 3u);
  EXPECT_DOUBLE_EQ(*c->rows[0].value(Metric::kCosine), 1.0);
  EXPECT_DOUBLE_EQ(*c->rows[1].value(Metric::kCosine), 1.0);
  EXPECT_DOUBLE_EQ(*c->rows[1].value(Metric::kNormRatio), 2.0);
  EXPECT_NEAR(*c->rows[2].value(Metric::kCosine), 0.0, 1e-15);
  EXPECT_FALSE(c->rows[0].value(Metric::kTop1).has_value());  // not logits
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail);
  // Position 1 fails the norm ratio although its cosine is perfect: cosine alone is not enough.
  EXPECT_EQ(ev->checks[0].rows[1].verdict, Verdict::kFail);
  EXPECT_EQ(ev->checks[0].rows[1].failed, std::vector<Metric>{Metric::kNormRatio});
  EXPECT_EQ(ev->summary.first_failure_position, 1);
}

TEST(Compare, NegativePositionAxisAndNoAxis) {
  const Tensor t = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto last = compare_tensors(ident("x"), t, t, -1, {});
  ASSERT_TRUE(last.is_ok());
  EXPECT_EQ(last->position_axis, 1);
  EXPECT_EQ(last->rows.size(), 3u);
  auto whole = compare_tensors(ident("x"), t, t, std::nullopt, {});
  ASSERT_TRUE(whole.is_ok());
  ASSERT_EQ(whole->rows.size(), 1u);
  EXPECT_EQ(whole->rows[0].position, -1);
  auto bad = compare_tensors(ident("x"), t, t, 2, {});
  EXPECT_EQ(bad.status().code(), ErrorCode::kShape);
}

TEST(Compare, ShapeMismatchIsAnInputErrorNeverAReshape) {
  const Tensor a = f32({1, 4}, {1, 2, 3, 4});
  const Tensor b = f32({4, 1}, {1, 2, 3, 4});  // same element count
  auto c = compare_tensors(ident("hidden.2"), a, b, 0, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kShape);
  EXPECT_EQ(exit_code(c.status().code()), kExitBadInput);
  EXPECT_NE(c.status().message().find("hidden.2"), std::string::npos);
  EXPECT_NE(c.status().message().find("[1, 4]"), std::string::npos);
}

TEST(Compare, DtypeClassMismatchIsAnInputError) {
  const std::vector<int32_t> iv = {1, 2, 3, 4};
  const Tensor ints = Tensor::from_i32({1, 4}, iv);
  const Tensor floats = f32({1, 4}, {1, 2, 3, 4});
  auto c = compare_tensors(ident("hidden.0"), ints, floats, 1, {});
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kShape);
  EXPECT_NE(c.status().message().find("int32"), std::string::npos);
  // fp16 against fp32 is the same class: allowed.
  std::vector<uint16_t> h = {0x3c00, 0x4000, 0x4200, 0x4400};  // 1 2 3 4
  auto ok = compare_tensors(ident("hidden.0"), Tensor::from_f16_bits({1, 4}, h), floats, 0, {});
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_DOUBLE_EQ(*ok->rows[0].value(Metric::kCosine), 1.0);
}

// A row of one element has cosine ±1 whatever its error (only the signs count): of the same
// sign it gets no cosine, so the gate cannot pass it on one; the norm ratio and the errors judge it.
TEST(Compare, OneElementRowsHaveNoCosineButANormRatio) {
  const Tensor ref = f32({1, 3}, {0.50f, 0.20f, 0.90f});
  const Tensor cand = f32({1, 3}, {0.60f, 0.20f, 0.45f});  // 20% and 50% off, same signs
  auto c = compare_tensors(ident("vad_output"), cand, ref, 1, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->rows.size(), 3u);
  for (const RowResult& r : c->rows) {
    EXPECT_FALSE(r.value(Metric::kCosine).has_value());
    ASSERT_TRUE(r.value(Metric::kNormRatio).has_value());
  }
  EXPECT_NEAR(*c->rows[0].value(Metric::kNormRatio), 1.2, 1e-6);
  EXPECT_NEAR(*c->rows[2].value(Metric::kNormRatio), 0.5, 1e-6);
  FidelityRun run;
  run.checks.push_back(*c);
  auto ev = evaluate_gate(run, builtin_gate_policy());
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kFail) << ev->checks[0].message;  // by the norm ratio
}

// A one-element row of the wrong sign has norm ratio 1 and passed under every shipped gate
// (no error threshold is on by default): its cosine, -1, is kept and fails it. Rows of the
// right sign still have none, and the note says which rows have one.
TEST(Compare, OneElementRowOfTheWrongSignFailsOnItsCosine) {
  const Tensor ref = f32({3, 1}, {0.50f, -0.20f, 0.90f});
  const Tensor cand = f32({3, 1}, {0.50f, 0.20f, 0.90f});  // row 1 negated
  auto c = compare_tensors(ident("score", "output", std::nullopt), cand, ref, 0, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->rows.size(), 3u);
  EXPECT_FALSE(c->rows[0].value(Metric::kCosine).has_value());
  ASSERT_TRUE(c->rows[1].value(Metric::kCosine).has_value());
  EXPECT_DOUBLE_EQ(*c->rows[1].value(Metric::kCosine), -1.0);
  EXPECT_DOUBLE_EQ(*c->rows[1].value(Metric::kNormRatio), 1.0);
  EXPECT_FALSE(c->rows[2].value(Metric::kCosine).has_value());
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail) << ev->summary.message;
  EXPECT_EQ(ev->checks[0].rows[0].verdict, Verdict::kPass);
  EXPECT_EQ(ev->checks[0].rows[1].failed, std::vector<Metric>{Metric::kCosine});
  EXPECT_EQ(ev->checks[0].rows[2].verdict, Verdict::kPass);
}

// Integer tensors hold ids: token 1800 for 1700 (norm ratio 1800/1700 = 1.0588) and 98 for 99
// (0.9899) sat inside the default norm-ratio range and passed. They must match exactly: the
// differing positions fail on max_abs (|1800 - 1700| = 100, |98 - 99| = 1) under a fixed rule.
TEST(Compare, IntegerTensorsMustMatchExactly) {
  const std::vector<int32_t> rv = {5, 1700, 99, 3}, cv = {5, 1800, 98, 3};
  const Tensor ref = Tensor::from_i32({1, 4}, rv), cand = Tensor::from_i32({1, 4}, cv);
  auto c = compare_tensors(ident("next_token", "output", std::nullopt), cand, ref, 1, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail) << ev->summary.message;
  const CheckVerdict& v = ev->checks[0];
  EXPECT_EQ(v.rows[0].verdict, Verdict::kPass);
  EXPECT_EQ(v.rows[1].verdict, Verdict::kFail);
  EXPECT_EQ(v.rows[1].failed, std::vector<Metric>{Metric::kMaxAbs});
  EXPECT_EQ(v.rows[2].verdict, Verdict::kFail);
  EXPECT_EQ(v.rows[3].verdict, Verdict::kPass);
  EXPECT_DOUBLE_EQ(*c->rows[1].value(Metric::kMaxAbs), 100.0);
  EXPECT_NE(v.message.find("max_abs max 100 at position 1, needs <= 0 [fixed rule: int32"),
            std::string::npos) << v.message;
  // The same ids pass. A mask of 32 flags with one flipped has cosine 31/sqrt(32*31) = 0.984
  // and norm ratio sqrt(31/32) = 0.984, inside the default gate, and fails now.
  auto same = compare_tensors(ident("next_token", "output", std::nullopt), ref, ref, 1, {});
  ASSERT_TRUE(same.is_ok());
  EXPECT_EQ(gate(*same)->summary.verdict, Verdict::kPass);
  std::vector<uint8_t> m1(32, 1), m2(32, 1);
  m2[7] = 0;
  auto flags = compare_tensors(ident("mask", "output", std::nullopt), Tensor::from_bool({32}, m2),
                               Tensor::from_bool({32}, m1), std::nullopt, {});
  ASSERT_TRUE(flags.is_ok()) << flags.status().to_string();
  EXPECT_EQ(gate(*flags)->summary.verdict, Verdict::kFail);
  // Floats keep the policy's thresholds: no max_abs gate appears for them.
  auto floats = compare_tensors(ident("h"), f32({1, 2}, {1.0f, 2.0f}), f32({1, 2}, {1.0f, 2.1f}),
                                std::nullopt, {});
  ASSERT_TRUE(floats.is_ok());
  auto fev = gate(*floats);
  ASSERT_TRUE(fev.is_ok());
  EXPECT_EQ(fev->summary.verdict, Verdict::kPass) << fev->summary.message;
}

// Ids or flags that are zero on both sides (token 0 at every position, an all-false mask) match
// exactly: they pass on max_abs 0 where such a check failed as "all rows degenerate: no
// evidence"; one flag set where the reference has none still fails. Float rows of zeros stay
// degenerate.
TEST(Compare, IntegerRowsOfZerosOnBothSidesAreAnExactMatch) {
  const std::vector<int32_t> zeros(4, 0);
  const Tensor ids = Tensor::from_i32({1, 4}, zeros);
  auto same = compare_tensors(ident("next_token", "output", std::nullopt), ids, ids, 1, {});
  ASSERT_TRUE(same.is_ok()) << same.status().to_string();
  for (const RowResult& r : same->rows) {
    EXPECT_FALSE(r.degenerate);
    EXPECT_EQ(r.value(Metric::kMaxAbs), std::optional<double>(0.0));
  }
  auto ev = gate(*same);
  ASSERT_TRUE(ev.is_ok()) << ev.status().to_string();
  EXPECT_EQ(ev->summary.verdict, Verdict::kPass) << ev->summary.message;
  std::vector<uint8_t> none(8, 0), one(8, 0);
  one[5] = 1;
  auto flags = compare_tensors(ident("mask", "output", std::nullopt), Tensor::from_bool({8}, none),
                               Tensor::from_bool({8}, none), std::nullopt, {});
  ASSERT_TRUE(flags.is_ok());
  EXPECT_EQ(gate(*flags)->summary.verdict, Verdict::kPass) << gate(*flags)->summary.message;
  auto flipped = compare_tensors(ident("mask", "output", std::nullopt), Tensor::from_bool({8}, one),
                                 Tensor::from_bool({8}, none), std::nullopt, {});
  ASSERT_TRUE(flipped.is_ok());
  EXPECT_EQ(gate(*flipped)->summary.verdict, Verdict::kFail);
  auto floats = compare_tensors(ident("h"), f32({1, 2}, {0.0f, 0.0f}), f32({1, 2}, {0.0f, 0.0f}),
                                std::nullopt, {});
  ASSERT_TRUE(floats.is_ok());
  EXPECT_TRUE(floats->rows[0].degenerate);
  EXPECT_EQ(gate(*floats)->summary.verdict, Verdict::kFail);
}

// Logits without a position axis ([41, 2], null in the manifest) form one row of 41 vectors.
// 40 equal their reference [1, 2]; one reads [2, -1], orthogonal to it. The cosine of the
// concatenation is 40·5 / (41·5) = 0.97561 and passed the 0.97 gate with a wrong token; the row
// now takes its worst vector's cosine, 0, as top-k overlap already took its minimum.
TEST(Compare, LogitsRowsOfSeveralVectorsGateTheirWorstVector) {
  std::vector<float> ref, cand;
  for (int i = 0; i < 41; ++i) {
    ref.insert(ref.end(), {1.0f, 2.0f});
    if (i == 17) {
      cand.insert(cand.end(), {2.0f, -1.0f});
    } else {
      cand.insert(cand.end(), {1.0f, 2.0f});
    }
  }
  auto c = compare_tensors(ident("logits", "logits", std::nullopt), f32({41, 2}, cand),
                           f32({41, 2}, ref), std::nullopt, {});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->rows.size(), 1u);
  EXPECT_NEAR(*c->rows[0].value(Metric::kCosine), 0.0, 1e-15);
  EXPECT_DOUBLE_EQ(*c->rows[0].value(Metric::kTop1), 40.0 / 41.0);
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail) << ev->summary.message;
  // Hidden states keep the cosine of the whole row (40/41 here): only logits split by vector.
  auto h = compare_tensors(ident("hidden.0"), f32({41, 2}, cand), f32({41, 2}, ref),
                           std::nullopt, {});
  ASSERT_TRUE(h.is_ok());
  EXPECT_NEAR(*h->rows[0].value(Metric::kCosine), 200.0 / 205.0, 1e-15);
}

TEST(Compare, NanFailsNamingTensorIndexAndPosition) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor ref = f32({1, 3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor cand = f32({1, 3, 2}, {1, 2, 3, nan, 5, 6});
  auto c = compare_tensors(ident("hidden.1"), cand, ref, 1, {});
  ASSERT_TRUE(c.is_ok());
  ASSERT_TRUE(c->nonfinite.has_value());
  EXPECT_EQ(c->nonfinite->tensor, "candidate");
  EXPECT_EQ(c->nonfinite->flat_index, 3);
  EXPECT_EQ(c->nonfinite->position, 1);
  EXPECT_TRUE(c->rows[1].nonfinite);
  EXPECT_FALSE(c->rows[0].nonfinite);
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kNonfinite);
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail);
  EXPECT_NE(ev->checks[0].message.find("hidden.1"), std::string::npos);
  EXPECT_NE(ev->checks[0].message.find("flat index 3"), std::string::npos);
  EXPECT_NE(ev->checks[0].message.find("position 1"), std::string::npos);
}

TEST(Compare, InfInReferenceFailsToo) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor ref = f32({2, 2}, {1, 2, 3, -inf});
  const Tensor cand = f32({2, 2}, {1, 2, 3, 4});
  auto c = compare_tensors(ident("logits", "logits", std::nullopt), cand, ref, 0, {});
  ASSERT_TRUE(c.is_ok());
  ASSERT_TRUE(c->nonfinite.has_value());
  EXPECT_EQ(c->nonfinite->tensor, "reference");
  EXPECT_EQ(c->nonfinite->flat_index, 3);
  EXPECT_TRUE(std::isinf(c->nonfinite->value) && c->nonfinite->value < 0);
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail);
}

TEST(Compare, DegenerateRowsAreReportedAndExcluded) {
  // Position 0 is zero in both (an MoE pack that got no token); position 1 matches well.
  const Tensor ref = f32({2, 3}, {0, 0, 0, 1, 2, 3});
  const Tensor cand = f32({2, 3}, {0, 0, 0, 1, 2, 3.01f});
  auto c = compare_tensors(ident("L0.moe_p1"), cand, ref, 0, {});
  ASSERT_TRUE(c.is_ok());
  EXPECT_TRUE(c->rows[0].degenerate);
  EXPECT_FALSE(c->rows[0].value(Metric::kCosine).has_value());
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].rows[0].verdict, Verdict::kDegenerate);
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kPass);
  EXPECT_EQ(ev->summary.degenerate_rows, 1);
  EXPECT_EQ(ev->summary.verdict, Verdict::kPass);
}

TEST(Compare, AllRowsDegenerateFailsWithNoEvidence) {
  const Tensor zero = f32({2, 3}, {0, 0, 0, 0, 0, 0});
  auto c = compare_tensors(ident("L0.moe_p3"), zero, zero, 0, {});
  ASSERT_TRUE(c.is_ok());
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->checks[0].verdict, Verdict::kNoEvidence);
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail);
  EXPECT_NE(ev->checks[0].message.find("no evidence"), std::string::npos);
}

TEST(Compare, OneZeroVectorFailsOnCosineZero) {
  const Tensor ref = f32({1, 3}, {1, 2, 3});
  const Tensor cand = f32({1, 3}, {0, 0, 0});
  auto c = compare_tensors(ident("hidden.0"), cand, ref, 0, {});
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->rows[0].degenerate);
  EXPECT_EQ(*c->rows[0].value(Metric::kCosine), 0.0);
  auto ev = gate(*c);
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.verdict, Verdict::kFail);
}

TEST(Compare, NothingComparedNeverPasses) {
  FidelityRun empty;
  auto ev = evaluate_gate(empty, builtin_gate_policy());
  ASSERT_TRUE(ev.is_ok());
  EXPECT_EQ(ev->summary.verdict, Verdict::kNoEvidence);
  EXPECT_EQ(ev->summary.checks, 0);
}

TEST(Compare, TopkMustBePositive) {
  const Tensor t = f32({1, 3}, {1, 2, 3});
  MetricOptions o;
  o.topk = 0;
  EXPECT_EQ(compare_tensors(ident("logits", "logits"), t, t, 0, o).status().code(), ErrorCode::kUsage);
}

TEST(Compare, LabelsArePartOfTheIdentity) {
  CheckIdentity id = ident("out");
  id.labels = {{"seed", "3"}, {"mode", "tf"}};
  EXPECT_EQ(id.id(), "out[seed=3,mode=tf]");
}

TEST(CompareSources, TestDumpsMatchByName) {
  auto ref = open_golden_source(SG_TEST_DATA_DIR "/golden/ref");
  auto cand = open_golden_source(SG_TEST_DATA_DIR "/golden/cand_fail");
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  ASSERT_TRUE(cand.is_ok()) << cand.status().to_string();
  auto run = compare_sources(**cand, **ref, {});
  ASSERT_TRUE(run.is_ok()) << run.status().to_string();
  EXPECT_EQ(run->checks.size(), 6u);  // input_ids is checked for equality, not scored
  ASSERT_EQ(run->inputs.size(), 2u);
  EXPECT_EQ(run->inputs[0].role, "candidate");
  EXPECT_EQ(run->inputs[0].sha256.size(), 64u);
  auto ev = evaluate_gate(*run, builtin_gate_policy());
  ASSERT_TRUE(ev.is_ok());
  ASSERT_TRUE(ev->summary.first_failure_check.has_value());
  const CheckIdentity& id = run->checks[*ev->summary.first_failure_check].identity;
  // tests/data/golden/expected.json: numpy finds the first failure at hidden.2, position 5.
  EXPECT_EQ(id.checkpoint, "hidden.2");
  EXPECT_EQ(id.layer, 2);
  EXPECT_EQ(ev->summary.first_failure_position, 5);
}

TEST(CompareSources, DifferentPromptIsAnInputError) {
  auto ref = open_golden_source(SG_TEST_DATA_DIR "/golden/ref");
  auto cand = open_golden_source(SG_TEST_DATA_DIR "/golden/cand_prompt");
  ASSERT_TRUE(ref.is_ok() && cand.is_ok());
  auto run = compare_sources(**cand, **ref, {});
  ASSERT_FALSE(run.is_ok());
  EXPECT_EQ(run.status().code(), ErrorCode::kShape);
  EXPECT_NE(run.status().message().find("input_ids"), std::string::npos);
}

// Rows are converted to double a bounded chunk at a time (compare.cpp kChunkElements): under a
// budget that the inputs plus 4 MiB fill, comparing 2M-element fp16 tensors (16 MiB each as
// doubles) must pass, and give the bits of the span metrics over whole rows. Converting whole
// tensors again (to_double_vector checks the budget) is refused here.
class CompareMemory : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = memory_budget(); }
  void TearDown() override { set_memory_budget(saved_); }
  uint64_t saved_ = 0;
};

// fp16 values from a fixed formula (no RNG): reference and a slightly different candidate.
Tensor f16_wave(const Shape& shape, double phase) {
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(std::sin(0.001 * static_cast<double>(i) + phase) * 4.0 +
                              std::cos(0.37 * static_cast<double>(i % 977)));
  }
  return cast_tensor(Tensor::from_f32(shape, v), DType::kF16).value();
}

// The metrics of row p of [outer, P, inner] by the span functions over the whole row.
std::vector<double> row_of(const std::vector<double>& v, int64_t positions, int64_t inner,
                           int64_t p) {
  std::vector<double> row;
  for (int64_t o = 0; o < static_cast<int64_t>(v.size()) / (positions * inner); ++o) {
    const auto begin = v.begin() + (o * positions + p) * inner;
    row.insert(row.end(), begin, begin + inner);
  }
  return row;
}

TEST_F(CompareMemory, RowsAreConvertedInBoundedChunksWithTheSameBits) {
  const Shape shape{2, 4, 262144};  // rows of 524288 elements, 8 chunks each
  const Tensor ref = f16_wave(shape, 0.0), cand = f16_wave(shape, 0.01);
  const std::vector<double> r = *to_double_vector(ref), c = *to_double_vector(cand);
  set_memory_budget(live_tensor_bytes() + (uint64_t{4} << 20));

  auto rows = compare_tensors(ident("hidden.0"), cand, ref, 1, {});
  ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
  auto whole = compare_tensors(ident("hidden.0"), cand, ref, std::nullopt, {});
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_FALSE(to_double_vector(ref).is_ok());  // the budget is tight enough to matter

  ASSERT_EQ(rows->rows.size(), 4u);
  for (int64_t p = 0; p < 4; ++p) {
    const std::vector<double> cr = row_of(c, 4, 262144, p), rr = row_of(r, 4, 262144, p);
    const RowResult& row = rows->rows[static_cast<size_t>(p)];
    EXPECT_EQ(*row.value(Metric::kCosine), cosine_similarity(cr, rr)) << p;
    EXPECT_EQ(*row.value(Metric::kNormRatio), norm_ratio(cr, rr)) << p;
    EXPECT_EQ(*row.value(Metric::kRelL2), relative_l2(cr, rr)) << p;
    EXPECT_EQ(*row.value(Metric::kMaxAbs), max_abs_error(cr, rr)) << p;
    EXPECT_EQ(*row.value(Metric::kSnrDb), snr_db(cr, rr)) << p;
  }
  ASSERT_EQ(whole->rows.size(), 1u);
  EXPECT_EQ(*whole->rows[0].value(Metric::kCosine), cosine_similarity(c, r));
  EXPECT_EQ(*whole->rows[0].value(Metric::kRelL2), relative_l2(c, r));
  EXPECT_EQ(*whole->rows[0].value(Metric::kSnrDb), snr_db(c, r));
}

TEST_F(CompareMemory, LogitsChunksHoldWholeVectors) {
  // Rows of 3 vectors of 100000: a chunk is one whole vector (top-k and KL need it whole).
  const Shape shape{1, 2, 3, 100000};
  const Tensor ref = f16_wave(shape, 0.0), cand = f16_wave(shape, 0.02);
  const std::vector<double> r = *to_double_vector(ref), c = *to_double_vector(cand);
  set_memory_budget(live_tensor_bytes() + (uint64_t{4} << 20));
  auto got = compare_tensors(ident("logits", "logits", std::nullopt), cand, ref, 1, {});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_EQ(got->rows.size(), 2u);
  for (int64_t p = 0; p < 2; ++p) {
    const std::vector<double> cr = row_of(c, 2, 300000, p), rr = row_of(r, 2, 300000, p);
    const RowResult& row = got->rows[static_cast<size_t>(p)];
    double worst = 2, overlap = 2, kl = 0, agree = 0;
    for (size_t b = 0; b < 3; ++b) {
      const std::span<const double> cv(cr.data() + b * 100000, 100000), rv(rr.data() + b * 100000, 100000);
      worst = std::min(worst, cosine_similarity(cv, rv));
      overlap = std::min(overlap, topk_overlap(cv, rv, 5));
      kl = std::max(kl, kl_divergence_softmax(rv, cv));
      agree += argmax(cv) == argmax(rv) ? 1 : 0;
    }
    EXPECT_EQ(*row.value(Metric::kCosine), worst) << p;
    EXPECT_EQ(*row.value(Metric::kTopkOverlap), overlap) << p;
    EXPECT_EQ(*row.value(Metric::kKl), kl) << p;
    EXPECT_EQ(*row.value(Metric::kTop1), agree / 3) << p;
    EXPECT_EQ(*row.value(Metric::kNormRatio), norm_ratio(cr, rr)) << p;
  }
}

TEST_F(CompareMemory, FirstNonFiniteIsFoundAcrossChunksAndRows) {
  // [2, 3, 100000]: the candidate's NaN in a later chunk of row 2 comes before (in flat order)
  // its Inf in row 1's second block; the reference's earlier NaN does not win over the
  // candidate's.
  const Shape shape{2, 3, 100000};
  std::vector<float> rv(600000, 1.0f), cv(600000, 1.0f);
  rv[5] = std::numeric_limits<float>::quiet_NaN();
  cv[2 * 100000 + 70000] = std::numeric_limits<float>::quiet_NaN();           // row 2, block 0
  cv[(1 * 3 + 1) * 100000 + 3] = std::numeric_limits<float>::infinity();      // row 1, block 1
  auto got = compare_tensors(ident("hidden.0"), f32(shape, cv), f32(shape, rv), 1, {});
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  ASSERT_TRUE(got->nonfinite.has_value());
  EXPECT_EQ(got->nonfinite->tensor, "candidate");
  EXPECT_EQ(got->nonfinite->flat_index, 270000);
  EXPECT_EQ(got->nonfinite->position, 2);
  EXPECT_TRUE(std::isnan(got->nonfinite->value));
  EXPECT_TRUE(got->rows[0].nonfinite);  // the reference's NaN
  EXPECT_TRUE(got->rows[1].nonfinite);
  EXPECT_TRUE(got->rows[2].nonfinite);
}

}  // namespace
}  // namespace sg
