// run --culprits: from a failing chain run to the ops where its error enters.
#pragma once

#include "common/golden_args.h"
#include "shardgate/chain.h"
#include "shardgate/golden.h"
#include "shardgate/golden_report.h"

namespace sg::golden_cli {

// After the run's verdict: when a check failed, the culprit op search (culprits.h) on every
// shard step up to and including the teacher-forced group that made the first failing
// checkpoint (a failure at the logits is often error that entered layers earlier), each
// against its baseline from --baseline-replace, on the inputs that step receives from the
// goldens (as `culprits --inputs-from`). Sets report.culprits and report.culprits_note; a passing run gets only the
// note. Errors: a baseline that cannot be named or opened, a stateful step (kUnsupported).
Status add_run_culprits(GoldenReport& report, const ChainManifest& chain, const GoldenSource& goldens,
                        const cli::BaselineArgs& baseline, Precision precision, int threads);

}  // namespace sg::golden_cli
