// ops/float_rows.h reads fp16/fp32 operands in place, row by row, instead of widening them to
// an fp32 copy first. Its results must be the bits of the path it replaces (to_f32 of each
// operand, then broadcast_for_each): compared here on edge shapes (scalars, rank 0, broadcast
// on either side and in the middle, rows longer than its 1024-value block and not a multiple
// of it, empty dims), fp16 and fp32 operands mixed, and fp16 specials (subnormals, ±inf, NaN).
#include "ops/broadcast.h"
#include "ops/float_rows.h"
#include "shardgate/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace sg {
namespace {

Tensor make(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-8.0f, 8.0f);
  const int64_t n = numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  // fp16 specials every few elements: subnormal, ±inf, NaN, ±0.
  const float specials[] = {5.96e-8f, -6.1e-5f, INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 65504.0f};
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i % 7 == 3 ? specials[(i / 7) % 8] : u(rng);
  if (dtype == DType::kF32) return Tensor::from_f32(shape, v);
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
  return Tensor::from_f16_bits(shape, h);
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The path float_rows replaces: both operands widened, then broadcast_for_each.
template <typename F>
std::vector<float> reference(const Shape& out, const Tensor& x, const Tensor& y, F f) {
  const Tensor a = *to_f32(x), b = *to_f32(y);
  std::vector<float> d(static_cast<size_t>(numel(out)));
  kern::broadcast_for_each<2>(out, {&a.shape(), &b.shape()}, [&](int64_t i, const std::array<int64_t, 2>& k) {
    d[static_cast<size_t>(i)] = f(a.data<float>()[k[0]], b.data<float>()[k[1]]);
  });
  return d;
}

struct Case {
  Shape x, y, out;
};

TEST(FloatRows, BinaryMatchesTheWidenedPathBitForBit) {
  const std::vector<Case> cases = {
      {{}, {}, {}},
      {{}, {5}, {5}},
      {{5}, {1}, {5}},
      {{2, 3, 4}, {3, 1}, {2, 3, 4}},
      {{2, 1, 4}, {1, 3, 1}, {2, 3, 4}},
      {{1, 3, 2500}, {1, 3, 2500}, {1, 3, 2500}},  // rows over two blocks plus a tail
      {{1, 4, 3, 1100}, {1, 4, 3, 1}, {1, 4, 3, 1100}},  // the MoE gate weighting's shape
      {{1, 1, 1100}, {2, 3, 1}, {2, 3, 1100}},
      {{2, 1}, {1, 2048}, {2, 2048}},
      {{0, 3}, {1, 3}, {0, 3}},
      {{3, 0}, {3, 1}, {3, 0}},
  };
  const auto mul = [](float a, float b) { return a * b; };
  const auto sub = [](float a, float b) { return a - b; };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    for (DType dx : {DType::kF16, DType::kF32}) {
      for (DType dy : {DType::kF16, DType::kF32}) {
        const Tensor x = make(c.x, dx, seed++), y = make(c.y, dy, seed++);
        for (int op = 0; op < 2; ++op) {
          std::vector<float> got(static_cast<size_t>(numel(c.out)));
          std::vector<float> want;
          if (op == 0) {
            kern::float_rows_binary(c.out, x, y, got.data(), mul);
            want = reference(c.out, x, y, mul);
          } else {
            kern::float_rows_binary(c.out, x, y, got.data(), sub);
            want = reference(c.out, x, y, sub);
          }
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(bits(got[i]), bits(want[i]))
                << shape_str(c.x) << " " << dtype_name(dx) << " op " << op << " " << shape_str(c.y) << " "
                << dtype_name(dy) << ": element " << i << " is " << got[i] << ", expected " << want[i];
          }
        }
      }
    }
  }
}

TEST(FloatRows, UnaryMatchesTheWidenedPathBitForBit) {
  for (const Shape& s : {Shape{}, Shape{7}, Shape{3, 2500}, Shape{0}, Shape{1024}, Shape{1025}}) {
    for (DType dt : {DType::kF16, DType::kF32}) {
      const Tensor x = make(s, dt, 99);
      const auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };
      std::vector<float> got(static_cast<size_t>(x.numel()));
      kern::float_rows_unary(x, got.data(), silu);
      const Tensor a = *to_f32(x);
      for (int64_t i = 0; i < x.numel(); ++i) {
        ASSERT_EQ(bits(got[static_cast<size_t>(i)]), bits(silu(a.data<float>()[i])))
            << shape_str(s) << " " << dtype_name(dt) << ": element " << i;
      }
    }
  }
}

TEST(FloatRows, RowBlocksCoverEveryRowInOrder) {
  // Rows shorter than, equal to and longer than one 1024-value block; empty.
  for (const Shape& s : {Shape{4, 7}, Shape{3, 1024}, Shape{2, 2500}, Shape{5, 1}, Shape{0, 3}}) {
    for (DType dt : {DType::kF16, DType::kF32}) {
      const Tensor x = make(s, dt, 7);
      const Tensor a = *to_f32(x);
      const int64_t row = s.back();
      std::vector<float> seen;
      int64_t last_row = -1;
      kern::float_rows_unary_blocks(x, row, [&](int64_t r, const float* v, int64_t n) {
        ASSERT_GE(r, last_row);
        if (r != last_row) {
          ASSERT_EQ(static_cast<int64_t>(seen.size()), r * row) << "row " << r << " starts late";
        }
        last_row = r;
        seen.insert(seen.end(), v, v + n);
      });
      ASSERT_EQ(static_cast<int64_t>(seen.size()), x.numel()) << shape_str(s);
      for (int64_t i = 0; i < x.numel(); ++i) {
        ASSERT_EQ(bits(seen[static_cast<size_t>(i)]), bits(a.data<float>()[i])) << shape_str(s) << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace sg
