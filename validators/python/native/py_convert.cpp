// numpy <-> sg::Tensor copies and the error translation (py_convert.h).
#include "py_convert.h"

#include "shardgate/dtype.h"
#include "shardgate/half.h"

#include <cstring>
#include <vector>

namespace sgpy {

NativeError::NativeError(const sg::Status& status)
    : std::runtime_error(status.message()), exit_code_(sg::exit_code(status.code())) {}

void check(const sg::Status& status) {
  if (!status) throw NativeError(status);
}

namespace {

// The numpy dtype that holds `dtype` bit for bit, or "" when there is none.
const char* numpy_format(sg::DType dtype) {
  switch (dtype) {
    case sg::DType::kBool: return "?";
    case sg::DType::kF16: return "e";
    case sg::DType::kF32: return "f";
    case sg::DType::kF64: return "d";
    case sg::DType::kI8: return "b";
    case sg::DType::kI16: return "h";
    case sg::DType::kI32: return "i";
    case sg::DType::kI64: return "q";
    case sg::DType::kU8: return "B";
    case sg::DType::kU16: return "H";
    case sg::DType::kU32: return "I";
    case sg::DType::kU64: return "Q";
    default: return "";
  }
}

}  // namespace

py::array to_numpy(const sg::Tensor& t) {
  if (!t.defined()) return py::array();
  if (t.dtype() == sg::DType::kString) throw py::type_error("string tensors have no numpy form");
  const char* fmt = numpy_format(t.dtype());
  if (*fmt == '\0') return to_numpy(take(sg::to_f32(t)));
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  py::array out(py::dtype(std::string(fmt)), shape);
  if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
  return out;
}

sg::Tensor from_numpy(const py::array& array, const std::string& what) {
  const py::dtype dt = array.dtype();
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  sg::DType dtype = sg::DType::kInvalid;
  if (kind == 'b') dtype = sg::DType::kBool;
  if (kind == 'f') dtype = size == 2 ? sg::DType::kF16 : size == 4 ? sg::DType::kF32 : size == 8 ? sg::DType::kF64 : dtype;
  if (kind == 'i') dtype = size == 1 ? sg::DType::kI8 : size == 2 ? sg::DType::kI16 : size == 4 ? sg::DType::kI32 : sg::DType::kI64;
  if (kind == 'u') dtype = size == 1 ? sg::DType::kU8 : size == 2 ? sg::DType::kU16 : size == 4 ? sg::DType::kU32 : sg::DType::kU64;
  if (dtype == sg::DType::kInvalid) {
    throw py::type_error(what + ": numpy dtype " + std::string(py::str(static_cast<py::handle>(dt))) +
                         " is not a numeric or bool dtype shardgate reads");
  }
  // A C-contiguous, native-byte-order copy of the same dtype.
  py::array contiguous = py::array::ensure(array, py::array::c_style);
  if (!contiguous || !dt.attr("isnative").cast<bool>()) {
    contiguous = py::module_::import("numpy").attr("ascontiguousarray")(
        array, dt.attr("newbyteorder")("="));
  }
  sg::Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
  sg::Tensor t = take(sg::Tensor::zeros(dtype, shape));
  if (t.nbytes() > 0) std::memcpy(t.mutable_raw(), contiguous.data(), t.nbytes());
  return t;
}

py::dict to_numpy_dict(const std::map<std::string, sg::Tensor>& tensors) {
  py::dict out;
  for (const auto& [name, t] : tensors) out[py::str(name)] = to_numpy(t);
  return out;
}

sg::Precision precision_from_name(const std::string& name) {
  if (name == "fp16") return sg::Precision::kFp16;
  if (name == "fp32") return sg::Precision::kFp32;
  if (name == "fp16-ftz") return sg::Precision::kFp16Ftz;  // fp16 storage, subnormals flushed
  throw py::value_error("precision must be 'fp16', 'fp16-ftz' or 'fp32', not '" + name + "'");
}

}  // namespace sgpy
