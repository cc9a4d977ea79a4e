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

// Whether the split may round every product of a weight whose scales are `scale` and whose
// codes reach max_code in magnitude (128 signed, 255 unsigned). Scales not stored as fp16 never
// qualify.
inline bool split_exact(const ParamView& scale, float max_code) {
  const uint16_t* h = scale.f16();
  if (h == nullptr) return false;
  for (int64_t i = 0; i < scale.size(); ++i) {
    if (!split_admits(f16_to_f32(h[i]), max_code)) return false;
  }
  return true;
}

}  // namespace sg::regdec
