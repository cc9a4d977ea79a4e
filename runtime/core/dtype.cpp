#include "shardgate/dtype.h"

#include <array>

namespace sg {
namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;  // MIL text spelling
  int proto;              // MILSpec.DataType (runtime/format/README.md)
  int blob;               // BlobDataType code (runtime/format/README.md), -1 when not storable
  int bits;
};

// One row per element type: every spelling of it in the formats we read.
constexpr std::array kRows = {
    DTypeRow{DType::kBool, "bool", 1, -1, 8},
    DTypeRow{DType::kString, "string", 2, -1, 0},
    DTypeRow{DType::kF16, "fp16", 10, 1, 16},
    DTypeRow{DType::kF32, "fp32", 11, 2, 32},
    DTypeRow{DType::kF64, "fp64", 12, -1, 64},
    DTypeRow{DType::kBF16, "bf16", 13, 5, 16},
    DTypeRow{DType::kF8E4M3, "fp8e4m3fn", 40, 16, 8},
    DTypeRow{DType::kF8E5M2, "fp8e5m2", 41, 17, 8},
    DTypeRow{DType::kI4, "int4", 25, 8, 4},
    DTypeRow{DType::kI8, "int8", 21, 4, 8},
    DTypeRow{DType::kI16, "int16", 22, 6, 16},
    DTypeRow{DType::kI32, "int32", 23, 14, 32},
    DTypeRow{DType::kI64, "int64", 24, -1, 64},
    DTypeRow{DType::kU1, "uint1", 37, 9, 1},
    DTypeRow{DType::kU2, "uint2", 36, 10, 2},
    DTypeRow{DType::kU3, "uint3", 39, 12, 3},
    DTypeRow{DType::kU4, "uint4", 35, 11, 4},
    DTypeRow{DType::kU6, "uint6", 38, 13, 6},
    DTypeRow{DType::kU8, "uint8", 31, 3, 8},
    DTypeRow{DType::kU16, "uint16", 32, 7, 16},
    DTypeRow{DType::kU32, "uint32", 33, 15, 32},
    DTypeRow{DType::kU64, "uint64", 34, -1, 64},
};

const DTypeRow* row(DType t) {
  for (const auto& r : kRows) {
    if (r.dtype == t) return &r;
  }
  return nullptr;
}

}  // namespace

std::string_view dtype_name(DType t) {
  const DTypeRow* r = row(t);
  return r ? r->name : std::string_view("invalid");
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& r : kRows) {
    if (r.name == name) return r.dtype;
  }
  if (name == "bfloat16") return DType::kBF16;
  return std::nullopt;
}

std::optional<DType> dtype_from_proto(int value) {
  for (const auto& r : kRows) {
    if (r.proto == value) return r.dtype;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_blob_code(uint32_t code) {
  for (const auto& r : kRows) {
    if (r.blob >= 0 && static_cast<uint32_t>(r.blob) == code) return r.dtype;
  }
  return std::nullopt;
}

int dtype_bits(DType t) {
  const DTypeRow* r = row(t);
  return r ? r->bits : 0;
}

bool dtype_is_float(DType t) {
  return t == DType::kF16 || t == DType::kF32 || t == DType::kF64 || t == DType::kBF16 ||
         t == DType::kF8E4M3 || t == DType::kF8E5M2;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kI4: case DType::kI8: case DType::kI16: case DType::kI32: case DType::kI64:
    case DType::kU1: case DType::kU2: case DType::kU3: case DType::kU4: case DType::kU6:
    case DType::kU8: case DType::kU16: case DType::kU32: case DType::kU64:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType t) {
  return t == DType::kI4 || t == DType::kI8 || t == DType::kI16 || t == DType::kI32 ||
         t == DType::kI64 || dtype_is_float(t);
}

size_t dtype_storage_bytes(DType t, size_t n) {
  const int bits = dtype_bits(t);
  if (bits <= 0) return 0;
  if (bits >= 8) return n * static_cast<size_t>(bits / 8);
  return (n * static_cast<size_t>(bits) + 7) / 8;
}

}  // namespace sg
