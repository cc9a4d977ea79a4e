// Threads of the compute-heavy kernels: run on 2 and 3 threads, each kernel must really split
// its work (parallel_split_calls() grows; a kernel that runs single-threaded fails) and give
// outputs bit-identical to 1 thread (kernels split only independent output ranges). The thread
// count comes with the call (run_kernel installs it), not from the kernel. parallel_for must
// cover every index exactly once.
#include "../../runtime/core/parallel.h"
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <vector>

namespace sg::testing {
namespace {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

Tensor rand_f32(const Shape& s, uint32_t seed) {
  return f32s(s, random_values(static_cast<size_t>(numel(s)), seed));
}

// Runs `op` with 1, 2 and 3 threads: more than one thread must split the work, and every
// output must hold identical bytes.
void expect_thread_invariant(const std::string& op, const std::vector<HarnessInput>& inputs,
                             const std::vector<DType>& out_dtypes) {
  const int64_t before_one = parallel_split_calls();
  auto one = run_op(op, inputs, out_dtypes, Precision::kFp32, 1);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  EXPECT_EQ(parallel_split_calls(), before_one) << op << " split its work on 1 thread";
  for (int threads : {2, 3}) {
    const int64_t before = parallel_split_calls();
    auto many = run_op(op, inputs, out_dtypes, Precision::kFp32, threads);
    ASSERT_TRUE(many.is_ok()) << many.status().to_string();
    EXPECT_GT(parallel_split_calls(), before)
        << op << " ran single-threaded when given " << threads << " threads";
    ASSERT_EQ(many->size(), one->size());
    for (size_t i = 0; i < one->size(); ++i) {
      const Tensor& a = (*one)[i];
      const Tensor& b = (*many)[i];
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(0, std::memcmp(a.raw(), b.raw(), a.nbytes()))
          << op << " output " << i << " differs between 1 and " << threads << " threads";
    }
  }
}

TEST(KernelThreads, LinearFp16WeightIsThreadInvariant) {
  // 8 tokens × 1024 × 600: several weight row blocks, enough work to fan out.
  expect_thread_invariant("linear",
                          {HarnessInput::tensor("x", rand_f32({8, 1024}, 1)),
                           HarnessInput::tensor("weight", rand_f16({600, 1024}, 2)),
                           HarnessInput::tensor("bias", rand_f32({600}, 3))},
                          {DType::kF32});
}

TEST(KernelThreads, MatmulAndConvAreThreadInvariant) {
  expect_thread_invariant("matmul",
                          {HarnessInput::tensor("x", rand_f32({2, 20, 300}, 4)),
                           HarnessInput::tensor("y", rand_f32({300, 500}, 5))},
                          {DType::kF32});
  expect_thread_invariant("conv",
                          {HarnessInput::tensor("x", rand_f32({1, 512, 1, 8}, 6)),
                           HarnessInput::tensor("weight", rand_f16({384, 512, 1, 1}, 7))},
                          {DType::kF32});
}

TEST(KernelThreads, AttentionAndLayerNormAreThreadInvariant) {
  expect_thread_invariant("scaled_dot_product_attention",
                          {HarnessInput::tensor("query", rand_f32({1, 8, 8, 64}, 8)),
                           HarnessInput::tensor("key", rand_f32({1, 8, 16, 64}, 9)),
                           HarnessInput::tensor("value", rand_f32({1, 8, 16, 64}, 10))},
                          {DType::kF32});
  expect_thread_invariant("layer_norm",
                          {HarnessInput::tensor("x", rand_f32({64, 512}, 11)),
                           HarnessInput::tensor("axes", i32_list({-1}))},
                          {DType::kF32});
}

TEST(KernelThreads, SoftmaxEinsumAndLstmAreThreadInvariant) {
  expect_thread_invariant("softmax",
                          {HarnessInput::tensor("x", rand_f32({64, 1024}, 12)),
                           HarnessInput::tensor("axis", i32s({}, {-1}))},
                          {DType::kF32});
  expect_thread_invariant("einsum",
                          {HarnessInput::tuple("values", {rand_f32({2, 16, 1, 256}, 13),
                                                          rand_f32({2, 256, 1, 300}, 14)}),
                           HarnessInput::tensor("equation", str("nchw,nwhu->nchu"))},
                          {DType::kF32});
  // 8 steps, hidden 128: the input product (8 × 512 × 128) spans two weight row blocks.
  expect_thread_invariant("lstm",
                          {HarnessInput::tensor("x", rand_f32({8, 1, 128}, 16)),
                           HarnessInput::tensor("initial_h", rand_f32({1, 128}, 17)),
                           HarnessInput::tensor("initial_c", rand_f32({1, 128}, 18)),
                           HarnessInput::tensor("weight_ih", rand_f32({512, 128}, 19)),
                           HarnessInput::tensor("weight_hh", rand_f32({512, 128}, 20)),
                           HarnessInput::tensor("output_sequence", bools({}, {1}))},
                          {DType::kF32, DType::kF32, DType::kF32});
}

TEST(KernelThreads, ConstexprDecodeIsThreadInvariant) {
  // A 4-bit iOS16 LUT weight of 512 rows × 256: rows are decoded in parallel.
  auto indices = Tensor::zeros(DType::kU8, {512 * 256 / 2});
  auto shape = Tensor::zeros(DType::kU32, {2});
  ASSERT_TRUE(indices.is_ok() && shape.is_ok());
  uint8_t* idx = indices->mutable_data<uint8_t>();
  for (int64_t i = 0; i < indices->numel(); ++i) idx[i] = static_cast<uint8_t>(i * 37 + 11);
  shape->mutable_data<uint32_t>()[0] = 512;
  shape->mutable_data<uint32_t>()[1] = 256;
  expect_thread_invariant("constexpr_lut_to_dense",
                          {HarnessInput::tensor("indices", *indices),
                           HarnessInput::tensor("lut", rand_f16({16}, 15)),
                           HarnessInput::tensor("shape", *shape)},
                          {DType::kF16});
}

TEST(ParallelFor, CoversEveryIndexOnceForAnyThreadCount) {
  for (int threads : {1, 2, 3, 7}) {
    ParallelScope scope(threads);
    EXPECT_EQ(parallel_threads(), threads);
    for (int64_t n : {0, 1, 2, 5, 64, 1001}) {
      for (int64_t grain : {1, 3, 100}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        parallel_for(n, grain, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << "n=" << n << " grain=" << grain << " threads=" << threads << " index " << i;
        }
      }
    }
  }
  EXPECT_EQ(parallel_threads(), 1) << "ParallelScope must restore the previous count";
}

TEST(ParallelFor, NestedCallsRunSerially) {
  ParallelScope scope(4);
  std::atomic<int> inner_calls{0};
  parallel_for(4, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      parallel_for(100, 1, [&](int64_t, int64_t) { inner_calls++; });
    }
  });
  EXPECT_EQ(inner_calls.load(), 4) << "a nested parallel_for must make exactly one call";
}

}  // namespace
}  // namespace sg::testing
