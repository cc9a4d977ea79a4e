// Thread-count independence of the compute-heavy kernels: the same op run on 1, 2 and 3 threads
// must give bit-identical outputs (kernels split only independent output ranges), and
// parallel_for must cover every index exactly once.
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

// Runs `op` with 1, 2 and 3 threads and expects identical bytes in every output.
void expect_thread_invariant(const std::string& op, const std::vector<HarnessInput>& inputs,
                             const std::vector<DType>& out_dtypes) {
  auto one = run_op(op, inputs, out_dtypes, Precision::kFp32, 1);
  ASSERT_TRUE(one.is_ok()) << one.status().to_string();
  for (int threads : {2, 3}) {
    auto many = run_op(op, inputs, out_dtypes, Precision::kFp32, threads);
    ASSERT_TRUE(many.is_ok()) << many.status().to_string();
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
