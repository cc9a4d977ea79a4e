// golden-validator: executes shards on the CPU or reads saved dumps, compares them against FP16
// references and gates fidelity. Subcommands: compare, regate, probe, run, record, exec, weights, culprits, advise, diff, merge.
// Exit codes: 0 gate passed, 1 gate failed, 2 bad input or usage, 3 internal error.
#include "common/args.h"
#include "common/golden_args.h"
#include "common/help_text.h"
#include "golden/commands.h"
#include "shardgate/executor.h"
#include "shardgate/status.h"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

int main(int argc, char** argv) {
  // A short-lived process that runs shards: keep freed activation memory for reuse.
  sg::keep_freed_tensor_memory();
  try {
    CLI::App app{"golden-validator: fidelity of Core ML shards against FP16 golden dumps"};
    app.name("golden-validator");
    sg::cli::set_version(app, "golden-validator");
    app.require_subcommand(1);
    app.fallthrough(false);

    sg::golden_cli::CommandResult result;
    sg::golden_cli::add_compare_command(app, result);
    sg::golden_cli::add_regate_command(app, result);
    sg::golden_cli::add_probe_command(app, result);
    sg::golden_cli::add_run_command(app, result);
    sg::golden_cli::add_record_command(app, result);
    sg::golden_cli::add_exec_command(app, result);
    sg::golden_cli::add_weights_command(app, result);
    sg::golden_cli::add_culprits_command(app, result);
    sg::golden_cli::add_advise_command(app, result);
    sg::golden_cli::add_diff_command(app, result);
    sg::golden_cli::add_merge_command(app, result);
    if (sg::Status s = sg::cli::apply_help_footers(app, "golden-validator"); !s.is_ok()) {
      std::cerr << "golden-validator: " << s.message() << "\n";
      return sg::kExitInternal;
    }

    if (auto stop = sg::cli::parse_command_line(app, argc, argv)) return *stop;
    if (!result.run) {
      std::cerr << "golden-validator: usage error: no subcommand\n";
      return sg::kExitBadInput;
    }
    return result.run();
  } catch (const std::exception& e) {
    std::cerr << "golden-validator: internal error: " << e.what() << "\n";
    return sg::kExitInternal;
  } catch (...) {
    std::cerr << "golden-validator: internal error\n";
    return sg::kExitInternal;
  }
}
