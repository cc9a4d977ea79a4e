// Options the executing subcommands (probe, run, record, exec) share: --precision, --threads
// and --max-memory, the NAME=FILE.npy form of --input, and the dtype check of given inputs
// (--cast).
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/program.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::golden_cli {

struct ExecArgs {
  std::string precision = "fp16";
  int threads = 1;
  // --subnormals keep|flush|both (--flush-subnormals = flush): what fp16 storage does with
  // subnormal results. An assumption, documented as one: the ANE's behaviour is not known here.
  std::string subnormals = "keep";
  bool flush_subnormals = false;

  void add_to(CLI::App& app);
  // fp16 (every fp16-typed value stored in fp16, as the device does), fp16-ftz (the same with
  // subnormals flushed: --subnormals flush) or fp32 (reference mode: separates quantization
  // error from fp16 storage error). With --subnormals both: the first of the two (keep).
  Precision precision_value() const;
  // --subnormals both: the command runs twice (keep, then flush) and reports both views.
  bool both_subnormal_views() const;
  // kUsage: flushing asked with --precision fp32 (there is no fp16 storage to flush), or `both`
  // given to a command that does not support it (`command` names it; "" = supported).
  Status validate(const std::string& unsupported_both = "") const;
};

// The check label of a subnormal view (--subnormals both): {"subnormals", "keep" | "flush"}.
std::pair<std::string, std::string> subnormal_label(Precision p);

// A tensor given on the command line and the file it came from (for messages).
struct GivenInput {
  Tensor tensor;
  std::string file;
};

// --max-memory SIZE: sets the process's memory budget (memory_budget.h) while parsing.
void add_max_memory_option(CLI::App& app);

// Reads every NAME=FILE.npy argument; errors name the argument.
Result<std::map<std::string, GivenInput>> read_named_inputs(const std::vector<std::string>& args);

// Checks given inputs against the declared inputs of `fn` (of `shard_path`): every name must be
// an input, and its dtype must be the declared one. Inputs are never coerced silently: a
// mismatch (an fp64, fp16 or int32 .npy for an fp32 input) is a kShape error naming the input,
// the file, the expected and the found dtype, unless `cast` (--cast) is set; then a float file
// is converted to a float input and an integer (or bool) file to an integer input (numpy astype
// semantics, fp16 rounds to nearest even) and a note says so. Across classes (float file for an
// integer input, or the reverse) stays an error even with --cast: truncating a float to an
// index is never what was meant.
Result<std::map<std::string, Tensor>> check_given_inputs(const std::map<std::string, GivenInput>& given,
                                                         const Function& fn,
                                                         const std::string& shard_path, bool cast,
                                                         std::vector<std::string>& notes);

// The --cast flag's help text (exec and probe).
extern const char* const kCastHelp;

// Parses --output-position-axis NAME=N|none arguments (probe, record): N >= 0 or "none" (no
// position axis: the whole tensor is one row). A malformed argument is a kUsage error quoting it.
Result<std::map<std::string, std::optional<int64_t>>> parse_output_position_axes(
    const std::vector<std::string>& args);

// Prints "note: ..." lines (nothing when quiet).
void print_notes(const std::vector<std::string>& notes, int log_level);

}  // namespace sg::golden_cli
