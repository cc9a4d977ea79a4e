#include "shardgate/tensor.h"

#include "core/subbyte.h"

#include "shardgate/half.h"
#include "shardgate/memory_budget.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace sg {
namespace detail {
void add_live_tensor_bytes(uint64_t bytes);  // memory_budget.cpp
void sub_live_tensor_bytes(uint64_t bytes);
}  // namespace detail

Result<int64_t> checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t d = shape[i];
    SG_CHECK(d >= 0, ErrorCode::kShape, "shape {} has a negative or unknown dimension at axis {}",
             shape_str(shape), i);
    SG_CHECK(!__builtin_mul_overflow(n, d, &n) && n <= kMaxTensorBytes, ErrorCode::kShape,
             "shape {} is too large (more than {} elements)", shape_str(shape), kMaxTensorBytes);
  }
  return n;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

Result<Tensor> Tensor::zeros(DType dtype, const Shape& shape) {
  SG_ASSIGN_OR_RETURN(Tensor t, uninitialized(dtype, shape));
  std::memset(t.data_, 0, t.nbytes_);
  return t;
}

Result<Tensor> Tensor::uninitialized(DType dtype, const Shape& shape) {
  SG_CHECK(dtype != DType::kInvalid && dtype != DType::kString, ErrorCode::kInternal,
           "cannot allocate a tensor of dtype {}", dtype_name(dtype));
  SG_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  const size_t bytes = dtype_storage_bytes(dtype, static_cast<size_t>(n));
  const size_t alloc = (bytes + 63) / 64 * 64 + 64;
  SG_TRY(check_memory_budget(alloc, fmt::format("tensor {} of {}", shape_str(shape),
                                                dtype_name(dtype))));
  SG_CHECK(bytes <= static_cast<size_t>(kMaxTensorBytes), ErrorCode::kShape,
           "tensor {} of {} needs {} bytes, over the {} byte limit", shape_str(shape),
           dtype_name(dtype), bytes, kMaxTensorBytes);
  void* p = std::aligned_alloc(64, alloc);
  // The budget should keep us below this; a failed allocation is still the input's size, not
  // a bug of ours.
  SG_CHECK(p != nullptr, ErrorCode::kIO, "out of memory allocating {} bytes for tensor {} of {}",
           alloc, shape_str(shape), dtype_name(dtype));
  detail::add_live_tensor_bytes(alloc);
  // The padding past the last element is zeroed (at most 127 bytes): vector loops may read a
  // whole register past the end, and what they read there must not depend on the allocator.
  std::memset(static_cast<std::byte*>(p) + bytes, 0, alloc - bytes);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.numel_ = n;
  t.nbytes_ = bytes;
  t.data_ = static_cast<std::byte*>(p);
  t.owner_ = std::shared_ptr<const void>(p, [alloc](const void* q) {
    std::free(const_cast<void*>(q));
    detail::sub_live_tensor_bytes(alloc);
  });
  return t;
}

Result<Tensor> Tensor::view(DType dtype, const Shape& shape, const void* data, size_t nbytes,
                            std::shared_ptr<const void> keepalive) {
  SG_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  const size_t need = dtype_storage_bytes(dtype, static_cast<size_t>(n));
  SG_CHECK(nbytes >= need, ErrorCode::kShape,
           "{} bytes cannot hold a tensor<{}, {}> ({} bytes needed)", nbytes, dtype_name(dtype),
           shape_str(shape), need);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.numel_ = n;
  t.nbytes_ = need;
  t.readonly_ = true;
  t.data_ = const_cast<std::byte*>(static_cast<const std::byte*>(data));
  t.owner_ = std::move(keepalive);
  return t;
}

Tensor Tensor::from_strings(const Shape& shape, std::vector<std::string> values) {
  Tensor t;
  t.dtype_ = DType::kString;
  t.shape_ = shape;
  t.numel_ = static_cast<int64_t>(values.size());
  t.strings_ = std::make_shared<std::vector<std::string>>(std::move(values));
  return t;
}

namespace {
template <typename T>
Tensor build(DType dtype, const Shape& shape, std::span<const T> values) {
  Result<Tensor> r = Tensor::zeros(dtype, shape);
  assert(r.is_ok() && static_cast<size_t>(r->numel()) == values.size());
  Tensor t = std::move(r).value();
  // An empty span may have a null data(), which memcpy must not be given even for 0 bytes.
  if (!values.empty()) std::memcpy(t.mutable_raw(), values.data(), values.size() * sizeof(T));
  return t;
}
}  // namespace

Tensor Tensor::from_f32(const Shape& shape, std::span<const float> v) {
  return build(DType::kF32, shape, v);
}
Tensor Tensor::from_f16_bits(const Shape& shape, std::span<const uint16_t> v) {
  return build(DType::kF16, shape, v);
}
Tensor Tensor::from_i32(const Shape& shape, std::span<const int32_t> v) {
  return build(DType::kI32, shape, v);
}
Tensor Tensor::from_bool(const Shape& shape, std::span<const uint8_t> v) {
  return build(DType::kBool, shape, v);
}

std::byte* Tensor::mutable_raw() {
  assert(!readonly_ && "write to a read-only tensor view");
  return data_;
}

const std::vector<std::string>& Tensor::strings() const {
  static const std::vector<std::string> kEmpty;
  return strings_ ? *strings_ : kEmpty;
}

Result<Tensor> Tensor::reshaped(const Shape& shape) const {
  SG_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  SG_CHECK(n == numel_, ErrorCode::kShape, "cannot reshape {} ({} elements) to {} ({} elements)",
           shape_str(shape_), numel_, shape_str(shape), n);
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

double element_as_double(const Tensor& t, int64_t i) {
  const std::byte* p = t.raw();
  switch (t.dtype()) {
    case DType::kBool: return static_cast<double>(t.data<uint8_t>()[i] != 0);
    case DType::kF16: return f16_to_f32(t.data<uint16_t>()[i]);
    case DType::kBF16: {
      const uint32_t bits = static_cast<uint32_t>(t.data<uint16_t>()[i]) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case DType::kF32: return t.data<float>()[i];
    case DType::kF64: return t.data<double>()[i];
    case DType::kI8: return t.data<int8_t>()[i];
    case DType::kI16: return t.data<int16_t>()[i];
    case DType::kI32: return t.data<int32_t>()[i];
    case DType::kI64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kU8: return t.data<uint8_t>()[i];
    case DType::kU16: return t.data<uint16_t>()[i];
    case DType::kU32: return t.data<uint32_t>()[i];
    case DType::kU64: return static_cast<double>(t.data<uint64_t>()[i]);
    case DType::kI4: return subbyte::int4_value(subbyte::nibble(p, i));
    case DType::kU1: case DType::kU2: case DType::kU3: case DType::kU4: case DType::kU6:
      return subbyte::get(p, dtype_bits(t.dtype()), i);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

Result<Tensor> to_f32(const Tensor& t) {
  if (t.dtype() == DType::kF32) return t;
  SG_CHECK(t.dtype() != DType::kString && t.dtype() != DType::kInvalid, ErrorCode::kShape,
           "expected a numeric tensor, got {}", dtype_name(t.dtype()));
  // Every element is written below: no zero-fill (a 512 x 12288 activation is 25 MB).
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::uninitialized(DType::kF32, t.shape()));
  float* dst = out.mutable_data<float>();
  if (t.dtype() == DType::kF16) {
    f16_to_f32_span(t.data<uint16_t>(), dst, static_cast<size_t>(t.numel()));
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(element_as_double(t, i));
  }
  return out;
}

namespace {
template <typename T>
void store_int(Tensor& out, int64_t i, double v) {
  // numpy astype: truncation toward zero; out-of-range and NaN become 0 here (numpy leaves
  // them unspecified), which keeps the behaviour defined.
  double tv = std::trunc(v);
  if (!(tv >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
        tv <= static_cast<double>(std::numeric_limits<T>::max()))) {
    tv = 0;
  }
  out.mutable_data<T>()[i] = static_cast<T>(tv);
}
}  // namespace

Result<Tensor> cast_tensor(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  SG_CHECK(t.dtype() != DType::kString && dtype != DType::kString, ErrorCode::kUnsupported,
           "cannot cast {} to {}", dtype_name(t.dtype()), dtype_name(dtype));
  SG_CHECK(!dtype_is_subbyte(dtype), ErrorCode::kUnsupported, "cannot cast to sub-byte dtype {}",
           dtype_name(dtype));
  if (dtype == DType::kF32) return to_f32(t);
  // Every element is written below (or the cast fails): no zero-fill.
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::uninitialized(dtype, t.shape()));
  if (dtype == DType::kF16 && t.dtype() == DType::kF32) {
    f32_to_f16_span(t.data<float>(), out.mutable_data<uint16_t>(), static_cast<size_t>(t.numel()));
    return out;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = element_as_double(t, i);
    switch (dtype) {
      case DType::kBool: out.mutable_data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
      case DType::kF16: out.mutable_data<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
      case DType::kF64: out.mutable_data<double>()[i] = v; break;
      case DType::kI8: store_int<int8_t>(out, i, v); break;
      case DType::kI16: store_int<int16_t>(out, i, v); break;
      case DType::kI32: store_int<int32_t>(out, i, v); break;
      case DType::kI64: store_int<int64_t>(out, i, v); break;
      case DType::kU8: store_int<uint8_t>(out, i, v); break;
      case DType::kU16: store_int<uint16_t>(out, i, v); break;
      case DType::kU32: store_int<uint32_t>(out, i, v); break;
      case DType::kU64: store_int<uint64_t>(out, i, v); break;
      default:
        return make_error(ErrorCode::kUnsupported, "cannot cast {} to {}", dtype_name(t.dtype()),
                          dtype_name(dtype));
    }
  }
  return out;
}

Result<std::vector<int64_t>> to_int64_vector(const Tensor& t) {
  SG_CHECK(dtype_is_integer(t.dtype()) || t.dtype() == DType::kBool, ErrorCode::kShape,
           "expected an integer tensor, got {}", dtype_name(t.dtype()));
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    v[static_cast<size_t>(i)] = t.dtype() == DType::kI64 ? t.data<int64_t>()[i]
                                : t.dtype() == DType::kU64
                                    ? static_cast<int64_t>(t.data<uint64_t>()[i])
                                    : static_cast<int64_t>(element_as_double(t, i));
  }
  return v;
}

Result<std::vector<double>> to_double_vector(const Tensor& t) {
  SG_CHECK(t.dtype() != DType::kString && t.dtype() != DType::kInvalid, ErrorCode::kShape,
           "expected a numeric tensor, got {}", dtype_name(t.dtype()));
  // Eight bytes per element whatever the dtype (four times an fp16 tensor): checked against
  // the memory budget like a tensor, so a whole-tensor conversion cannot grow past it.
  SG_TRY(check_memory_budget(static_cast<uint64_t>(t.numel()) * sizeof(double),
                             fmt::format("{} values of tensor {} as double", t.numel(),
                                         shape_str(t.shape()))));
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = element_as_double(t, i);
  return v;
}

}  // namespace sg
