// Variant names of the dispatched kernel families defined in runtime/ops (the GEMM's is in
// linear_kernel.h), gathered by active_kernel_variants (kernel_variants.cpp).
#pragma once

#include "shardgate/cpu.h"

namespace sg {

// The weight decoders of constexpr.cpp: LUT4 fp16 tables by pshufb (SSSE3), integer codes
// widened 8 at a time (AVX2), blockwise scales applied 8 at a time (F16C).
const char* weight_decode_variant_name(CpuLevel level);

}  // namespace sg
