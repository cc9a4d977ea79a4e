// Elementwise float maps that read fp16 or fp32 operands where they are, a row at a time.
//
// In fp16 mode every activation is stored as fp16; reading one with get_f32 / to_f32 first
// writes a whole fp32 copy (a 512 x 12288 MoE activation: 25 MB written and read again) before
// the op's own pass. Here each row (the last dim) is widened in blocks of kBlock values into a
// buffer on the stack and used at once. The values are the same floats (fp16 -> fp32 is
// exact), so results are bit-identical to the to_f32 path (tests/ops/float_rows_test.cpp).
#pragma once

#include "ops/broadcast.h"
#include "shardgate/half.h"
#include "shardgate/tensor.h"

#include <algorithm>
#include <array>
#include <cstdint>

namespace sg::kern {

// True for the dtypes these maps read directly.
inline bool float_rows_dtype(DType t) { return t == DType::kF16 || t == DType::kF32; }

namespace float_rows_detail {

constexpr int64_t kBlock = 1024;

// Values [i, i + n) of t (fp16 or fp32) as fp32: a pointer into t, or into buf after widening.
inline const float* span(const Tensor& t, int64_t i, int64_t n, float* buf) {
  if (t.dtype() == DType::kF32) return t.data<float>() + i;
  f16_to_f32_span(t.data<uint16_t>() + i, buf, static_cast<size_t>(n));
  return buf;
}

// The operand's shape without its last dim, and that last dim (1 for a scalar).
inline Shape prefix(const Shape& s) { return s.empty() ? Shape{} : Shape(s.begin(), s.end() - 1); }
inline int64_t last(const Shape& s) { return s.empty() ? 1 : s.back(); }

}  // namespace float_rows_detail

// d[i] = f(x[i]) for x fp16 or fp32, d of x.numel() floats.
template <typename F>
void float_rows_unary(const Tensor& x, float* d, F f) {
  namespace fr = float_rows_detail;
  alignas(64) float buf[fr::kBlock];
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; i += fr::kBlock) {
    const int64_t m = std::min(fr::kBlock, n - i);
    const float* a = fr::span(x, i, m, buf);
    for (int64_t j = 0; j < m; ++j) d[i + j] = f(a[j]);
  }
}

// x (fp16 or fp32) as rows of `row` values in order: f(row index, values as fp32, count) is
// called for consecutive blocks of each row (a row longer than kBlock comes in several calls).
template <typename F>
void float_rows_unary_blocks(const Tensor& x, int64_t row, F f) {
  namespace fr = float_rows_detail;
  alignas(64) float buf[fr::kBlock];
  if (row <= 0) return;
  const int64_t rows = x.numel() / row;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j0 = 0; j0 < row; j0 += fr::kBlock) {
      const int64_t m = std::min(fr::kBlock, row - j0);
      f(r, fr::span(x, r * row + j0, m, buf), m);
    }
  }
}

// d[o] = f(x[.], y[.]) with numpy broadcasting to `out` (broadcast_shapes of x and y), x and y
// fp16 or fp32: one broadcast step per row of the last dim, then the row itself, where each
// operand either runs along the row or repeats one value.
template <typename F>
void float_rows_binary(const Shape& out, const Tensor& x, const Tensor& y, float* d, F f) {
  namespace fr = float_rows_detail;
  if (numel(out) == 0) return;
  const int64_t inner = fr::last(out);
  const int64_t lx = fr::last(x.shape()), ly = fr::last(y.shape());
  const Shape po = fr::prefix(out), px = fr::prefix(x.shape()), py = fr::prefix(y.shape());
  alignas(64) float bx[fr::kBlock];
  alignas(64) float by[fr::kBlock];
  auto row = [&](int64_t r, const std::array<int64_t, 2>& k) {
    const int64_t x0 = k[0] * lx, y0 = k[1] * ly;
    float* dr = d + r * inner;
    for (int64_t j0 = 0; j0 < inner; j0 += fr::kBlock) {
      const int64_t m = std::min(fr::kBlock, inner - j0);
      if (lx == inner && ly == inner) {
        const float* a = fr::span(x, x0 + j0, m, bx);
        const float* b = fr::span(y, y0 + j0, m, by);
        for (int64_t j = 0; j < m; ++j) dr[j0 + j] = f(a[j], b[j]);
      } else if (lx == inner) {
        const float* a = fr::span(x, x0 + j0, m, bx);
        const float b = *fr::span(y, y0, 1, by);
        for (int64_t j = 0; j < m; ++j) dr[j0 + j] = f(a[j], b);
      } else if (ly == inner) {
        const float a = *fr::span(x, x0, 1, bx);
        const float* b = fr::span(y, y0 + j0, m, by);
        for (int64_t j = 0; j < m; ++j) dr[j0 + j] = f(a, b[j]);
      } else {
        const float a = *fr::span(x, x0, 1, bx);
        const float b = *fr::span(y, y0, 1, by);
        for (int64_t j = 0; j < m; ++j) dr[j0 + j] = f(a, b);
      }
    }
  };
  if (po.empty()) {
    row(0, {0, 0});
    return;
  }
  broadcast_for_each<2>(po, {&px, &py}, row);
}

}  // namespace sg::kern
