// Oracle op cases: tests/data/ops/<family>/cases.json files written by numpy generator scripts.
//
// {"cases": [{"id": "...", "op": "add", "precision": "fp16" | "fp32" (default fp16),
//   "inputs": {"x": {"npy": "file.npy", "dtype": "fp16"},          npy converted to dtype
//              "axis": {"value": -1, "dtype": "int32"},             scalar / list / nested list
//              "mode": {"value": "EXACT", "dtype": "string"},
//              "values": {"tuple": [{...}, {...}]},                 variadic parameter
//              "input": {"state": true, "npy": "s.npy", "dtype": "fp16"}},  state buffer
//   "outputs": [{"npy": "out.npy", "dtype": "fp16"}],  declared dtype + expected values
//   "states_out": {"input": {"npy": "s_after.npy"}},   optional expected state buffers
//   "atol": 1e-3, "rtol": 1e-3,                        default 0 / 0
//   "opset": "ios16",                                  default ios18
//   "expect_error": "shape",                           error code name prefix (no npy needed)
//   "error_contains": "axis"}]}                        optional message substring
// Float literal values may be the strings "nan", "inf" and "-inf".
#pragma once

#include "support/op_harness.h"

#include <optional>
#include <string>
#include <vector>

namespace sg::testing {

struct OpCaseOutput {
  DType dtype = DType::kInvalid;
  Tensor expected;  // undefined when the case expects an error
};

struct OpCase {
  std::string file;  // cases.json path, for messages
  std::string id;
  std::string op;
  Precision precision = Precision::kFp16;
  std::string opset = "ios18";  // "opset" field: for ops whose rules changed between opsets
  std::vector<HarnessInput> inputs;
  std::vector<OpCaseOutput> outputs;
  std::vector<std::pair<std::string, Tensor>> states_out;
  double atol = 0;
  double rtol = 0;
  std::optional<std::string> expect_error;
  std::string error_contains;
};

// Every tests/data/ops/*/cases.json, sorted by path.
std::vector<std::string> find_op_case_files();
Result<std::vector<OpCase>> load_op_cases(const std::string& cases_json);
// Builds a tensor from a JSON literal text such as "[[1, 2], [3, 4]]" (used by tests).
Result<Tensor> literal_from_json(const std::string& json_text, DType dtype);

// Runs one case; "" when it passes, else a message starting with the case id.
std::string run_op_case(const OpCase& c);

}  // namespace sg::testing
