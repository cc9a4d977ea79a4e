// What a progress line says about one chain step (run, record): its id and shard, and the
// figures of a -v line.
#pragma once

#include "shardgate/chain.h"

#include <string>

namespace sg::golden_cli {

// "step L3.attn (L3_attn_lut4.mlpackage)", "step L3.combine (sum)".
std::string step_label(const ChainManifest& chain, const ChainStepRecord& record);
// "0.123 s, 57 ops, peak 1.5 MiB" (combine steps: the time only).
std::string step_detail(const ChainStepRecord& record);

}  // namespace sg::golden_cli
