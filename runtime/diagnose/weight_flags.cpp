// Checks of the weight diagnostic flags (weight_flags.def).
#include "diagnose/weight_flags.h"

#include <fmt/format.h>

#include <cmath>

namespace sg::diagnose {

std::optional<std::string> flag_outlier_scale(const WeightDiagnostic& w) {
  // Only linear forms have a step; only large groups have one scale serving many weights
  // (blocks of 32..128 are the remedy, not the cause).
  if (w.code_bits == 0 || !(w.step_median > 0) || w.group_elements < kOutlierScaleMinGroup) {
    return std::nullopt;
  }
  if (!(w.outlier_ratio >= kOutlierScaleMinRatio) || !(w.est_rel_error >= kOutlierScaleMinError)) {
    return std::nullopt;
  }
  return fmt::format(
      "one scale per {} weights is set by outliers: max |w| is {:.0f}x the rms in group {}, so "
      "a typical weight spans {:.2f} quantization steps and rounding costs an estimated {:.1f}% "
      "relative error ({:.2f} of {} bits carry information)",
      w.group_elements, w.outlier_ratio, w.outlier_group, w.typical_codes,
      100.0 * w.est_rel_error, w.effective_bits, w.code_bits);
}

std::optional<std::string> flag_baseline_error(const WeightDiagnostic& w) {
  if (!w.has_baseline || !(w.rel_error >= kBaselineErrorMin)) return std::nullopt;
  // At 1 or more the decoded weight is no closer to the baseline's than zeros would be: not a
  // coarse compression of it but another weight (sqrt 2 for unrelated weights of one scale,
  // 1.41 for a layer-1 FP16 shard given as the baseline of a layer-0 shard). Even 1-bit codes
  // of Gaussian weights stay near 0.6.
  const std::string other = w.rel_error >= 1.0
                                ? ", no closer to it than zeros: not the weight this one was "
                                  "converted from? (another layer or model given as the baseline)"
                                : "";
  return fmt::format("relative error {:.3f} against the baseline's '{}' (SQNR {:.1f} dB){}",
                     w.rel_error, w.baseline_name, w.sqnr_db, other);
}

const std::vector<WeightFlagInfo>& weight_flag_table() {
  static const std::vector<WeightFlagInfo> table = {
#define SG_WEIGHT_FLAG(id, fn, reason) {#id, &fn, reason},
#include "diagnose/weight_flags.def"
#undef SG_WEIGHT_FLAG
  };
  return table;
}

}  // namespace sg::diagnose

namespace sg {

std::vector<WeightFlag> weight_flags_for(const WeightDiagnostic& w) {
  std::vector<WeightFlag> out;
  for (const diagnose::WeightFlagInfo& f : diagnose::weight_flag_table()) {
    if (auto msg = f.check(w)) out.push_back({f.id, *msg});
  }
  return out;
}

}  // namespace sg
