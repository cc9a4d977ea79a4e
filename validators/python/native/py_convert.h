// Conversions between numpy arrays and sg::Tensor, and the one exception type the module
// raises (shardgate.Error, carrying the library's message and exit code).
#pragma once

#include "shardgate/op_context.h"
#include "shardgate/status.h"
#include "shardgate/tensor.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <stdexcept>
#include <string>

namespace sgpy {

namespace py = pybind11;

// Thrown for any error Status; translated to shardgate.Error with `exit_code` set.
class NativeError : public std::runtime_error {
 public:
  explicit NativeError(const sg::Status& status);
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

// Value of a Result, or throws NativeError.
template <typename T>
T take(sg::Result<T> result) {
  if (!result) throw NativeError(result.status());
  return std::move(result).value();
}
void check(const sg::Status& status);

// A copy of the tensor as a numpy array: fp16 -> float16, fp32 -> float32, ints and bool as
// themselves; sub-byte and 8-bit float types are widened to float32.
py::array to_numpy(const sg::Tensor& t);
// An owned tensor holding a copy of the array (float16, float32, float64, int8..int64,
// uint8..uint64, bool); other dtypes raise TypeError naming `what`.
sg::Tensor from_numpy(const py::array& array, const std::string& what);
py::dict to_numpy_dict(const std::map<std::string, sg::Tensor>& tensors);

sg::Precision precision_from_name(const std::string& name);

void bind_shard(py::module_& m);
void bind_chain(py::module_& m);
void bind_metrics(py::module_& m);

}  // namespace sgpy
