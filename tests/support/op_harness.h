// Runs one op kernel outside any program, the way the executor would: inputs as the executor
// stores them, the kernel called through a minimal OpContext, each output passed through
// to_storage with its declared dtype and the precision. Used by the op tests and the oracle
// case driver.
#pragma once

#include "shardgate/executor.h"
#include "shardgate/op_context.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sg::testing {

// One op parameter: a single tensor, a tuple (variadic parameter such as concat's `values`),
// or a reference to a state buffer (read_state / write_state / slice_update `input`).
struct HarnessInput {
  std::string name;
  std::vector<Tensor> values;  // one tensor per binding
  bool is_tuple = false;
  bool is_state = false;  // values[0] is the initial state; the op sees state `name`
  // values[0] is offered only as a StreamedWeight (get_streamed), decoded row block by row
  // block with a plain copy; get() of it fails, so a kernel that does not stream it fails,
  // unless the kernel's get_streamed refused it for its rank.
  bool is_streamed = false;

  static HarnessInput tensor(std::string name, Tensor t);
  static HarnessInput streamed(std::string name, Tensor dense);
  static HarnessInput tuple(std::string name, std::vector<Tensor> ts);
  static HarnessInput state(std::string name, Tensor initial);
};

// Literal builders for params.
Tensor i32s(const Shape& shape, std::vector<int32_t> v);
Tensor i32_list(std::vector<int32_t> v);  // rank 1
Tensor f32s(const Shape& shape, std::vector<float> v);
Tensor f16s(const Shape& shape, const std::vector<float>& v);  // rounded to fp16 bits
// fp16 tensor of values drawn uniformly from [-1, 1) by std::mt19937(seed), in index order,
// each rounded to fp16: the same seed gives the same tensor on every platform and run.
Tensor rand_f16(const Shape& shape, uint32_t seed);
Tensor bools(const Shape& shape, std::vector<uint8_t> v);
Tensor str(std::string s);

struct HarnessRun {
  std::vector<Tensor> outputs;           // stored outputs (to_storage applied)
  std::map<std::string, Tensor> states;  // state buffers after the op, by parameter name
};

// Float inputs are stored like the executor stores activations: fp16 tensors become fp32 in
// fp32 precision. Output i is declared with output_dtypes[i] (shape unknown to the kernel).
// `opset` is the function's opset ("ios16", ...) for ops whose rules changed between opsets.
Result<HarnessRun> run_op_full(const std::string& type, const std::vector<HarnessInput>& inputs,
                               const std::vector<DType>& output_dtypes, Precision precision,
                               int threads = 1, const std::string& opset = "ios18");
Result<std::vector<Tensor>> run_op(const std::string& type, const std::vector<HarnessInput>& inputs,
                                   const std::vector<DType>& output_dtypes, Precision precision,
                                   int threads = 1);

// Calls fn with the context of op `type` over these parameters (plain tensors, stored as
// given, fp16 kept as fp16 bits), outside any kernel: for tests of what the runtime derives
// from an op's parameters, such as the StreamedWeight of a constexpr op (ops/constexpr_stream.h).
Status with_op_context(const std::string& type, const std::vector<HarnessInput>& inputs,
                       const std::function<Status(OpContext&)>& fn, const std::string& opset = "ios18");

// Compares a result with expected values: same shape, NaN equals NaN, integers and bools
// exactly, floats within atol + rtol*|expected| (infinities must match exactly). Returns ""
// when they match, otherwise a message naming the first differing flat index.
std::string compare_tensors(const Tensor& got, const Tensor& expected, double atol, double rtol);

}  // namespace sg::testing
