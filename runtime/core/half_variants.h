// The variant name of the bulk fp16 conversions at a CPU level (for active_kernel_variants).
#pragma once

#include "shardgate/cpu.h"

namespace sg {
const char* half_span_variant_name(CpuLevel level);
}  // namespace sg
