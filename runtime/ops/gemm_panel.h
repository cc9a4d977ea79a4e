// The many-token GEMM of the avx512 level: Y = X · Wᵀ (+ bias) for prompts of tens to
// thousands of tokens, where the skinny kernel of linear_kernel.cpp (weights widened in
// registers at every use, 8 tokens at a time) re-reads and re-widens each weight M/8 times.
//
// Here a block of weight rows is decoded once per call, and each K block's slice of it is
// widened (once per chunk of up to 192 tokens) into an fp32 panel that interleaves two rows
// per 8-k chunk (one zmm = rows n, n+1 × 8 k-lanes); each activation 8-k chunk is broadcast
// to both halves. A register block of 4 row pairs × 6 tokens (24 zmm
// accumulators) does 24 FMAs per 10 loads. K is blocked so a panel slice stays in L2; the
// 8-lane partial sums wait in memory between K blocks. Every output is still the sum of 8
// lane partials over k ≡ lane (mod 8), accumulated in k order with fused multiply-add and
// combined in the same tree as the skinny kernel, so both kernels (and any thread count) give
// the same bits.
#pragma once

#include "ops/linear_kernel.h"

#include <cstdint>

namespace sg::gemm_panel {

// From this many tokens on, gemm_x_wt at the avx512 level takes the panel path.
constexpr int64_t kMinTokens = 16;

// Variant name in the gemm_x_wt grammar (tokens x rows of the register block, then the ISA).
constexpr const char* kVariantName = "gemm_x_wt_6x8__avx512f";

// Same contract as gemm_x_wt (linear_kernel.h); w.dtype is kF16 or kF32. Only call on a CPU
// with AVX-512F (cpu_level() >= kAvx512). Splits row blocks over parallel_threads().
void gemm(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias, float* y,
          int64_t ldy);
// The same with x and y as fp16 bits: x widened as it is packed, each y rounded to fp16 (to
// nearest even) as it is stored. The bits of widening x, gemm() and rounding y.
void gemm_f16io(const uint16_t* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
                uint16_t* y, int64_t ldy);

}  // namespace sg::gemm_panel
