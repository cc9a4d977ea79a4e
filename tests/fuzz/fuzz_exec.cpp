// Opens a shard made from the input and executes it: the whole path a fuzzed model takes
// through `golden-validator exec` (parser, validation, seeded inputs, every kernel, weight
// decoding and streaming, the memory budget).
//
// Input: model.mil text, optionally followed by a line "@@weight.bin" and the bytes of
// weights/weight.bin, which BLOBFILE literals ("@model_path/weights/weight.bin") then read.
// The shard's `main` function (else its first) runs once with seeded inputs, under a small
// memory budget so a declared shape cannot make one input take gigabytes or minutes.
#include "fuzz_support.h"
#include "shardgate/executor.h"
#include "shardgate/memory_budget.h"
#include "shardgate/probe.h"
#include "shardgate/readers.h"

#include <string>
#include <string_view>

namespace {

constexpr std::string_view kWeightSeparator = "\n@@weight.bin\n";
constexpr uint64_t kBudgetBytes = uint64_t{64} << 20;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  sg::set_memory_budget(kBudgetBytes);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = sg::fuzz::as_text(data, size);
  const size_t sep = text.find(kWeightSeparator);
  if (sep != std::string_view::npos) {
    sg::fuzz::write_scratch("weights/weight.bin", text.substr(sep + kWeightSeparator.size()));
    text = text.substr(0, sep);
  } else {
    sg::fuzz::remove_scratch("weights/weight.bin");  // left by an earlier input
  }
  auto program = sg::parse_mil_text(text, "model.mil");
  if (!program || program->functions.empty()) return 0;
  const std::string function =
      program->function("main") ? "main" : program->functions.front().name;

  auto shard = sg::Shard::from_program(std::move(*program), sg::ModelInfo{}, sg::fuzz::scratch_dir());
  const sg::Executor executor(shard);
  if (!executor.validate(function).is_ok()) return 0;
  auto inputs = sg::make_seeded_inputs(*shard, function, /*seed=*/1);
  if (!inputs) return 0;
  // Odd and even input sizes take the two weight paths (streamed block by block, decoded
  // whole), which must give identical results; fp16 storage is what the tools default to.
  sg::RunOptions options;
  options.stream_weights = size % 2 == 0;
  sg::StateStore states;
  (void)executor.run(function, inputs->inputs, options, &states);
  return 0;
}
