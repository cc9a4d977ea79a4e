// When an 8-bit shift-scale weight's products may be rounded to fp16 by Veltkamp's split
// (split_round_f16 in register_decoders.h) instead of the conversion round trip: every scale
// stored as fp16 (the split's constant 8193 rests on an 11-bit significand) and every nonzero
// product of a scale with a code a normal fp16 number. Portable: the range decoder decides it
// once, when it makes the stream (RegisterDecode::split_rounding, constexpr.cpp); the kernels
// only read the flag.
#pragma once

#include "shardgate/half.h"
#include "shardgate/op_context.h"

#include <cmath>
#include <cstdint>

namespace sg::regdec {

// Whether scale s keeps s · code a normal fp16 number (or zero) for every code up to
// max_code in magnitude.
inline bool split_admits(float s, float max_code) {
  const float a = std::fabs(s);
  return a >= 0x1p-14f && a * max_code <= 65504.0f;
}

// The largest fp16 magnitude (bits without the sign) that split_admits for codes up to
// max_code: the admitted magnitudes are one interval, from the smallest normal (0x0400) to this,
// since fp16 magnitudes order as their bits do. Found by bisection with split_admits itself.
inline uint16_t split_max_magnitude(float max_code) {
  uint16_t lo = 0x0400, hi = 0x7BFF;  // lo admitted for any code <= 65504 · 2^14; hi the largest finite
  if (!split_admits(f16_to_f32(lo), max_code)) return 0;
  while (lo < hi) {
    const uint16_t mid = static_cast<uint16_t>(lo + (hi - lo + 1) / 2);
    if (split_admits(f16_to_f32(mid), max_code)) {
      lo = mid;
    } else {
      hi = static_cast<uint16_t>(mid - 1);
    }
  }
  return lo;
}

// Whether the split may round every product of a weight whose scales are `scale` and whose
// codes reach max_code in magnitude (128 signed, 255 unsigned). Scales not stored as fp16 never
// qualify. The range decoder runs this at every run over one scale per row (37 k for the MoE
// shard's per-channel int8 weights), so each scale is checked as bits: its magnitude within
// [0x0400, split_max_magnitude], which is split_admits of its value.
inline bool split_exact(const ParamView& scale, float max_code) {
  const uint16_t* h = scale.f16();
  if (h == nullptr) return false;
  const uint16_t top = split_max_magnitude(max_code);
  if (top == 0) return false;
  // One pass with no early exit and one unsigned compare (m - 0x0400 wraps below 0x0400), so
  // the compiler vectorises it.
  const int64_t n = scale.size();
  const uint16_t span = static_cast<uint16_t>(top - 0x0400);
  uint16_t out = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t m = static_cast<uint16_t>((h[i] & 0x7FFF) - 0x0400);
    out |= static_cast<uint16_t>(m > span);
  }
  return out == 0;
}

}  // namespace sg::regdec
