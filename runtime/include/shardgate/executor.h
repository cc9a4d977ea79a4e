// Executor: runs one function of a shard on the CPU.
//
// Values live in a table keyed by name and are released after their last use. const and
// constexpr ops are not run up front: a weight is decoded when the op that consumes it runs
// and released after, so a shard is never expanded as a whole. Any value can be captured by
// name. State buffers live in a StateStore owned by the caller, so they carry across calls.
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/shard.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sg {

// State buffers by state-parameter name. A missing state is created as zeros (MLState
// semantics) on first use.
struct StateStore {
  std::map<std::string, Tensor> values;
};

struct RunOptions {
  Precision precision = Precision::kFp16;
  std::vector<std::string> capture;  // value names to keep (intermediates)
  bool capture_all = false;          // keep every compute op output
  int threads = 1;                   // results are identical for any value
  bool stop_on_nonfinite = false;    // stop at the first op producing NaN/Inf
  // Compressed weights (LUT, int8/int4 with scales) feeding linear, conv, gather or a
  // transpose_y matmul are decoded block by block inside the consuming kernel instead of as a
  // whole; results are bit-identical either way. Off only to compare the two.
  bool stream_weights = true;
  bool profile = false;  // time every op (RunStats::op_times)
  // Weights decoded whole (decode-once: a conv's weight, one read by several ops) are kept by
  // the Executor and reused by its later runs (a sequence of calls, a probe's seeds) instead of
  // being decoded again per call, up to a quarter of the memory budget in total
  // (memory_budget.h); the values are the same bits. Never with weight_overrides (a run may
  // replace what a cached weight was decoded from). Off only to compare.
  bool reuse_decoded_weights = true;
  // Compile-time values to take from here instead of the shard (value name -> tensor), e.g. a
  // compressed weight replaced by its FP16 baseline's weight (golden-validator advise asks
  // "would the chain pass with this weight kept at fp16?" without re-converting). An
  // overridden value is neither decoded nor streamed from its compressed form; the tensor must
  // have the value's declared shape and a dtype convertible to its declared one. A name that is
  // not a compile-time value of the function is a usage error. Not owned; may be null.
  const std::map<std::string, Tensor>* weight_overrides = nullptr;
};

// The first op whose output holds NaN or Inf (fp16 overflow is the classic ANE failure).
struct NonFinite {
  std::string function;
  int64_t op_index = 0;
  std::string op_type;
  std::string output;
  int64_t flat_index = 0;
  double value = 0;
};

// Wall time of one op of the program over a run (RunOptions::profile).
struct OpTime {
  int64_t op_index = 0;  // statement index in its block
  int depth = 0;         // 0 for the function's own ops, 1 inside a cond/while_loop block, ...
  std::string op_type;
  std::string output;    // first output name
  int64_t calls = 0;     // > 1 for ops inside loop bodies
  double seconds = 0;    // kernel (with the weights it decodes) and output storage; a cond or
                         // while_loop includes the ops of its blocks
};

// How a run reads one compile-time value (runtime/exec/weight_plan.h decides, once per weight
// when the run is prepared).
enum class WeightRead : uint8_t {
  kView,        // a dense const, used in place
  kDecodeOnce,  // decoded whole at its first read, kept until its last
  kStream,      // decoded block by block inside the one kernel that reads it
};
const char* weight_read_name(WeightRead r);  // "view", "decode-once", "stream"

// One constexpr value a run read: the decision and what the run then did.
struct WeightReadStat {
  std::string value;
  std::string format;  // row of runtime/ops/weight_formats.def ("int8_per_channel", ...)
  WeightRead read = WeightRead::kDecodeOnce;
  std::string reason;  // why that read ("read by conv", "2 reads", "read once by linear", ...)
  int64_t elements = 0;          // of the dense value
  int64_t decodes = 0;           // times the dense value was computed
  int64_t streams = 0;           // times a kernel took it as a stream
  int64_t decoded_elements = 0;  // elements written by decoding, whole or block by block:
                                 // elements × the times it was decoded, so > elements means
                                 // some part of it was decoded twice
  int64_t reused = 0;            // times taken decoded from an earlier run of the Executor
};

struct RunStats {
  int64_t ops_run = 0;          // compute ops executed
  int64_t weights_decoded = 0;  // compile-time values materialised
  int64_t weights_streamed = 0;  // weight reads served block by block (never materialised)
  int64_t weights_overridden = 0;  // compile-time values taken from RunOptions::weight_overrides
  int64_t weights_reused = 0;  // decoded by an earlier run of the Executor (reuse_decoded_weights)
  uint64_t reused_weight_bytes = 0;  // what the Executor keeps decoded after this run
  // Every constexpr value the run decoded or streamed, by name order (a const is always read
  // in place and not listed).
  std::vector<WeightReadStat> weight_reads;
  uint64_t peak_value_bytes = 0;  // peak bytes of live values (activations + decoded weights)
  std::vector<OpTime> op_times;   // RunOptions::profile only; compute ops in first-run order
  double seconds = 0;
};

struct RunResult {
  std::map<std::string, Tensor> outputs;   // function outputs by name
  std::map<std::string, Tensor> captured;  // requested intermediates by name
  std::optional<NonFinite> first_nonfinite;
  // How far a NaN/Inf travelled: the number of compute-op outputs that held one, and the last
  // op whose output did (equal to the first when nothing after it did). Whether it reached the
  // function outputs or later ops washed it out (a clip, a select, a masked softmax) is read
  // from `outputs`: nonfinite_reach() in fidelity.h words it.
  int64_t nonfinite_ops = 0;
  std::optional<NonFinite> last_nonfinite;
  RunStats stats;
};

class Executor {
 public:
  explicit Executor(std::shared_ptr<const Shard> shard);

  // Checks that every op of the function is known and that inputs match the declared types
  // (dtype convertible, shape equal where known). An unknown op is an input error naming the
  // op, the function and the statement.
  Status validate(std::string_view function) const;

  // Runs `function` with `inputs` (converted to the declared dtypes; float inputs may be given
  // as fp32). Unknown capture names are an error.
  Result<RunResult> run(std::string_view function, const std::map<std::string, Tensor>& inputs,
                        const RunOptions& options, StateStore* states = nullptr) const;

  const Shard& shard() const { return *shard_; }

 private:
  std::shared_ptr<const Shard> shard_;
  // How each weight is read, decided once per function (runtime/exec/weight_plan.h) and kept
  // for the Executor's later runs; copies share it.
  struct WeightPlans;
  std::shared_ptr<WeightPlans> plans_;
  // Weights decoded whole by earlier runs (RunOptions::reuse_decoded_weights); copies share it.
  struct DecodedWeights;
  std::shared_ptr<DecodedWeights> decoded_;
};

// Decodes one compile-time value (the output of a const / constexpr_* op, following
// constexpr chains) without running anything else. Used by tests, the contract checks and
// the weight listing.
// Process-wide, once: freed tensors below 32 MB go back to the heap and stay mapped (glibc's mmap
// threshold fixed at its 32 MB maximum, no trimming), so an op's output of the size another op
// just freed reuses those pages instead of faulting in fresh zeroed ones (a 512-token MoE layer:
// 181k page faults, ~4% of its time). The peak is unchanged; the process no longer shrinks after
// it. The golden-validator and the benches call it at start; the runtime never does by itself,
// since a library should not change its host process's allocator (the Python package does not).
// Does nothing without glibc.
void keep_freed_tensor_memory();

Result<Tensor> materialize_weight(const Shard& shard, const Function& function,
                                  std::string_view value_name);

// The compressed form of one compile-time value as the executor streams it to a weight-
// consuming kernel (op_context.h), or nullopt when its op is decoded only as a whole. The
// stream holds what it reads; the shard must outlive it.
Result<std::optional<StreamedWeight>> stream_weight(const Shard& shard, const Function& function,
                                                    std::string_view value_name);

}  // namespace sg
