// active_kernel_variants (shardgate/cpu.h): the variant each dispatched kernel family runs at
// the current CPU level. A family with variants adds its name function here.
#include "core/half_variants.h"
#include "ops/gemm_panel.h"
#include "ops/kernel_variants.h"
#include "ops/linear_kernel.h"
#include "shardgate/cpu.h"

namespace sg {

std::vector<std::string> active_kernel_variants() {
  const CpuLevel level = cpu_level();
  std::vector<std::string> names = {gemm_x_wt_variant_name(level), half_span_variant_name(level),
                                     weight_decode_variant_name(level)};
  // From gemm_panel::kMinTokens tokens on, the avx512 level multiplies from a packed panel.
  if (level >= CpuLevel::kAvx512) names.push_back(gemm_panel::kVariantName);
  // Below that, a compressed weight with a register form is decoded inside the 8-token kernel.
  if (const char* registers = gemm_x_wt_registers_variant_name(level)) names.push_back(registers);
  return names;
}

}  // namespace sg
