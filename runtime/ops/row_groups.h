// The 8-token kernels' row groups: how many rows a group holds, and where the next group
// starts, for the prefetch that asks for a group's rows one group ahead of their use. One rule
// for dot_rows8 over fp16 rows (linear_kernel.cpp) and for the register decoders' code rows
// (register_decoders.h).
#pragma once

#include <cstdint>

namespace sg {

// Rows per group of the 8-token avx512 kernels (dot_rows8 over fp16 rows, linear_kernel.cpp, and
// the register decoders, register_decoders.h): 3 zmm row pairs, rows 2p and 2p + 1 in a
// register's halves, × 8 tokens = 24 accumulators of the 32 zmm registers, each activation
// broadcast feeding 3 FMAs.
constexpr int kPairRowGroup = 6;

// The first row of the group of `group` rows after the group at `row`, or `row` itself where
// no whole group follows before `end`: the last group asks for its own rows again, so no
// prefetch address is formed past the rows there are.
constexpr int64_t next_whole_group(int64_t row, int64_t group, int64_t end) {
  return row + 2 * group <= end ? row + group : row;
}

}  // namespace sg
