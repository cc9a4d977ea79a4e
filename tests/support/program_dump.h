// A line-per-fact text dump of a Program and a ModelInfo, for tests that compare a reader's
// output with an expected dump written by a Python oracle (tests/data/format/proto/
// gen_proto_fixtures.py documents the format; this is its C++ twin) and for readable diffs
// when two programs differ.
#pragma once

#include "shardgate/program.h"
#include "shardgate/shard.h"

#include <string>

namespace sg::testing {

// "tensor<fp16, [2]> [0x3c00 0xc100]", "tensor<fp16, [4]> blob(@model_path/..., 64)",
// "tuple<...> (v, v)", "dict<...> {k: v}".
std::string dump_value(const Value& value);
// Inputs bindings as "%name" or "<value>", space separated.
std::string dump_argument(const Argument& arg);
std::string dump_program(const Program& program);
std::string dump_model_info(const ModelInfo& info);

}  // namespace sg::testing
