// The flag table (weight_flags.def) and its checks.
#pragma once

#include "shardgate/weight_diagnostics.h"

#include <optional>
#include <string>

namespace sg::diagnose {

// Thresholds (runtime/diagnose/README.md, "Flags").
inline constexpr int64_t kOutlierScaleMinGroup = 256;     // weights per scale
inline constexpr double kOutlierScaleMinRatio = 10.0;     // max |w| / rms in the group
inline constexpr double kOutlierScaleMinError = 0.05;     // estimated rounding error
inline constexpr double kBaselineErrorMin = 0.3;          // measured relative error

#define SG_WEIGHT_FLAG(id, fn, reason) std::optional<std::string> fn(const WeightDiagnostic& w);
#include "diagnose/weight_flags.def"
#undef SG_WEIGHT_FLAG

struct WeightFlagInfo {
  const char* id;
  std::optional<std::string> (*check)(const WeightDiagnostic&);
  const char* reason;
};

// Every row of weight_flags.def, in file order.
const std::vector<WeightFlagInfo>& weight_flag_table();

}  // namespace sg::diagnose
