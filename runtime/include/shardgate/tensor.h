// Tensor: a typed, shaped, row-major block of elements.
//
// Storage is either owned (64-byte aligned heap memory) or a read-only view into memory that
// somebody else keeps alive (a memory-mapped weight.bin, an .npy file). Views are never
// written. fp16 elements are uint16_t bit patterns (see half.h); bool is one byte per element;
// sub-byte types (int4, uint1..uint6) stay packed LSB-first as blob storage holds them;
// string tensors keep their elements in a side vector.
#pragma once

#include "shardgate/dtype.h"
#include "shardgate/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sg {

using Shape = std::vector<int64_t>;

// Largest tensor the runtime agrees to allocate or view (guards absurd dimensions).
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 36;  // 64 GiB

// Element count, or an error when a dim is negative or the product overflows / exceeds
// kMaxTensorBytes at 1 byte per element.
Result<int64_t> checked_numel(const Shape& shape);
// Element count of a shape already known to be valid.
int64_t numel(const Shape& shape);
// "[1, 8, 2048]"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  // Owned, zero-filled storage. Fails on overflow or when larger than kMaxTensorBytes.
  static Result<Tensor> zeros(DType dtype, const Shape& shape);
  // Owned storage left uninitialised, for kernels that write every element (saves a pass
  // over large decoded weights).
  static Result<Tensor> uninitialized(DType dtype, const Shape& shape);
  // Read-only view of `nbytes` at `data`; `keepalive` owns the memory (may be null for
  // static data). Fails when nbytes is smaller than the shape needs.
  static Result<Tensor> view(DType dtype, const Shape& shape, const void* data, size_t nbytes,
                             std::shared_ptr<const void> keepalive);
  static Tensor from_strings(const Shape& shape, std::vector<std::string> values);
  // Convenience builders for small owned tensors (tests, literals, kernels).
  static Tensor from_f32(const Shape& shape, std::span<const float> values);
  static Tensor from_f16_bits(const Shape& shape, std::span<const uint16_t> values);
  static Tensor from_i32(const Shape& shape, std::span<const int32_t> values);
  static Tensor from_bool(const Shape& shape, std::span<const uint8_t> values);
  static Tensor scalar_f32(float v) { return from_f32({}, std::span<const float>(&v, 1)); }
  static Tensor scalar_i32(int32_t v) { return from_i32({}, std::span<const int32_t>(&v, 1)); }

  bool defined() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return nbytes_; }
  bool is_view() const { return readonly_; }

  const std::byte* raw() const { return data_; }
  std::byte* mutable_raw();  // asserts the tensor is owned
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <typename T>
  T* mutable_data() {
    return reinterpret_cast<T*>(mutable_raw());
  }
  const std::vector<std::string>& strings() const;

  // Same storage, new shape with the same element count (no copy). Fails otherwise.
  Result<Tensor> reshaped(const Shape& shape) const;

 private:
  DType dtype_ = DType::kInvalid;
  Shape shape_;
  int64_t numel_ = 0;
  size_t nbytes_ = 0;
  bool readonly_ = false;
  std::byte* data_ = nullptr;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<std::vector<std::string>> strings_;
};

// Element access for the reference paths, any numeric dtype (sub-byte included), as double.
// Callers check the index; NaN for strings.
double element_as_double(const Tensor& t, int64_t flat_index);

// Converts a numeric tensor to fp32 (owned copy; fp32 input is returned as-is, shared).
Result<Tensor> to_f32(const Tensor& t);
// Converts to `dtype` with MIL cast semantics (float->int truncates toward zero, like numpy
// astype; float->fp16 rounds to nearest even; bool is 0/1).
Result<Tensor> cast_tensor(const Tensor& t, DType dtype);
// Reads an integer tensor (any int dtype or bool) as int64 values.
Result<std::vector<int64_t>> to_int64_vector(const Tensor& t);
// Reads a numeric tensor as doubles.
Result<std::vector<double>> to_double_vector(const Tensor& t);

}  // namespace sg
