// to_storage: how a kernel's result is stored under its declared type. One function used by
// the executor and the op test harness, so both round exactly alike.
#include "shardgate/op_context.h"

namespace sg {

Result<Tensor> to_storage(const Tensor& computed, DType declared, Precision precision) {
  SG_CHECK(computed.defined(), ErrorCode::kInternal, "kernel produced no tensor for a {} value",
           dtype_name(declared));
  if (declared == DType::kInvalid || computed.dtype() == declared) {
    // fp16 values stay fp16 bits only in fp16 mode; the reference mode widens them.
    if (computed.dtype() == DType::kF16 && precision == Precision::kFp32) return to_f32(computed);
    return computed;
  }
  if (declared == DType::kString || computed.dtype() == DType::kString) {
    return make_error(ErrorCode::kShape, "a {} result cannot be stored as {}",
                      dtype_name(computed.dtype()), dtype_name(declared));
  }
  DType target = declared;
  if (declared == DType::kF16) {
    target = precision == Precision::kFp16 ? DType::kF16 : DType::kF32;
  } else if (declared == DType::kBF16 || declared == DType::kF8E4M3 ||
             declared == DType::kF8E5M2 || dtype_is_subbyte(declared)) {
    return make_error(ErrorCode::kUnsupported, "cannot store a {} result as {}",
                      dtype_name(computed.dtype()), dtype_name(declared));
  }
  if (computed.dtype() == target) return computed;
  return cast_tensor(computed, target);
}

}  // namespace sg
