// Storage numerics users ask about (tests/data/exec/numerics/gen_numerics.py, a coremltools
// fp16 program and its numpy results): fp16 subnormal results kept (Precision::kFp16) or
// flushed to zero (kFp16Ftz, --subnormals flush), bit for bit against numpy; and how far an
// fp16 overflow travels: the run records the first and the last op producing NaN/Inf, and
// nonfinite_reach() says which outputs it reaches and which later ops washed it out of.
#include "shardgate/executor.h"
#include "shardgate/fidelity.h"
#include "shardgate/npy.h"
#include "shardgate/shard.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace sg {
namespace {
using sg::testing::npy_or_fail;

const std::string kNumericsDir = std::string(SG_TEST_DATA_DIR) + "/exec/numerics/";

Tensor numerics_npy(const std::string& file) { return npy_or_fail(kNumericsDir + file); }

RunResult run_numerics(const std::string& package, Precision precision) {
  auto shard = Shard::open(kNumericsDir + package);
  EXPECT_TRUE(shard.is_ok()) << shard.status().to_string();
  if (!shard.is_ok()) return {};
  Executor ex(*shard);
  RunOptions ro;
  ro.precision = precision;
  auto r = ex.run("main", {{"x", numerics_npy("x.npy")}}, ro);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(*r) : RunResult{};
}

// Bitwise equality of two fp16 tensors (infinities and signed zeros included).
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), DType::kF16) << what;
  ASSERT_EQ(want.dtype(), DType::kF16) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
}

int64_t zeros(const Tensor& t) {
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += element_as_double(t, i) == 0.0 ? 1 : 0;
  return n;
}

TEST(StorageNumerics, SubnormalsKeptMatchNumpy) {
  const RunResult r = run_numerics("numerics.mlpackage", Precision::kFp16);
  for (const char* out : {"restored", "clipped", "raw"}) {
    ASSERT_TRUE(r.outputs.count(out)) << out;
    expect_same_bits(r.outputs.at(out), numerics_npy(std::string("keep_") + out + ".npy"), out);
  }
  EXPECT_EQ(zeros(r.outputs.at("restored")), 0);  // the subnormal intermediates carried x through
}

// Planted defect: with the flush in to_storage removed, `restored` keeps its 16 values and the
// comparison with numpy's flushed results fails.
TEST(StorageNumerics, SubnormalsFlushedMatchNumpy) {
  const RunResult r = run_numerics("numerics.mlpackage", Precision::kFp16Ftz);
  for (const char* out : {"restored", "clipped", "raw"}) {
    ASSERT_TRUE(r.outputs.count(out)) << out;
    expect_same_bits(r.outputs.at(out), numerics_npy(std::string("flush_") + out + ".npy"), out);
  }
  EXPECT_EQ(zeros(r.outputs.at("restored")), 16);  // every subnormal intermediate became zero
  EXPECT_STREQ(precision_name(Precision::kFp16Ftz), "fp16-ftz");
}

TEST(StorageNumerics, FlushingIsAppliedToStoredValuesOnly) {
  // An fp16 input holding a subnormal is flushed on entry; an fp32 value is never touched.
  const uint16_t bits[] = {0x0001, 0x8200, 0x0400, 0x3c00};  // 2^-24, -2^-15, 2^-14, 1
  const Tensor x = Tensor::from_f16_bits({4}, bits);
  auto kept = to_storage(x, DType::kF16, Precision::kFp16);
  auto flushed = to_storage(x, DType::kF16, Precision::kFp16Ftz);
  ASSERT_TRUE(kept.is_ok() && flushed.is_ok());
  const uint16_t want[] = {0x0000, 0x8000, 0x0400, 0x3c00};
  EXPECT_EQ(std::memcmp(kept->raw(), bits, sizeof bits), 0);
  EXPECT_EQ(std::memcmp(flushed->raw(), want, sizeof want), 0);
  // The input tensor itself is unchanged (it may be a view of a mapped file).
  EXPECT_EQ(std::memcmp(x.raw(), bits, sizeof bits), 0);
  const float tiny[] = {1e-7f};
  auto f32 = to_storage(Tensor::from_f32({1}, tiny), DType::kF32, Precision::kFp16Ftz);
  ASSERT_TRUE(f32.is_ok());
  EXPECT_EQ(f32->data<float>()[0], 1e-7f);
}

// Planted defect: with check_finite stopping after the first NaN/Inf (as before), the run
// counts one op and names no last one; this test fails.
TEST(StorageNumerics, OverflowReachingAnOutputIsNamedWithTheOutputsItSpares) {
  const RunResult r = run_numerics("numerics.mlpackage", Precision::kFp16);
  ASSERT_TRUE(r.first_nonfinite.has_value());
  EXPECT_EQ(r.first_nonfinite->output, "big");
  ASSERT_TRUE(r.last_nonfinite.has_value());
  EXPECT_EQ(r.last_nonfinite->output, "raw");
  EXPECT_EQ(r.nonfinite_ops, 2);  // big and raw; clipped is finite
  const std::string reach = nonfinite_reach(r);
  EXPECT_NE(reach.find("it reaches output 'raw' (16 of 32 values non-finite)"), std::string::npos) << reach;
  EXPECT_NE(reach.find("outputs 'clipped', 'restored' are finite: later ops washed it out there"),
            std::string::npos)
      << reach;
  EXPECT_NE(reach.find("NaN/Inf in 2 op outputs, the last op #"), std::string::npos) << reach;
}

TEST(StorageNumerics, OverflowWashedOutOfEveryOutputSaysSo) {
  const RunResult r = run_numerics("overflow_recovers.mlpackage", Precision::kFp16);
  ASSERT_TRUE(r.first_nonfinite.has_value());
  EXPECT_EQ(r.first_nonfinite->output, "big");
  EXPECT_EQ(r.nonfinite_ops, 1);
  for (const auto& [name, t] : r.outputs) {
    for (int64_t i = 0; i < t.numel(); ++i) ASSERT_TRUE(std::isfinite(element_as_double(t, i))) << name;
  }
  expect_same_bits(r.outputs.at("clipped"), numerics_npy("keep_clipped.npy"), "clipped");
  EXPECT_EQ(nonfinite_reach(r),
            "every output is finite: later ops washed it out (no op after it produced NaN/Inf)");
}

TEST(StorageNumerics, NoNonfiniteNoReachSentence) {
  RunResult r;
  EXPECT_EQ(nonfinite_reach(r), "");
}

}  // namespace
}  // namespace sg
