// One shift-scale parameter (a ParamView element) read by a decoder: fp16, the usual dtype,
// widened by one F16C instruction; other dtypes through ParamView's generic read. Shared by
// the tile decoders (constexpr.cpp, the avx2 level) and the register decoders
// (register_decoders.h, avx512), so it carries only the F16C target and inlines into both.
#pragma once

#include "shardgate/op_context.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace sg {

__attribute__((target("avx,f16c"))) inline float param_f16c(const ParamView& v, int64_t i) {
  if (const uint16_t* h = v.f16()) return _cvtsh_ss(h[i]);
  return v[i];
}

}  // namespace sg
#endif
