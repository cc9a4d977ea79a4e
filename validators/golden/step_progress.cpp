#include "golden/step_progress.h"

#include "shardgate/io.h"

#include <fmt/format.h>

namespace sg::golden_cli {

std::string step_label(const ChainManifest& chain, const ChainStepRecord& record) {
  for (const ChainStep& step : chain.steps) {
    if (step.id != record.id) continue;
    if (step.is_combine) {
      return fmt::format("step {} ({})", step.id, step.combine == CombineKind::kSum ? "sum" : "concat");
    }
    return fmt::format("step {} ({})", step.id, path_basename(step.shard));
  }
  return "step " + record.id;
}

std::string step_detail(const ChainStepRecord& record) {
  if (record.is_combine) return fmt::format("{:.3f} s", record.seconds);
  return fmt::format("{:.3f} s, {} ops, peak {:.1f} MiB", record.seconds, record.stats.ops_run,
                     static_cast<double>(record.stats.peak_value_bytes) / (1 << 20));
}

}  // namespace sg::golden_cli
