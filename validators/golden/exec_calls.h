// exec's sequence mode: the inputs of every call of one shard run several times in one process,
// with state carried (MIL state buffers by the executor; explicit recurrent inputs by --carry).
//
// Where the calls come from (at most one of):
//  - --calls DIR: one subdirectory per call, taken in name order (000/, 001/, ... or call0/,
//    call1/, ...; names are sorted by their numeric part when they have one, so call10 follows
//    call9), each holding NAME.npy for the inputs that change per call. Inputs given with
//    --input are the same for every call.
//  - --calls FILE.npz: a NumPy archive (np.savez; np.savez_compressed too) whose every member
//    NAME.npy stacks the calls along its first axis: member[k] is call k's value of input NAME.
//    All members must hold the same number of calls. Errors name the archive and the member.
//  - --chunk NAME:AXIS:SIZE: the --input NAME is cut along AXIS into chunks of SIZE (the last
//    may not be shorter: a ragged tail is an error, not padded), one call per chunk;
//    --offset-input NAME2 then gives input NAME2 the index of the chunk's first element along
//    AXIS (a KV-cache `start` / position), in NAME2's declared dtype and shape.
// --carry OUT=IN feeds output OUT of call k to input IN of call k+1 (recurrent models whose
// state is an explicit input/output pair, e.g. Silero VAD's hidden and cell state); call 0
// takes IN from --input, the call directory, or zeros of the declared type.
#pragma once

#include "golden/exec_args.h"
#include "shardgate/program.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <map>
#include <string>
#include <vector>

namespace sg::golden_cli {

struct SequenceArgs {
  std::string calls_dir;
  std::string chunk;          // NAME:AXIS:SIZE
  std::string offset_input;   // with --chunk
  std::vector<std::string> carry;  // OUT=IN

  bool active() const { return !calls_dir.empty() || !chunk.empty(); }
};

struct CallInputs {
  std::string label;                       // "call 0 (DIR/000)" / "call 1 (hidden[4:8] along axis 1)"
  std::map<std::string, GivenInput> files;  // inputs of this call as read (checked later)
};

// The per-call inputs before the dtype check: `given` are the --input files (the same for
// every call, except the chunked one). kUsage errors name the option.
Result<std::vector<CallInputs>> sequence_calls(const SequenceArgs& args,
                                               const std::map<std::string, GivenInput>& given,
                                               const Function& fn);

// --carry pairs, checked against the function (OUT an output, IN an input).
Result<std::vector<std::pair<std::string, std::string>>> carry_pairs(const SequenceArgs& args,
                                                                     const Function& fn);

}  // namespace sg::golden_cli
