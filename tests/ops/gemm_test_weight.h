// The lane-order reference, and a random GEMM weight for the kernel tests (kernel_variants_test,
// gemm_panel_test, register_decode_test): N rows of K,
// drawn as fp16 bits and as fp32 (the widened fp16 values when `f16`), offered to gemm_x_wt
// in place or as a StreamedWeight, as a shard's weight reaches it. `w32` is what a reference
// multiplies by. Not movable: the stream reads this object's vectors.
#pragma once

#include "ops/linear_kernel.h"
#include "shardgate/half.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace sg::testing {

// The reference of every gemm_x_wt variant, y[m, n] for one (m, n): 8 lane accumulators over
// k ≡ lane (mod 8), each product fused into its lane (the vector variants) or rounded first
// (the scalar one), then the fixed tree ((0+4)+(2+6))+((1+5)+(3+7)).
inline float reference_dot(const float* x, const float* w, int64_t K, bool fused = true) {
  float acc[8] = {};
  for (int64_t k = 0; k < K; ++k) {
    float& a = acc[k % 8];
    a = fused ? std::fma(w[k], x[k], a) : a + w[k] * x[k];
  }
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

struct GemmTestWeight {
  std::vector<uint16_t> w16;
  std::vector<float> w32;
  StreamedWeight stream;
  WeightRows rows;

  GemmTestWeight(int64_t n, int64_t k, bool f16, bool streamed, std::mt19937& rng,
                 std::uniform_real_distribution<float>& dist)
      : w16(static_cast<size_t>(n * k)), w32(w16.size()) {
    for (size_t i = 0; i < w16.size(); ++i) {
      w16[i] = f32_to_f16(dist(rng));
      w32[i] = f16 ? f16_to_f32(w16[i]) : dist(rng);
    }
    stream.shape = {n, k};
    stream.dtype = f16 ? DType::kF16 : DType::kF32;
    stream.decode = [this, f16](int64_t first, int64_t count, void* dst) {
      if (f16) {
        std::memcpy(dst, w16.data() + first, static_cast<size_t>(count) * 2);
      } else {
        std::memcpy(dst, w32.data() + first, static_cast<size_t>(count) * 4);
      }
    };
    rows.dtype = stream.dtype;
    rows.n = n;
    rows.k = k;
    rows.ld = k;
    if (streamed) {
      rows.stream = &stream;
    } else {
      rows.data = f16 ? static_cast<const void*>(w16.data()) : static_cast<const void*>(w32.data());
    }
  }
  GemmTestWeight(const GemmTestWeight&) = delete;
  GemmTestWeight& operator=(const GemmTestWeight&) = delete;
};

}  // namespace sg::testing
