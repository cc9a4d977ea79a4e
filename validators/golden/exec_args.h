// Options the executing subcommands (probe, run, record, exec) share: --precision and
// --threads, and the NAME=FILE.npy form of --input.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace sg::golden_cli {

struct ExecArgs {
  std::string precision = "fp16";
  int threads = 1;

  void add_to(CLI::App& app);
  // fp16 (every fp16-typed value stored in fp16, as the device does) or fp32 (reference mode:
  // separates quantization error from fp16 storage error).
  Precision precision_value() const;
};

// Reads every NAME=FILE.npy argument; errors name the argument.
Result<std::map<std::string, Tensor>> read_named_inputs(const std::vector<std::string>& args);

// Prints "note: ..." lines (nothing when quiet).
void print_notes(const std::vector<std::string>& notes, int log_level);

}  // namespace sg::golden_cli
