// The one place where a weight meets activations: Y = X · Wᵀ (+ bias).
//
// Every weight-consuming kernel (linear, matmul, einsum, conv, attention, lstm) routes its
// products through gemm_x_wt(). The weight is read in its stored dtype (fp16 bits are widened
// 8 at a time in registers, never copied to an fp32 matrix first) and the activations are
// fp32. A compressed weight (LUT indices, int8/int4 with scales) arrives as a StreamedWeight
// and is decoded here, one L2-sized block of rows at a time, right before the block is
// multiplied: this is where a weight's decoding meets the product that consumes it, and a
// shard's weights are never expanded to a dense copy. Below 16 tokens at the avx512 level, a
// stream that offers a register form (RegisterDecode) skips even the block: each 6-row group is
// decoded 8 columns at a time into the registers the FMAs read (register_decoders.h). Accumulation is fp32 with a fixed summation order per output element (8 lane-partial
// sums over k ≡ lane mod 8, combined in a fixed tree), so the result does not depend on the
// thread count or on how the output is partitioned.
#pragma once

#include "shardgate/cpu.h"
#include "shardgate/op_context.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <memory>
#include <string_view>

namespace sg {

// N rows of K elements, row i at data + i·ld elements. dtype is kF16 (bits) or kF32.
// With `stream` set, data is unused and row i is row (row0 + i) of the stream's dense
// weight viewed as [*, K] (ld must equal K); the stream's dtype is the rows' dtype.
struct WeightRows {
  DType dtype = DType::kF32;
  const void* data = nullptr;
  int64_t n = 0;
  int64_t k = 0;
  int64_t ld = 0;
  const StreamedWeight* stream = nullptr;
  int64_t row0 = 0;
};

// Y[m, n] = Σ_k X[m, k] · W[n, k] + bias[n] for m < M, n < W.n, with K = W.k.
// x: fp32, row m at x + m·ldx. bias: fp32 [W.n] or null. y: fp32, row m at y + m·ldy.
// Runs on parallel_threads() threads split over n.
void gemm_x_wt(const float* x, int64_t M, int64_t ldx, const WeightRows& w, const float* bias,
               float* y, int64_t ldy);
// gemm_x_wt with x and y in fp16 storage (fp16 bits; the executor's fp16 modes): the bits of
// widening x, gemm_x_wt, and rounding y to fp16 (to nearest even), which is what it does below
// gemm_panel::kMinTokens tokens or the avx512 level. From there the panel GEMM widens x as it
// packs it and rounds y as it stores it, so a 512-token MoE layer never makes the fp32 copies
// of its 25 MB activations (GemmPanel.Fp16InAndOutEqualsWideningMultiplyingAndRoundingBitForBit).
void gemm_x_wt_f16io(const uint16_t* x, int64_t M, int64_t ldx, const WeightRows& w,
                     const float* bias, uint16_t* y, int64_t ldy);
// The same product computed by the variant of one CPU level (shardgate/cpu.h; a level above
// the CPU's must not be asked for): gemm_x_wt calls it with cpu_level(); tests compare the
// variants with each other and with their references.
void gemm_x_wt_at(CpuLevel level, const float* x, int64_t M, int64_t ldx, const WeightRows& w,
                  const float* bias, float* y, int64_t ldy);
// "gemm_x_wt_8x6__avx512f": tokens per block x weight rows per group, then the ISA.
const char* gemm_x_wt_variant_name(CpuLevel level);
// The avx512 8-token kernel with a compressed weight decoded in its registers (RegisterDecode):
// "gemm_x_wt_8x6_regdecode__avx512f", or "..__avx512fp16" where 8-bit codes are decoded with
// fp16 arithmetic; null below the avx512 level.
const char* gemm_x_wt_registers_variant_name(CpuLevel level);

// dst[c, r] = src[r, c] for a [rows, cols] matrix whose rows are lds elements apart; dst is
// dense [cols, rows]. Used to bring a [K, N] operand into the [N, K] rows gemm_x_wt reads.
template <typename T>
void transpose_copy(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) dst[c * rows + r] = src[r * lds + c];
  }
}

// A kernel's weight parameter: the compressed stream the context offers for it, or else the
// tensor as stored. rows() views it as [dim(0), numel / dim(0)] (a conv weight's rows are its
// output channels). Copies share the stream, so rows() stays valid while any copy lives.
class WeightOperand {
 public:
  static Result<WeightOperand> get(OpContext& ctx, std::string_view name);
  // A weight held as a tensor (never streamed).
  static WeightOperand of(Tensor t);

  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t d) const { return shape_[static_cast<size_t>(d)]; }
  bool streamed() const { return stream_ != nullptr; }
  Result<WeightRows> rows();

 private:
  Shape shape_;
  Tensor tensor_;
  Tensor holder_;  // fp32 copy of a tensor stored in another numeric dtype
  std::shared_ptr<const StreamedWeight> stream_;
};


}  // namespace sg
