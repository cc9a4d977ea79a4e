// numpy broadcasting for elementwise kernels: the output shape of several operands and a loop
// that visits every output element with each operand's flat index.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/tensor.h"

#include <array>
#include <cstdint>
#include <vector>

namespace sg::kern {

// numpy rules: align right, dims equal or 1. Mismatch is a kShape error naming the shapes.
Result<Shape> broadcast_shapes(const OpContext& ctx, const std::vector<Shape>& shapes);

// Strides of `in` aligned to the (broadcast) output shape: 0 for broadcast dims.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls f(out_index, in_index) for every output element in row-major order, where
// in_index[k] is the flat index into operand k (shape in_shapes[k], broadcast to out).
template <size_t N, typename F>
void broadcast_for_each(const Shape& out, const std::array<const Shape*, N>& in_shapes, F&& f) {
  const int64_t total = numel(out);
  if (total == 0) return;
  const size_t rank = out.size();
  std::array<std::vector<int64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) strides[k] = broadcast_strides(*in_shapes[k], out);
  std::array<int64_t, N> idx{};
  if (rank == 0) {
    f(int64_t{0}, idx);
    return;
  }
  const int64_t inner = out[rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t o = 0;
  while (o < total) {
    std::array<int64_t, N> base{};
    for (size_t k = 0; k < N; ++k) {
      int64_t b = 0;
      for (size_t d = 0; d + 1 < rank; ++d) b += counter[d] * strides[k][d];
      base[k] = b;
    }
    for (int64_t j = 0; j < inner; ++j, ++o) {
      for (size_t k = 0; k < N; ++k) idx[k] = base[k] + j * strides[k][rank - 1];
      f(o, idx);
    }
    // advance the outer counter (all dims but the last)
    for (size_t d = rank - 1; d-- > 0;) {
      if (++counter[d] < out[d]) break;
      counter[d] = 0;
    }
  }
}

}  // namespace sg::kern
