// A unary elementwise function of fp16 inputs as a table of its 65536 results.
//
// In fp16 mode every activation is stored as fp16, so a unary op (silu, gelu, sigmoid, tanh, ...)
// only ever sees 65536 distinct inputs. Once a function has been applied to as many elements
// as the table has entries, the rest of the process looks its results up instead of computing
// them: silu's scalar expf and division were 2.7% of an 8-token MoE shard's time (bench/README.md,
// "Unary ops of fp16 inputs looked up"). The table holds the function's own fp32 results for every
// fp16 bit pattern, so a lookup gives the bits calling it gives (a NaN for a NaN: which NaN an
// operation on two NaNs returns follows the operand order the compiler picked at each call
// site, so no two compiled copies of a function promise a NaN's sign or payload); the op's
// output is still fp32, rounded to fp16 by the executor as before.
//
// Only for stateless functions (captureless lambdas: empty types), since the table is one per
// function type; a function whose result depends on a captured value (threshold's alpha) is
// always called. Process-wide and built once under std::call_once, so any thread may use it.
// A table is 256 KiB and lives as long as the process, like the worker pool: it is not a value,
// so `--max-memory` does not count it (at most one per op in map_x_costly's list, 20).
#pragma once

#include "shardgate/half.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <type_traits>

namespace sg::kern {

// Elements a function is applied to, process-wide, before its table is built: the table's own
// size, so building it never costs more than the work it replaces has cost already.
constexpr int64_t kF16TableAfter = int64_t{1} << 16;

// The table of f over every fp16 input (index: the input's bits), or nullptr while f has been
// applied to fewer than kF16TableAfter elements; `n` elements are about to be mapped.
template <typename F>
const float* f16_table(F f, int64_t n) {
  static_assert(std::is_empty_v<F>, "a table is one per function type: stateless functions only");
  static std::atomic<int64_t> seen{0};
  static std::once_flag once;
  static std::unique_ptr<float[]> table;
  if (seen.load(std::memory_order_relaxed) < kF16TableAfter) {
    if (seen.fetch_add(n, std::memory_order_relaxed) + n < kF16TableAfter) return nullptr;
  }
  std::call_once(once, [&] {
    // The inputs widened by the same routine the maps widen fp16 operands with (float_rows.h),
    // so every input, NaNs included, is the float f would have been called with.
    auto t = std::make_unique<float[]>(size_t{1} << 16);
    auto bits = std::make_unique<uint16_t[]>(size_t{1} << 16);
    for (uint32_t h = 0; h < (uint32_t{1} << 16); ++h) bits[h] = static_cast<uint16_t>(h);
    f16_to_f32_span(bits.get(), t.get(), size_t{1} << 16);
    for (uint32_t h = 0; h < (uint32_t{1} << 16); ++h) t[h] = f(t[h]);
    table = std::move(t);
  });
  return table.get();
}

}  // namespace sg::kern
