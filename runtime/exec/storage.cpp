// to_storage: how a kernel's result is stored under its declared type. One function used by
// the executor and the op test harness, so both round exactly alike.
#include "shardgate/op_context.h"

#include <cstring>

namespace sg {
namespace {

// fp16-ftz: a subnormal fp16 (exponent bits 0, mantissa not 0) becomes a zero of its sign.
// The tensor is copied only when it holds one (an input may be a view of a mapped file).
Tensor flush_f16_subnormals(const Tensor& t) {
  const uint16_t* d = t.data<uint16_t>();
  const int64_t n = t.numel();
  int64_t first = 0;
  while (first < n && !((d[first] & 0x7c00u) == 0 && (d[first] & 0x03ffu) != 0)) ++first;
  if (first == n) return t;
  std::vector<uint16_t> bits(d, d + n);
  for (int64_t k = first; k < n; ++k) {
    uint16_t& h = bits[static_cast<size_t>(k)];
    if ((h & 0x7c00u) == 0) h &= 0x8000u;
  }
  return Tensor::from_f16_bits(t.shape(), bits);
}

Result<Tensor> stored(const Tensor& t, Precision precision) {
  if (precision == Precision::kFp16Ftz && t.dtype() == DType::kF16) return flush_f16_subnormals(t);
  return t;
}

}  // namespace

Result<Tensor> to_storage(const Tensor& computed, DType declared, Precision precision) {
  SG_CHECK(computed.defined(), ErrorCode::kInternal, "kernel produced no tensor for a {} value",
           dtype_name(declared));
  if (declared == DType::kInvalid || computed.dtype() == declared) {
    // fp16 values stay fp16 bits only in fp16 mode; the reference mode widens them.
    if (computed.dtype() == DType::kF16 && precision == Precision::kFp32) return to_f32(computed);
    return stored(computed, precision);
  }
  if (declared == DType::kString || computed.dtype() == DType::kString) {
    return make_error(ErrorCode::kShape, "a {} result cannot be stored as {}",
                      dtype_name(computed.dtype()), dtype_name(declared));
  }
  DType target = declared;
  if (declared == DType::kF16) {
    target = stores_fp16(precision) ? DType::kF16 : DType::kF32;
  } else if (declared == DType::kBF16 || declared == DType::kF8E4M3 ||
             declared == DType::kF8E5M2 || dtype_is_subbyte(declared)) {
    return make_error(ErrorCode::kUnsupported, "cannot store a {} result as {}",
                      dtype_name(computed.dtype()), dtype_name(declared));
  }
  if (computed.dtype() == target) return stored(computed, precision);
  SG_ASSIGN_OR_RETURN(Tensor cast, cast_tensor(computed, target));
  return stored(cast, precision);
}

}  // namespace sg
