// How each weight of a function is read in a run: the one decision per weight (issue 11 item
// 3), made once when a run is prepared, from the weight's format (ops/weight_formats.def) and
// the ops that read it. The executor follows it; nothing else decides.
#pragma once

#include "ops/weight_formats.h"
#include "shardgate/executor.h"
#include "shardgate/program.h"

#include <map>
#include <set>
#include <string>

namespace sg {

struct WeightReadDecision {
  const WeightFormat* format = nullptr;  // null for an op the table does not know
  WeightRead read = WeightRead::kDecodeOnce;
  std::string reason;  // why, in words (`exec --profile` prints it)
};

struct WeightReadOptions {
  bool stream = true;                 // RunOptions::stream_weights
  std::set<std::string> kept;         // function outputs and captures: needed whole
};

// Every value a constexpr op of `fn`'s block produces that some op reads (compute ops, nested
// blocks and other constexpr ops), keyed by name (a const is always viewed in place and not
// listed):
//  - view: a constexpr whose format is read in place (none today);
//  - stream: read exactly once, by a kernel that consumes weights block by block (linear;
//    matmul with transpose_y; gather along axis 0) outside any loop or cond body, in a format
//    with a range decoder: decoded block by block into the kernel, never whole;
//  - decode once: everything else (a conv, which reads a weight once per batch item and
//    output tile; several readers; a loop body; a kept value; a format without a range
//    decoder; streaming off): decoded whole at its first read, kept until its last, released.
// So no weight is decoded twice in a run.
std::map<std::string, WeightReadDecision> plan_weight_reads(const Function& fn,
                                                            const WeightReadOptions& options);

}  // namespace sg
