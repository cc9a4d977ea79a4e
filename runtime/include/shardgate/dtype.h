// MIL element types, their spellings in model.mil, protobuf and blob storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sg {

enum class DType : uint8_t {
  kInvalid = 0,
  kBool,
  kString,
  kF16,
  kF32,
  kF64,
  kBF16,
  kF8E4M3,
  kF8E5M2,
  kI4,
  kI8,
  kI16,
  kI32,
  kI64,
  kU1,
  kU2,
  kU3,
  kU4,
  kU6,
  kU8,
  kU16,
  kU32,
  kU64,
};

// MIL text spelling: "fp16", "int4", "uint1", ... ("invalid" for kInvalid).
std::string_view dtype_name(DType t);
std::optional<DType> dtype_from_name(std::string_view name);

// Protobuf MILSpec.DataType enum value (runtime/format/README.md) -> DType.
std::optional<DType> dtype_from_proto(int value);

// Blob storage BlobDataType code (runtime/format/README.md) -> DType.
std::optional<DType> dtype_from_blob_code(uint32_t code);

// Bits per element; 0 for string.
int dtype_bits(DType t);
inline bool dtype_is_subbyte(DType t) { return dtype_bits(t) > 0 && dtype_bits(t) < 8; }
bool dtype_is_float(DType t);    // f16, f32, f64, bf16, f8
bool dtype_is_integer(DType t);  // signed or unsigned ints of any width (not bool)
bool dtype_is_signed(DType t);

// Bytes needed to store n elements (sub-byte types packed LSB-first, rounded up).
size_t dtype_storage_bytes(DType t, size_t n);

}  // namespace sg
