// golden-validator subcommands. Each add_*_command registers one subcommand on the root app;
// when the user picks it, its parse callback stores the work in `result.run`, and main runs
// it after parsing has finished (so --help of every level and usage errors are handled before
// anything is read). run() returns the process exit code (0 pass, 1 gate failed, 2 bad input,
// 3 internal error).
#pragma once

#include <functional>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::golden_cli {

struct CommandResult {
  std::function<int()> run;  // set by the subcommand the user picked
};

// compare: candidate dumps against reference dumps, no execution (cmd_compare.cpp).
void add_compare_command(CLI::App& app, CommandResult& result);
// regate: re-apply thresholds to a saved JSON report (cmd_regate.cpp).
void add_regate_command(CLI::App& app, CommandResult& result);
// probe: a quantized shard against its FP16 baseline on seeded random unit-norm inputs.
void add_probe_command(CLI::App& app, CommandResult& result);
// run: a chain of shards end to end (or teacher-forced) against golden dumps.
void add_run_command(CLI::App& app, CommandResult& result);
// record: make golden dumps by running a baseline chain.
void add_record_command(CLI::App& app, CommandResult& result);
// exec: run one shard on given inputs and write its outputs.
void add_exec_command(CLI::App& app, CommandResult& result);
// weights: static diagnostics of the compressed weights of shards (cmd_weights.cpp).
void add_weights_command(CLI::App& app, CommandResult& result);
// culprits: op-by-op comparison of quantized shards with their baselines (cmd_culprits.cpp).
void add_culprits_command(CLI::App& app, CommandResult& result);
// advise: the weights of a failing chain to keep at fp16 so it passes (cmd_advise.cpp).
void add_advise_command(CLI::App& app, CommandResult& result);
// diff: regressions between two reports of one tool (cmd_diff.cpp).
void add_diff_command(CLI::App& app, CommandResult& result);
// merge: the slice reports of one CI fan-out into one report, either tool (cmd_merge.cpp).
void add_merge_command(CLI::App& app, CommandResult& result);

}  // namespace sg::golden_cli
