// golden-validator compare: candidate dumps (e.g. captured on a device) against reference dumps,
// matched by tensor name; nothing is executed. Dumps covering several calls (call_NNN/
// subdirectories, one dump each) are compared call by call.
#include "common/golden_args.h"
#include "golden/commands.h"
#include "golden/exec_args.h"
#include "shardgate/fidelity.h"
#include "shardgate/golden.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>

#include <memory>

namespace sg::golden_cli {
namespace {

struct CompareOptions {
  std::string candidate;
  std::string reference;
  cli::GoldenInputArgs input;
  cli::GoldenCommonArgs common;
};

// compare X X passes every check trivially; the Mac capture scripts do it on purpose (a dump
// reads back), but given by mistake in CI it would pass forever, so the report says so.
void note_self_comparison(const CompareOptions& o, FidelityRun& run) {
  std::error_code ec;
  if (std::filesystem::equivalent(o.candidate, o.reference, ec)) {
    run.notes.insert(run.notes.begin(),
                     fmt::format("the candidate and the reference are the same files ({}): every "
                                 "check compares a tensor with itself",
                                 o.reference));
  }
}

int run_compare(const CompareOptions& o) {
  if (Status s = o.common.log.validate(); !s.is_ok()) return cli::report_error(s, "compare", o.common);
  auto policy = cli::build_gate_policy(o.common, {o.reference});
  if (!policy) return cli::report_error(policy.status(), "compare", o.common);
  auto open_options = o.input.options();
  if (!open_options) return cli::report_error(open_options.status(), "compare", o.common);
  // Dumps covering several calls (call_NNN/ subdirectories) are compared call by call.
  auto cand_calls = sequence_dump_calls(o.candidate);
  if (!cand_calls) return cli::report_error(cand_calls.status(), "compare", o.common);
  auto ref_calls = sequence_dump_calls(o.reference);
  if (!ref_calls) return cli::report_error(ref_calls.status(), "compare", o.common);
  if (!cand_calls->empty() || !ref_calls->empty()) {
    auto run = compare_sequences(o.candidate, o.reference, *open_options, o.common.metrics.options(*policy));
    if (!run) return cli::report_error(run.status(), "compare", o.common);
    note_self_comparison(o, *run);
    print_notes(run->notes, o.common.log.level());
    return cli::finish_golden_report(std::move(*run), std::move(*policy), o.common);
  }
  auto candidate = open_golden_source(o.candidate, *open_options);
  if (!candidate) return cli::report_error(candidate.status(), "compare", o.common);
  auto reference = open_golden_source(o.reference, *open_options);
  if (!reference) return cli::report_error(reference.status(), "compare", o.common);
  auto run = compare_sources(**candidate, **reference, o.common.metrics.options(*policy));
  if (!run) return cli::report_error(run.status(), "compare", o.common);
  note_self_comparison(o, *run);
  print_notes(run->notes, o.common.log.level());
  return cli::finish_golden_report(std::move(*run), std::move(*policy), o.common);
}

}  // namespace

void add_compare_command(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand(
      "compare", "Compare candidate dumps against reference dumps by tensor name (no execution)");
  sub->add_option("--candidate", options->candidate,
                  "Candidate dump: a directory with manifest.json, a .safetensors file, or a "
                  "directory of call_NNN/ dumps (a sequence of calls)")
      ->option_text("DIR|FILE")
      ->required();
  sub->add_option("--reference", options->reference,
                  "Reference (golden) dump: a directory with manifest.json, a .safetensors file, or "
                  "a directory of call_NNN/ dumps")
      ->option_text("DIR|FILE")
      ->required();
  options->input.add_to(*sub);
  options->common.add_to(*sub);
  // compare executes nothing, but converts rows to double in chunks checked against the same
  // budget as run's values (compare_tensors), so it takes the same option.
  add_max_memory_option(*sub);
  sub->callback([&result, options] { result.run = [options] { return run_compare(*options); }; });
}

}  // namespace sg::golden_cli
