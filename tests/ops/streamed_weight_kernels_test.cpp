// Kernels that consume a weight block by block (linear, conv, gather, matmul with transpose_y): given the weight as a
// StreamedWeight they must produce exactly the bytes they produce from the dense tensor, for
// any thread count, with shapes that span several row blocks and (conv) several groups. The
// harness refuses a dense read of a streamed parameter, so a kernel that silently ignores the
// stream fails here.
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace sg::testing {
namespace {

// rand_f16: support/op_harness.h.
Tensor rand_f16_as_f32(const Shape& s, uint32_t seed) {
  auto t = to_f32(rand_f16(s, seed));
  return t.is_ok() ? *t : Tensor();
}

// Runs `op` once with `weight_name` as a plain tensor and then streamed on 1, 2 and 3 threads.
void expect_same_with_stream(const std::string& op, std::vector<HarnessInput> inputs,
                             const std::string& weight_name, const Tensor& weight,
                             DType out_dtype = DType::kF32) {
  std::vector<HarnessInput> dense = inputs;
  dense.push_back(HarnessInput::tensor(weight_name, weight));
  auto want = run_op(op, dense, {out_dtype}, Precision::kFp32, 1);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  std::vector<HarnessInput> streamed = inputs;
  streamed.push_back(HarnessInput::streamed(weight_name, weight));
  for (int threads : {1, 2, 3}) {
    auto got = run_op(op, streamed, {out_dtype}, Precision::kFp32, threads);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const Tensor& a = (*want)[0];
    const Tensor& b = (*got)[0];
    ASSERT_EQ(shape_str(a.shape()), shape_str(b.shape()));
    ASSERT_EQ(a.dtype(), b.dtype());
    EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()))
        << op << ": streamed weight gives other bytes (" << threads << " threads)";
  }
}

TEST(StreamedWeightKernels, LinearOverManyRowBlocks) {
  // K = 1024 fp16: 64 rows per 128 KiB block, so 600 rows are 10 blocks (the last partial).
  expect_same_with_stream("linear",
                          {HarnessInput::tensor("x", rand_f16_as_f32({2, 5, 1024}, 1)),
                           HarnessInput::tensor("bias", rand_f16_as_f32({600}, 2))},
                          "weight", rand_f16({600, 1024}, 3));
  expect_same_with_stream("linear", {HarnessInput::tensor("x", rand_f16_as_f32({3, 40}, 4))},
                          "weight", rand_f16_as_f32({7, 40}, 5));
}

TEST(StreamedWeightKernels, LinearShapeErrorsStillNameTheWeight) {
  auto r = run_op("linear",
                  {HarnessInput::tensor("x", rand_f16_as_f32({2, 16}, 1)),
                   HarnessInput::streamed("weight", rand_f16({4, 15}, 2))},
                  {DType::kF32}, Precision::kFp32);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("weight [4, 15] does not match x [2, 16]"), std::string::npos)
      << r.status().message();
}

TEST(StreamedWeightKernels, MatmulWithTransposedConstantWeight) {
  // A tied LM head: hidden [1, 8, 1024] · embeddingᵀ with the table [600, 1024] compressed.
  expect_same_with_stream("matmul",
                          {HarnessInput::tensor("x", rand_f16_as_f32({1, 8, 1024}, 20)),
                           HarnessInput::tensor("transpose_y", bools({}, {1}))},
                          "y", rand_f16({600, 1024}, 21));
  // transpose_x too: x [3, 64, 5] read as [3, 5, 64].
  expect_same_with_stream("matmul",
                          {HarnessInput::tensor("x", rand_f16_as_f32({3, 64, 5}, 22)),
                           HarnessInput::tensor("transpose_x", bools({}, {1})),
                           HarnessInput::tensor("transpose_y", bools({}, {1}))},
                          "y", rand_f16({7, 64}, 23));
  // A batched y is decoded whole and broadcast as usual.
  expect_same_with_stream("matmul",
                          {HarnessInput::tensor("x", rand_f16_as_f32({2, 4, 16}, 24)),
                           HarnessInput::tensor("transpose_y", bools({}, {1}))},
                          "y", rand_f16({2, 6, 16}, 25));
}

TEST(StreamedWeightKernels, ConvGroupsStartAtTheirOwnRows) {
  // Pointwise 2-D conv, 2 groups of 1024 input channels: each group's 100 output rows are
  // rows 0-99 and 100-199 of the weight, each several row blocks long.
  expect_same_with_stream("conv",
                          {HarnessInput::tensor("x", rand_f16_as_f32({1, 2048, 1, 4}, 6)),
                           HarnessInput::tensor("groups", i32s({}, {2})),
                           HarnessInput::tensor("bias", rand_f16_as_f32({200}, 7))},
                          "weight", rand_f16({200, 1024, 1, 1}, 8));
  // 1-D conv with a 3-wide kernel, dilation and custom padding, 3 groups.
  expect_same_with_stream("conv",
                          {HarnessInput::tensor("x", rand_f16_as_f32({2, 6, 17}, 9)),
                           HarnessInput::tensor("groups", i32s({}, {3})),
                           HarnessInput::tensor("pad_type", str("custom")),
                           HarnessInput::tensor("pad", i32_list({2, 1})),
                           HarnessInput::tensor("dilations", i32_list({2}))},
                          "weight", rand_f16({9, 2, 3}, 10));
}

TEST(StreamedWeightKernels, GatherDecodesOnlyTheRowsItReads) {
  expect_same_with_stream("gather",
                          {HarnessInput::tensor("indices", i32s({2, 3}, {3, 0, 49, 7, 7, 1})),
                           HarnessInput::tensor("axis", i32s({}, {0}))},
                          "x", rand_f16({50, 4, 16}, 11), DType::kF16);
  // A rank-1 table is decoded whole and gathered as usual.
  expect_same_with_stream("gather", {HarnessInput::tensor("indices", i32s({3}, {4, 4, 0}))}, "x",
                          rand_f16({9}, 12), DType::kF16);
}

TEST(StreamedWeightKernels, GatherOutOfRangeIndexIsAnErrorNotARead) {
  auto r = run_op("gather",
                  {HarnessInput::tensor("indices", i32s({2}, {1, 50})),
                   HarnessInput::streamed("x", rand_f16({50, 8}, 13))},
                  {DType::kF16}, Precision::kFp32);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("index 50 at flat position 1"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sg::testing
