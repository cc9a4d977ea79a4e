// Compile-time weight ops: const and the constexpr_* decoders (runtime/ops/README.md, Compile-time
// weights; semantics of coremltools' iOS16/iOS18 constexpr op definitions and optimize/_utils.py).
//
// Every decoder walks its output once, in row-major order, reading packed sub-byte fields with
// a sequential LSB-first bit cursor, so decoding is linear in the weight size. Decoded values
// keep the dtype the program gives them (a fp16 LUT yields fp16 bits), and where coremltools
// computes in fp16 (blockwise_shift_scale with a fp16 scale) each step is rounded the way
// numpy's float16 arithmetic rounds it.
#include "shardgate/half.h"
#include "ops/kernels.h"

#include "core/parallel.h"
#include "core/subbyte.h"
#include "ops/constexpr_stream.h"
#include "ops/kernel_util.h"
#include "ops/kernel_variants.h"
#include "ops/param_f16c.h"
#include "ops/split_rounding.h"
#include "ops/weight_formats.h"
#include "shardgate/cpu.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
// Vector decoders are compiled for their ISA by function attribute and chosen at run time from
// cpu_level() (shardgate/cpu.h), so the portable build uses them too.
#define SG_DECODE_X86 1
#define SG_TARGET_F16C __attribute__((target("avx,f16c")))
#define SG_TARGET_AVX2 __attribute__((target("avx2")))
#define SG_TARGET_AVX2_F16C __attribute__((target("avx2,f16c")))
#define SG_TARGET_SSSE3 __attribute__((target("ssse3")))
#endif

namespace sg {
namespace {

using subbyte::bit;
using subbyte::set_bit;

// Copies element `si` of `src` to element `di` of `dst` (same dtype), sub-byte types included.
void copy_element(const Tensor& src, int64_t si, Tensor& dst, int64_t di) {
  const int bits = dtype_bits(src.dtype());
  if (bits >= 8) {
    const size_t n = static_cast<size_t>(bits / 8);
    std::memcpy(dst.mutable_raw() + static_cast<size_t>(di) * n,
                src.raw() + static_cast<size_t>(si) * n, n);
  } else {
    subbyte::put(dst.mutable_raw(), bits, di, subbyte::get(src.raw(), bits, si));
  }
}

// Row-major coordinate counter.
class Coords {
 public:
  explicit Coords(const Shape& shape) : shape_(shape), c_(shape.size(), 0) {}
  const std::vector<int64_t>& at() const { return c_; }
  void next() {
    for (size_t d = c_.size(); d-- > 0;) {
      if (++c_[d] < shape_[d]) return;
      c_[d] = 0;
    }
  }

 private:
  const Shape& shape_;
  std::vector<int64_t> c_;
};

bool is_float_weight(DType t) { return t == DType::kF16 || t == DType::kF32; }

bool is_index_dtype(DType t) {
  return t == DType::kU1 || t == DType::kU2 || t == DType::kU3 || t == DType::kU4 ||
         t == DType::kU6 || t == DType::kU8;
}

std::string type_str(const Tensor& t) {
  return fmt::format("tensor<{}, {}>", dtype_name(t.dtype()), shape_str(t.shape()));
}

Result<int64_t> count_set_bits(OpContext& ctx, const Tensor& mask, int64_t n, const char* what) {
  // Whole bytes with popcount, then the tail bit by bit; set bits past n are an error.
  const std::byte* p = mask.raw();
  int64_t count = 0;
  const int64_t whole = n / 8;
  for (int64_t i = 0; i < whole; ++i) count += std::popcount(static_cast<uint8_t>(p[i]));
  for (int64_t i = whole * 8; i < n; ++i) count += bit(p, i) ? 1 : 0;
  const int64_t stored_bits = static_cast<int64_t>(mask.nbytes()) * 8;
  for (int64_t i = n; i < stored_bits; ++i) {
    SG_OP_CHECK(ctx, !bit(p, i), ErrorCode::kFormat,
                "{} has a set padding bit at bit {} (only {} elements)", what, i, n);
  }
  return count;
}

// Float values of a small parameter (the affine form's scales and zero points, palettes), fp16
// widened exactly, fp16 and fp32 as spans. Shift-scale parameters, which a per-block weight has
// one of per 32 weights, are read in place instead (ParamView, op_context.h).
std::vector<float> floats_of(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::kF16) {
    f16_to_f32_span(t.data<uint16_t>(), v.data(), v.size());
  } else if (t.dtype() == DType::kF32) {
    if (!v.empty()) std::memcpy(v.data(), t.data<float>(), v.size() * sizeof(float));
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(element_as_double(t, i));
  }
  return v;
}

// ---------------------------------------------------------------------------------------
// Register forms (RegisterDecode, op_context.h): what the 8-token product needs to decode a
// weight 8 elements of a row at a time in registers. Offered only where that gives decode()'s
// bits: fp16 output, 8- or 4-bit codes, rows of a multiple of 8 elements (so 4-bit rows start
// on a byte), and one parameter per row or column blocks of a power of two >= 8 (so 8
// elements share one parameter, found by a shift; coremltools' block sizes are 16, 32, 64...).

// The parameters' row blocking over a weight's leading dims (block: elements per parameter on
// each axis, the last axis the columns): rows r = flat index over the leading dims share
// parameter row r / row_block when every leading axis has one parameter (row_block = all the
// rows) or every axis but the innermost leading one has a parameter per index (row_block =
// that axis' block). 0 for any other blocking (the weight is then decoded through a tile).
int64_t register_row_block(const Shape& shape, const std::vector<int64_t>& block) {
  const size_t lead = shape.size() - 1;
  int64_t rows = 1;
  bool one_param_row = true;
  for (size_t d = 0; d < lead; ++d) {
    rows *= shape[d];
    one_param_row = one_param_row && block[d] == shape[d];
  }
  if (one_param_row) return std::max<int64_t>(rows, 1);
  for (size_t d = 0; d + 1 < lead; ++d) {
    if (block[d] != 1) return 0;
  }
  return block[lead - 1];
}

// The row/column blocking both forms share, or nullopt when the weight cannot be decoded in
// registers.
std::optional<RegisterDecode> register_layout(const Shape& shape, const std::vector<int64_t>& block) {
  if (shape.empty()) return std::nullopt;
  RegisterDecode r;
  r.cols = shape.back();
  r.col_block = block.back();
  r.row_block = register_row_block(shape, block);
  if (r.cols <= 0 || r.cols % 8 != 0 || r.row_block <= 0) return std::nullopt;
  if (r.col_block != r.cols) {
    // Blocks along the row are found by a shift at every 8 columns.
    if (r.col_block < 8 || !std::has_single_bit(static_cast<uint64_t>(r.col_block))) return std::nullopt;
    r.block_shift = std::countr_zero(static_cast<uint64_t>(r.col_block));
  }
  r.rows = numel(shape) / r.cols;
  r.param_cols = r.cols / r.col_block;
  return r;
}

// ---------------------------------------------------------------------------------------
// LUT decoding shared by constexpr_lut_to_dense (iOS18 form) and constexpr_lut_to_sparse.

struct LutLayout {
  Shape indices_shape;           // K dims
  Shape output_shape;            // indices_shape with the vector axis scaled by V
  std::vector<int64_t> block;    // indices dims per LUT group, per axis
  std::vector<int64_t> group_stride;
  int64_t palettes = 0;
  int64_t vector_size = 1;
  int64_t vector_axis = -1;  // normalised; -1 for scalar palettization
};

// Checks indices/lut/vector_axis against each other (coremltools _validate_lut_inputs).
Result<LutLayout> lut_layout(OpContext& ctx, const Shape& indices_shape, DType indices_dtype,
                             const Tensor& lut) {
  LutLayout l;
  const int64_t k = static_cast<int64_t>(indices_shape.size());
  SG_OP_CHECK(ctx, is_index_dtype(indices_dtype), ErrorCode::kShape,
              "indices must be uint1/2/3/4/6/8, got {}", dtype_name(indices_dtype));
  SG_OP_CHECK(ctx, k >= 1, ErrorCode::kShape, "indices must have rank >= 1");
  SG_OP_CHECK(ctx, lut.rank() == k + 2, ErrorCode::kShape,
              "lut {} must have rank {} (indices rank {} + 2)", type_str(lut), k + 2, k);
  SG_OP_CHECK(ctx, lut.dtype() == DType::kF16 || lut.dtype() == DType::kF32 ||
                       lut.dtype() == DType::kI8 || lut.dtype() == DType::kU8,
              ErrorCode::kShape, "lut must be fp16, fp32, int8 or uint8, got {}",
              dtype_name(lut.dtype()));
  const int nbits = dtype_bits(indices_dtype);
  l.palettes = lut.dim(k);
  l.vector_size = lut.dim(k + 1);
  SG_OP_CHECK(ctx, l.palettes == (int64_t{1} << nbits), ErrorCode::kShape,
              "lut {} has {} palette entries, but {} indices need exactly {}", type_str(lut),
              l.palettes, dtype_name(indices_dtype), int64_t{1} << nbits);
  SG_OP_CHECK(ctx, l.vector_size >= 1, ErrorCode::kShape, "lut {} has an empty vector dim",
              type_str(lut));
  l.indices_shape = indices_shape;
  l.block.resize(static_cast<size_t>(k));
  for (int64_t d = 0; d < k; ++d) {
    const int64_t groups = lut.dim(d);
    const int64_t dim = indices_shape[static_cast<size_t>(d)];
    SG_OP_CHECK(ctx, groups >= 1 && dim % groups == 0, ErrorCode::kShape,
                "indices dim {} (axis {}) is not divisible by the lut's {} groups on that axis",
                dim, d, groups);
    l.block[static_cast<size_t>(d)] = dim / groups;
  }
  Shape group_shape(lut.shape().begin(), lut.shape().begin() + k);
  l.group_stride = kern::strides_of(group_shape);
  l.output_shape = indices_shape;
  if (ctx.has("vector_axis")) {
    SG_ASSIGN_OR_RETURN(int64_t axis, ctx.get_int("vector_axis"));
    SG_OP_CHECK(ctx, axis >= -k && axis < k, ErrorCode::kShape,
                "vector_axis {} is out of range for rank {}", axis, k);
    if (axis < 0) axis += k;
    if (l.vector_size > 1) {
      l.vector_axis = axis;
      int64_t& d = l.output_shape[static_cast<size_t>(axis)];
      SG_OP_CHECK(ctx, !__builtin_mul_overflow(d, l.vector_size, &d), ErrorCode::kShape,
                  "output dim overflows");
    }
  } else {
    SG_OP_CHECK(ctx, l.vector_size == 1, ErrorCode::kShape,
                "lut {} has vectors of {} values but no vector_axis is given", type_str(lut),
                l.vector_size);
  }
  return l;
}

// Calls fn(out_flat, in_flat, lut_element) for every output element in row-major order;
// lut_element is the flat LUT position for palette entry 0 of that element's group and
// vector lane (add index * V for entry `index`).
template <typename Fn>
void for_each_lut_output(const LutLayout& l, Fn&& fn) {
  const int64_t n = numel(l.output_shape);
  const size_t k = l.indices_shape.size();
  Coords q(l.output_shape);
  for (int64_t out = 0; out < n; ++out, q.next()) {
    int64_t in_flat = 0;
    int64_t group = 0;
    int64_t lane = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t p = q.at()[d];
      if (static_cast<int64_t>(d) == l.vector_axis) {
        lane = p % l.vector_size;
        p /= l.vector_size;
      }
      in_flat = in_flat * l.indices_shape[d] + p;
      group += (p / l.block[d]) * l.group_stride[d];
    }
    fn(out, in_flat, group * l.palettes * l.vector_size + lane);
  }
}

Result<std::vector<uint8_t>> unpack_indices(OpContext& ctx, const Tensor& indices) {
  SG_OP_CHECK(ctx, is_index_dtype(indices.dtype()), ErrorCode::kShape,
              "indices must be uint1/2/3/4/6/8, got {}", dtype_name(indices.dtype()));
  std::vector<uint8_t> out(static_cast<size_t>(indices.numel()));
  subbyte::Reader r(indices.raw(), dtype_bits(indices.dtype()));
  for (auto& v : out) v = static_cast<uint8_t>(r.next());
  return out;
}

// ---------------------------------------------------------------------------------------
// Shift-scale arithmetic shared by the dense and sparse blockwise ops.

struct ShiftScale {
  DType out_dtype = DType::kF32;
  ParamView scale;            // read in place from the parameter tensor
  ParamView offset;           // empty when absent
  bool offset_wider = false;  // fp32 offset with a fp16 scale: numpy computes in fp32
  Shape scale_shape;
  std::vector<int64_t> block;
  std::vector<int64_t> scale_stride;

  int64_t block_index(const std::vector<int64_t>& coords) const {
    int64_t b = 0;
    for (size_t d = 0; d < coords.size(); ++d) b += (coords[d] / block[d]) * scale_stride[d];
    return b;
  }

  // coremltools: data.astype(scale.dtype); data - offset; scale * data. With a fp16 scale
  // numpy rounds each fp16 step through fp32, which this mirrors.
  float apply(double data_value, int64_t b) const {
    const float s = scale[b];
    if (out_dtype == DType::kF16) {
      const float d = round_to_f16(static_cast<float>(data_value));
      if (offset.empty()) return round_to_f16(s * d);
      const float o = offset[b];
      if (offset_wider) return round_to_f16(s * (d - o));
      const float t = round_to_f16(d - round_to_f16(o));
      return round_to_f16(s * t);
    }
    const float d = static_cast<float>(data_value);
    if (offset.empty()) return s * d;
    return s * (d - offset[b]);
  }
};

bool is_shift_scale_data_dtype(DType t) {
  return t == DType::kI4 || t == DType::kU4 || t == DType::kI8 || t == DType::kU8 ||
         t == DType::kF16 || t == DType::kF32;
}

// Validates scale/offset against the data shape (coremltools _validate_shift_scale_inputs).
Result<ShiftScale> shift_scale_params(OpContext& ctx, const Shape& data_shape, DType data_dtype) {
  SG_OP_CHECK(ctx, is_shift_scale_data_dtype(data_dtype), ErrorCode::kShape,
              "data must be int4, uint4, int8, uint8, fp16 or fp32, got {}",
              dtype_name(data_dtype));
  SG_ASSIGN_OR_RETURN(Tensor scale, ctx.get("scale"));
  SG_OP_CHECK(ctx, is_float_weight(scale.dtype()), ErrorCode::kShape,
              "scale must be fp16 or fp32, got {}", type_str(scale));
  const size_t rank = data_shape.size();
  SG_OP_CHECK(ctx, rank >= 1, ErrorCode::kShape, "data must have rank >= 1");
  SG_OP_CHECK(ctx, static_cast<size_t>(scale.rank()) == rank, ErrorCode::kShape,
              "scale {} must have the data's rank {}", type_str(scale), rank);
  ShiftScale ss;
  ss.out_dtype = scale.dtype();
  ss.scale_shape = scale.shape();
  ss.block.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t s = scale.dim(static_cast<int64_t>(d));
    SG_OP_CHECK(ctx, s >= 1 && data_shape[d] % s == 0, ErrorCode::kShape,
                "scale {} does not divide data {} at axis {} (block size must be a whole "
                "number)",
                type_str(scale), shape_str(data_shape), d);
    ss.block[d] = data_shape[d] / s;
  }
  ss.scale_stride = kern::strides_of(scale.shape());
  ss.scale = ParamView(scale);
  if (ctx.has("offset")) {
    SG_ASSIGN_OR_RETURN(Tensor offset, ctx.get("offset"));
    SG_OP_CHECK(ctx, offset.shape() == scale.shape(), ErrorCode::kShape,
                "offset {} must have the scale's shape {}", type_str(offset),
                shape_str(scale.shape()));
    SG_OP_CHECK(ctx, is_float_weight(offset.dtype()) || offset.dtype() == data_dtype,
                ErrorCode::kShape, "offset {} must be float or the data dtype {}",
                type_str(offset), dtype_name(data_dtype));
    ss.offset = ParamView(offset);
    ss.offset_wider = scale.dtype() == DType::kF16 && offset.dtype() == DType::kF32;
  }
  return ss;
}

void store_float(Tensor& out, int64_t i, float v) {
  if (out.dtype() == DType::kF16) {
    out.mutable_data<uint16_t>()[i] = f32_to_f16(v);
  } else {
    out.mutable_data<float>()[i] = v;
  }
}

Result<Shape> shape_param(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.get_ints("shape"));
  auto n = checked_numel(shape);
  SG_OP_CHECK(ctx, n.is_ok(), ErrorCode::kShape, "shape parameter {}: {}", shape_str(shape),
              n.status().message());
  return Shape(shape);
}

// ---------------------------------------------------------------------------------------
// Range decoders. Each *_stream() below validates its op's parameters once and returns a
// StreamedWeight whose decode() fills any range of whole last-dim rows of the dense output
// (op_context.h). The op kernels decode every row with it; a weight-consuming kernel decodes
// one block of rows at a time as it multiplies (linear_kernel.h). Rows are decoded
// independently, so splitting them across threads or blocks changes nothing in the result.

int64_t last_dim(const Shape& s) { return s.empty() ? 1 : s.back(); }

// The op's output: every row decoded, split across the op's threads.
Status decode_all(OpContext& ctx, const StreamedWeight& w) {
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::uninitialized(w.dtype, w.shape));
  const int64_t n = numel(w.shape);
  const int64_t cols = last_dim(w.shape);
  if (n > 0 && cols > 0) {
    const int64_t row_bytes = cols * dtype_bits(w.dtype) / 8;
    std::byte* dst = out.mutable_raw();
    parallel_for(n / cols, 16, [&](int64_t r0, int64_t r1) {
      w.decode(r0 * cols, (r1 - r0) * cols, dst + r0 * row_bytes);
    });
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// iOS16 constexpr_lut_to_dense: a 1-D table and a flat stream of packed indices.
template <typename T>
void gather_lut(const T* lut, subbyte::Reader& indices, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = lut[indices.next()];
}

#if SG_DECODE_X86
SG_TARGET_SSSE3 void decode_lut4_fp16_sse(const uint16_t* table, const std::byte* packed, int64_t n,
                                          uint16_t* out);
#endif

Result<StreamedWeight> lut_ios16_stream(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor lut, ctx.get("lut"));
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(Shape shape, shape_param(ctx));
  SG_OP_CHECK(ctx, lut.rank() == 1, ErrorCode::kShape, "lut {} must be 1-D", type_str(lut));
  SG_OP_CHECK(ctx, lut.dtype() == DType::kF16 || lut.dtype() == DType::kF32 ||
                       lut.dtype() == DType::kI8 || lut.dtype() == DType::kU8,
              ErrorCode::kShape, "lut must be fp16, fp32, int8 or uint8, got {}",
              dtype_name(lut.dtype()));
  const int64_t entries = lut.numel();
  int nbits = 0;
  switch (entries) {
    case 2: nbits = 1; break;
    case 4: nbits = 2; break;
    case 16: nbits = 4; break;
    case 64: nbits = 6; break;
    case 256: nbits = 8; break;
    default:
      return ctx.error(ErrorCode::kShape,
                       fmt::format("lut has {} entries; it must have 2, 4, 16, 64 or 256", entries));
  }
  SG_OP_CHECK(ctx, indices.dtype() == DType::kU8 && indices.rank() == 1, ErrorCode::kShape,
              "indices must be a 1-D uint8 tensor, got {}", type_str(indices));
  const int64_t n = numel(shape);
  const int64_t need = (n * nbits + 7) / 8;
  SG_OP_CHECK(ctx, indices.numel() == need, ErrorCode::kShape,
              "indices hold {} bytes, but {} {}-bit indices for shape {} need {}",
              indices.numel(), n, nbits, shape_str(shape), need);
  StreamedWeight w;
  w.shape = shape;
  w.dtype = lut.dtype();
  w.decode = [lut, indices, nbits](int64_t first, int64_t count, void* dst) {
    // Typed gathers for the LUT element sizes that exist (int8/uint8, fp16, fp32): this is the
    // decoder every palettized iOS16/17 weight goes through. 4-bit indices into an fp16 table
    // (the common case) go 16 at a time through the pshufb decoder, the rest one by one.
    int64_t done = 0;
#if SG_DECODE_X86
    if (nbits == 4 && dtype_bits(lut.dtype()) == 16 && first % 2 == 0 &&
        cpu_level() >= CpuLevel::kAvx2) {  // AVX2 CPUs have SSSE3
      done = count - count % 16;
      decode_lut4_fp16_sse(lut.data<uint16_t>(), indices.raw() + first / 2, done,
                           static_cast<uint16_t*>(dst));
    }
#endif
    subbyte::Reader r(indices.raw(), nbits, first + done);
    switch (dtype_bits(lut.dtype())) {
      case 8: gather_lut(lut.data<uint8_t>(), r, static_cast<uint8_t*>(dst) + done, count - done); break;
      case 16: gather_lut(lut.data<uint16_t>(), r, static_cast<uint16_t*>(dst) + done, count - done); break;
      default: gather_lut(lut.data<uint32_t>(), r, static_cast<uint32_t*>(dst) + done, count - done); break;
    }
  };
  return w;
}

#if SG_DECODE_X86
// 4-bit indices into a 16-entry fp16 table, 16 weights per step: the table is split into its
// low and high bytes, each a 16-byte pshufb table, and the two looked-up byte vectors are
// interleaved back into fp16 values. Pure data movement, so the bits equal the scalar loop's.
// n is a multiple of 16; packed holds n / 2 bytes (element 2i in the low nibble of byte i).
SG_TARGET_SSSE3 void decode_lut4_fp16_sse(const uint16_t* table, const std::byte* packed, int64_t n,
                                 uint16_t* out) {
  const __m128i even = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i odd = _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i t0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table));
  const __m128i t1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 8));
  const __m128i lo_bytes = _mm_unpacklo_epi64(_mm_shuffle_epi8(t0, even), _mm_shuffle_epi8(t1, even));
  const __m128i hi_bytes = _mm_unpacklo_epi64(_mm_shuffle_epi8(t0, odd), _mm_shuffle_epi8(t1, odd));
  const __m128i nibble = _mm_set1_epi8(0x0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(packed + i / 2));
    const __m128i idx = _mm_unpacklo_epi8(_mm_and_si128(b, nibble),
                                          _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
    const __m128i lo = _mm_shuffle_epi8(lo_bytes, idx);
    const __m128i hi = _mm_shuffle_epi8(hi_bytes, idx);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi8(lo, hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 8), _mm_unpackhi_epi8(lo, hi));
  }
}
#endif

// iOS18 scalar palettization (one value per index: the per-tensor and per-grouped-channel
// forms coremltools writes for weights), rows [r0, r1) decoded straight from the packed
// indices into out. The group's table is found once per row and column block, so the inner
// loop is an index fetch and a table load.
template <int Bits, typename T>
void decode_scalar_lut_rows(const LutLayout& l, const std::byte* packed, int bits, const T* lut,
                            int64_t r0, int64_t r1, T* out) {
  const size_t k = l.indices_shape.size();
  const int64_t cols = l.indices_shape[k - 1];
  const int64_t col_block = l.block[k - 1];
  const int64_t col_stride = l.group_stride[k - 1];
  const int64_t palettes = l.palettes;
  [[maybe_unused]] const bool use_ssse3 = cpu_level() >= CpuLevel::kAvx2;  // AVX2 CPUs have SSSE3
  for (int64_t r = r0; r < r1; ++r) {
    int64_t group = 0;
    int64_t rest = r;
    for (size_t d = k - 1; d-- > 0;) {  // coordinates of row r in the leading dims
      const int64_t p = rest % l.indices_shape[d];
      rest /= l.indices_shape[d];
      group += (p / l.block[d]) * l.group_stride[d];
    }
    const int64_t e0 = r * cols;
    T* row = out + (r - r0) * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += col_block) {
      const T* table = lut + (group + (c0 / col_block) * col_stride) * palettes;
#if SG_DECODE_X86
      if constexpr (Bits == 4 && sizeof(T) == 2) {
        if (use_ssse3 && col_block % 16 == 0 && (e0 + c0) % 2 == 0) {
          decode_lut4_fp16_sse(table, packed + (e0 + c0) / 2, col_block, row + c0);
          continue;
        }
      }
#endif
      for (int64_t c = c0, end = c0 + col_block; c < end; ++c) {
        const int64_t e = e0 + c;
        uint32_t idx;
        if constexpr (Bits == 4) {
          idx = subbyte::nibble(packed, e);
        } else if constexpr (Bits == 8) {
          idx = static_cast<uint32_t>(packed[e]);
        } else {
          idx = subbyte::get(packed, bits, e);
        }
        row[c] = table[idx];
      }
    }
  }
}

template <typename T>
void decode_scalar_lut_any(const LutLayout& l, const Tensor& indices, const Tensor& lut,
                           int64_t r0, int64_t r1, void* dst) {
  const int bits = dtype_bits(indices.dtype());
  const T* table = lut.data<T>();
  T* out = static_cast<T*>(dst);
  if (bits == 4) {
    decode_scalar_lut_rows<4>(l, indices.raw(), bits, table, r0, r1, out);
  } else if (bits == 8) {
    decode_scalar_lut_rows<8>(l, indices.raw(), bits, table, r0, r1, out);
  } else {
    decode_scalar_lut_rows<0>(l, indices.raw(), bits, table, r0, r1, out);
  }
}

struct Lut4Registers {
  Tensor indices;
  std::vector<float> tables;
};

// A 4-bit scalar palette with fp16 entries: every group's 16 entries widened once, in the
// [parameter row, parameter column, 16] order RegisterDecode reads them.
std::shared_ptr<const RegisterDecode> lut4_registers(const LutLayout& l, const Tensor& indices,
                                                     const Tensor& lut) {
  if (indices.dtype() != DType::kU4 || lut.dtype() != DType::kF16 || l.vector_size != 1) return nullptr;
  std::optional<RegisterDecode> r = register_layout(l.indices_shape, l.block);
  if (!r.has_value()) return nullptr;
  auto keep = std::make_shared<Lut4Registers>();
  keep->indices = indices;
  // The groups are row-major over the lut's leading dims (lut_layout), so parameter row p and
  // column q name group p · param_cols + q.
  const int64_t groups = numel(lut.shape()) / 16;
  keep->tables.resize(static_cast<size_t>(groups * 16));
  f16_to_f32_span(lut.data<uint16_t>(), keep->tables.data(), keep->tables.size());
  r->kind = RegisterDecode::Kind::kLut4;
  r->codes_dtype = DType::kU4;
  r->codes = indices.raw();
  r->tables = keep->tables.data();
  r->keep = keep;
  return std::make_shared<const RegisterDecode>(*r);
}

// nullopt for the forms decoded element by element (vector LUTs, sub-byte LUT entries).
Result<std::optional<StreamedWeight>> lut_ios18_stream(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(Tensor lut, ctx.get("lut"));
  SG_ASSIGN_OR_RETURN(LutLayout l, lut_layout(ctx, indices.shape(), indices.dtype(), lut));
  if (l.vector_size != 1 || dtype_bits(lut.dtype()) < 8) return std::optional<StreamedWeight>();
  StreamedWeight w;
  w.shape = l.output_shape;
  w.dtype = lut.dtype();
  const int64_t cols = last_dim(l.output_shape);
  w.registers = lut4_registers(l, indices, lut);
  w.decode = [l, indices, lut, cols](int64_t first, int64_t count, void* dst) {
    const int64_t r0 = first / cols, r1 = (first + count) / cols;
    switch (dtype_bits(lut.dtype())) {
      case 8: decode_scalar_lut_any<uint8_t>(l, indices, lut, r0, r1, dst); break;
      case 16: decode_scalar_lut_any<uint16_t>(l, indices, lut, r0, r1, dst); break;
      default: decode_scalar_lut_any<uint32_t>(l, indices, lut, r0, r1, dst); break;
    }
  };
  return std::optional<StreamedWeight>(std::move(w));
}

Status lut_to_dense_ios18(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::optional<StreamedWeight> stream, lut_ios18_stream(ctx));
  if (stream.has_value()) return decode_all(ctx, *stream);
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(Tensor lut, ctx.get("lut"));
  SG_ASSIGN_OR_RETURN(LutLayout l, lut_layout(ctx, indices.shape(), indices.dtype(), lut));
  SG_ASSIGN_OR_RETURN(std::vector<uint8_t> idx, unpack_indices(ctx, indices));
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(lut.dtype(), l.output_shape));
  const int64_t v = l.vector_size;
  for_each_lut_output(l, [&](int64_t o, int64_t p, int64_t base) {
    copy_element(lut, base + static_cast<int64_t>(idx[static_cast<size_t>(p)]) * v, out, o);
  });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

// A decoded value in the output dtype T (fp16 bits or fp32).
template <typename T>
T to_out(float v) {
  if constexpr (sizeof(T) == 2) {
    return f32_to_f16(v);
  } else {
    return v;
  }
}

inline uint32_t code_at(const std::byte* p, int bits, int64_t e) {
  if (bits == 8) return static_cast<uint32_t>(p[e]);
  return subbyte::nibble(p, e);
}

double code_value(DType dtype, uint32_t code) {
  switch (dtype) {
    case DType::kI8: return static_cast<int8_t>(static_cast<uint8_t>(code));
    case DType::kI4: return subbyte::int4_value(code);
    default: return code;  // uint8, uint4
  }
}

// One scale block of constexpr_blockwise_shift_scale: out[i] = apply(d[i], b). The F16C path
// performs apply()'s steps in the same order with the same fp16 roundings (vcvtps2ph rounds to
// nearest even, like f32_to_f16), 8 elements at a time, so both paths give the same bits.
#if SG_DECODE_X86
SG_TARGET_F16C inline __m256 round_f16_8(__m256 x) {
  return _mm256_cvtph_ps(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
}

// The first n - n % 8 elements of shift_scale_span with F16C; returns how many were done.
// One 8-element step of ShiftScale::apply on widened values x (fp16 data already rounded to
// fp16): scale, minus the offset o (broadcast, in the offset's own rounding), stored as fp16
// bits (rounded to nearest even, like f32_to_f16) or fp32. Shared by the span and row decoders
// so both keep apply()'s order and roundings.
template <typename T>
SG_TARGET_F16C inline void shift_scale_store_8(const ShiftScale& ss, bool has_offset, __m256 s, __m256 o,
                                               __m256 x, T* out) {
  if constexpr (sizeof(T) == 2) {
    __m256 v;
    if (!has_offset) {
      v = _mm256_mul_ps(s, x);
    } else if (ss.offset_wider) {
      v = _mm256_mul_ps(s, _mm256_sub_ps(x, o));
    } else {
      v = _mm256_mul_ps(s, round_f16_8(_mm256_sub_ps(x, o)));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  } else {
    _mm256_storeu_ps(out, has_offset ? _mm256_mul_ps(s, _mm256_sub_ps(x, o)) : _mm256_mul_ps(s, x));
  }
}

template <typename T>
SG_TARGET_F16C int64_t shift_scale_span_f16c(const ShiftScale& ss, int64_t b, const float* d, int64_t n,
                                             T* out) {
  int64_t i = 0;
  const float sv = param_f16c(ss.scale, b);
  const bool has_offset = !ss.offset.empty();
  const float ov = has_offset ? param_f16c(ss.offset, b) : 0.0f;
  const __m256 s = _mm256_set1_ps(sv);
  const __m256 o = _mm256_set1_ps(sizeof(T) == 2 && !ss.offset_wider ? round_to_f16(ov) : ov);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(d + i);
    shift_scale_store_8(ss, has_offset, s, o, sizeof(T) == 2 ? round_f16_8(x) : x, out + i);
  }
  return i;
}

// Integer codes e .. e + n of an int4/uint4/int8/uint8 tensor widened to their float values,
// 8 at a time; returns how many were done (the caller finishes the rest element by element).
// 4-bit codes are read 8 per 4 bytes, so the run must start on a whole byte.
SG_TARGET_AVX2 int64_t widen_codes_avx2(const std::byte* raw, DType dtype, int64_t e, int64_t n, float* d) {
  int64_t c = 0;
  if (dtype == DType::kI8 || dtype == DType::kU8) {
    for (; c + 8 <= n; c += 8) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(raw + e + c));
      const __m256i w = dtype == DType::kI8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
      _mm256_storeu_ps(d + c, _mm256_cvtepi32_ps(w));
    }
    return c;
  }
  if (e % 2 != 0) return 0;
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i eight = _mm_set1_epi8(8);
  for (; c + 8 <= n; c += 8) {
    uint32_t four;
    std::memcpy(&four, raw + (e + c) / 2, sizeof four);
    const __m128i b = _mm_cvtsi32_si128(static_cast<int>(four));
    __m128i codes = _mm_unpacklo_epi8(_mm_and_si128(b, nibble),
                                      _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
    __m256i w;
    if (dtype == DType::kI4) {
      codes = _mm_sub_epi8(_mm_xor_si128(codes, eight), eight);  // sign-extend the nibble
      w = _mm256_cvtepi8_epi32(codes);
    } else {
      w = _mm256_cvtepu8_epi32(codes);
    }
    _mm256_storeu_ps(d + c, _mm256_cvtepi32_ps(w));
  }
  return c;
}

// A whole row of integer codes whose scale changes every col_block columns along it (per-block
// quantization, col_block a multiple of 8; 4-bit rows start on a whole byte): codes widened 8
// at a time and scaled in registers with the scale of their block (one broadcast per 8 codes),
// in shift_scale_span_f16c's steps and roundings. The code values are small integers, exact in
// fp16, so rounding them to fp16 first (as apply() does) changes nothing and is skipped.
// Replaces a widen + scale call pair per 32-element block (with a CPU-level check and a dtype
// lookup each), which was 60% of the int4 per-block MoE shard's run.
template <typename T>
SG_TARGET_AVX2_F16C void shift_scale_row_avx2(const ShiftScale& ss, const std::byte* raw, DType dtype,
                                              int64_t e0, int64_t cols, int64_t base,
                                              int64_t col_block, int64_t col_stride, T* row) {
  const bool has_offset = !ss.offset.empty();
  const bool four = dtype == DType::kI4 || dtype == DType::kU4;
  const bool is_signed = dtype == DType::kI4 || dtype == DType::kI8;
  const __m128i nibble = _mm_set1_epi8(0x0f);
  const __m128i eight = _mm_set1_epi8(8);
  for (int64_t c0 = 0; c0 < cols; c0 += col_block) {
    const int64_t b = base + (c0 / col_block) * col_stride;
    const __m256 s = _mm256_set1_ps(param_f16c(ss.scale, b));
    const float ov = has_offset ? param_f16c(ss.offset, b) : 0.0f;
    const __m256 o = _mm256_set1_ps(sizeof(T) == 2 && !ss.offset_wider ? round_to_f16(ov) : ov);
    for (int64_t c = c0; c < c0 + col_block; c += 8) {
      const int64_t e = e0 + c;
      // The codes are read once, from the mapped file's 4 KiB pages, where the hardware
      // prefetcher stops at each page end: asking one page ahead took the int8 MoE shard
      // from 26.5 to 22 ms (8 tokens, 1 thread).
      if (e % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(raw + (four ? e / 2 : e) + 4096), _MM_HINT_T0);
      __m128i codes;
      if (four) {
        uint32_t packed;
        std::memcpy(&packed, raw + e / 2, sizeof packed);
        const __m128i pb = _mm_cvtsi32_si128(static_cast<int>(packed));
        codes = _mm_unpacklo_epi8(_mm_and_si128(pb, nibble), _mm_and_si128(_mm_srli_epi16(pb, 4), nibble));
        if (is_signed) codes = _mm_sub_epi8(_mm_xor_si128(codes, eight), eight);
      } else {
        codes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(raw + e));
      }
      const __m256 x = _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(codes) : _mm256_cvtepu8_epi32(codes));
      shift_scale_store_8(ss, has_offset, s, o, x, row + c);
    }
  }
}
#endif

// One scale block of constexpr_blockwise_shift_scale: out[i] = apply(d[i], b). The F16C path
// performs apply()'s steps in the same order with the same fp16 roundings (vcvtps2ph rounds to
// nearest even, like f32_to_f16), 8 elements at a time, so both paths give the same bits.
template <typename T>
void shift_scale_span(const ShiftScale& ss, int64_t b, const float* d, int64_t n, T* out) {
  int64_t i = 0;
#if SG_DECODE_X86
  if (cpu_level() >= CpuLevel::kAvx2) i = shift_scale_span_f16c(ss, b, d, n, out);
#endif
  for (; i < n; ++i) out[i] = to_out<T>(ss.apply(d[i], b));
}

// Elements [e, e + n) of the data, all in scale block b, widened to floats (integer codes
// through `code_values`, a table of their values) into d and scaled by shift_scale_span.
template <typename T>
void shift_scale_run(const ShiftScale& ss, const Tensor& data, const float* code_values,
                     int64_t b, int64_t e, int64_t n, float* d, T* out) {
  const DType dtype = data.dtype();
  const bool integer = dtype != DType::kF16 && dtype != DType::kF32;
  const int bits = dtype_bits(dtype);
  int64_t c = 0;
#if SG_DECODE_X86
  if (integer && cpu_level() >= CpuLevel::kAvx2) c = widen_codes_avx2(data.raw(), dtype, e, n, d);
#endif
  for (; c < n; ++c) {
    float v;
    if (integer) {
      v = code_values[code_at(data.raw(), bits, e + c)];
    } else if (dtype == DType::kF16) {
      v = f16_to_f32(data.data<uint16_t>()[e + c]);
    } else {
      v = data.data<float>()[e + c];
    }
    d[c] = v;
  }
  shift_scale_span(ss, b, d, n, out);
}

// constexpr_blockwise_shift_scale, rows [r0, r1) into out (T: fp16 bits or fp32). The trailing
// dims over which the scale does not change (all of them per tensor, all but the first per
// output channel) form one run of elements sharing a scale, decoded in long vector spans: a
// conv weight's last dim is its kernel size (3 to 5), and decoding it 5 elements at a time
// cost more than the convolution (issue 11). Where the scale changes along the last dim, each
// row is decoded block by block.
template <typename T>
void decode_shift_scale_rows(const ShiftScale& ss, const Tensor& data, int64_t r0, int64_t r1,
                             T* out) {
  const Shape& shape = data.shape();
  const size_t k = shape.size();
  const int64_t cols = shape[k - 1];
  const DType dtype = data.dtype();
  const bool integer = dtype != DType::kF16 && dtype != DType::kF32;
  const int bits = dtype_bits(dtype);
  float code_values[256] = {};
  if (integer) {
    for (uint32_t code = 0; code < (1u << bits); ++code) {
      code_values[code] = static_cast<float>(code_value(dtype, code));
    }
  }
  // Dims [lead, k) have a single scale block each.
  size_t lead = k;
  while (lead > 0 && ss.scale_shape[lead - 1] == 1) --lead;
  if (lead < k) {
    int64_t run = 1;  // elements sharing one scale
    for (size_t a = lead; a < k; ++a) run *= shape[a];
    constexpr int64_t kChunk = 1024;
    std::vector<float> d(static_cast<size_t>(std::min(run, kChunk)));
#if SG_DECODE_X86
    const bool run_vector = integer && cpu_level() >= CpuLevel::kAvx2;
#endif
    const int64_t e_end = r1 * cols;
    for (int64_t e = r0 * cols; e < e_end;) {
      const int64_t outer = e / run;
      int64_t b = 0;
      int64_t rest = outer;
      for (size_t a = lead; a-- > 0;) {
        const int64_t p = rest % shape[a];
        rest /= shape[a];
        b += (p / ss.block[a]) * ss.scale_stride[a];
      }
      const int64_t stop = std::min(e_end, (outer + 1) * run);
      for (; e < stop;) {
        // kChunk is even: a run that starts byte-aligned keeps 4-bit codes aligned for the
        // vector widening in every chunk.
        const int64_t n = std::min(stop - e, kChunk);
        int64_t done = 0;
#if SG_DECODE_X86
        // Whole groups of 8 codes in registers (as a one-block row), the rest element-wise.
        if (run_vector && (bits == 8 || e % 2 == 0) && n >= 8) {
          done = n / 8 * 8;
          shift_scale_row_avx2(ss, data.raw(), dtype, e, done, b, done, 0, out + (e - r0 * cols));
        }
#endif
        if (done < n) {
          shift_scale_run(ss, data, code_values, b, e + done, n - done, d.data(), out + (e + done - r0 * cols));
        }
        e += n;
      }
    }
    return;
  }
  const int64_t col_block = ss.block[k - 1];
  const int64_t col_stride = ss.scale_stride[k - 1];
  std::vector<float> d(static_cast<size_t>(col_block));
#if SG_DECODE_X86
  const bool row_vector = integer && cpu_level() >= CpuLevel::kAvx2 && col_block % 8 == 0 &&
                          (bits == 8 || cols % 2 == 0);
#endif
  for (int64_t r = r0; r < r1; ++r) {
    int64_t base = 0;
    int64_t rest = r;
    for (size_t a = k - 1; a-- > 0;) {
      const int64_t p = rest % shape[a];
      rest /= shape[a];
      base += (p / ss.block[a]) * ss.scale_stride[a];
    }
    const int64_t e0 = r * cols;
    T* row = out + (r - r0) * cols;
#if SG_DECODE_X86
    if (row_vector) {
      shift_scale_row_avx2(ss, data.raw(), dtype, e0, cols, base, col_block, col_stride, row);
      continue;
    }
#endif
    for (int64_t c0 = 0; c0 < cols; c0 += col_block) {
      const int64_t b = base + (c0 / col_block) * col_stride;
      shift_scale_run(ss, data, code_values, b, e0 + c0, col_block, d.data(), row + c0);
    }
  }
}

struct ShiftScaleRegisters {
  Tensor data;
  std::shared_ptr<const ShiftScale> params;
};

std::shared_ptr<const RegisterDecode> shift_scale_registers(const Tensor& data,
                                                            std::shared_ptr<const ShiftScale> ss) {
  const DType t = data.dtype();
  if (ss->out_dtype != DType::kF16 ||
      !(t == DType::kI8 || t == DType::kU8 || t == DType::kI4 || t == DType::kU4)) {
    return nullptr;
  }
  std::optional<RegisterDecode> r = register_layout(data.shape(), ss->block);
  if (!r.has_value()) return nullptr;
  // The decoders subtract the offset as stored: apply() rounds it to fp16 first unless it is
  // wider, and with a fp16 scale an offset that is not wider is fp16 or a code (shift_scale_
  // params), exact in fp16, so that rounding changes nothing.
  auto keep = std::make_shared<ShiftScaleRegisters>();
  keep->data = data;
  keep->params = ss;
  r->kind = RegisterDecode::Kind::kShiftScale;
  r->codes_dtype = t;
  r->codes = data.raw();
  r->scale = ss->scale;
  r->offset = ss->offset;
  r->offset_wider = ss->offset_wider;
  // Decided here, once per stream, not at every kernel call: the scan reads one scale per row.
  r->split_rounding = (t == DType::kI8 || t == DType::kU8) && ss->offset.empty() && r->col_block == r->cols &&
                      regdec::split_exact(ss->scale, t == DType::kI8 ? 128.0f : 255.0f);
  r->keep = keep;
  return std::make_shared<const RegisterDecode>(*r);
}

Result<StreamedWeight> shift_scale_stream(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor data, ctx.get("data"));
  SG_ASSIGN_OR_RETURN(ShiftScale ss, shift_scale_params(ctx, data.shape(), data.dtype()));
  StreamedWeight w;
  w.shape = data.shape();
  w.dtype = ss.out_dtype;
  const int64_t cols = last_dim(data.shape());
  auto params = std::make_shared<const ShiftScale>(std::move(ss));
  w.registers = shift_scale_registers(data, params);
  w.decode = [params, data, cols](int64_t first, int64_t count, void* dst) {
    const int64_t r0 = first / cols, r1 = (first + count) / cols;
    if (params->out_dtype == DType::kF16) {
      decode_shift_scale_rows(*params, data, r0, r1, static_cast<uint16_t*>(dst));
    } else {
      decode_shift_scale_rows(*params, data, r0, r1, static_cast<float*>(dst));
    }
  };
  return w;
}

// iOS16 constexpr_affine_dequantize: per-tensor or per-channel along `axis`. coremltools
// computes float32(q) - float32(zp), then times the scale, in fp32; one rounding to the scale
// dtype at the end.
struct Affine {
  std::vector<float> scale, zero_point;
  int64_t channels = 1, inner = 1;
  int64_t axis = 0;
  bool signed_q = false;
};

#if SG_DECODE_X86
// out[i] = (x[i] - z) · s for the first n - n % 8 elements, in fp32 with the scalar loop's two
// roundings (no fused multiply-add), then one rounding to fp16 (vcvtps2ph, nearest even, as
// f32_to_f16): the same bits as the scalar loop. Returns how many were done.
template <typename T>
SG_TARGET_F16C int64_t affine_span_f16c(const float* x, int64_t n, float z, float s, T* out) {
  const __m256 zv = _mm256_set1_ps(z), sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), zv), sv);
    if constexpr (sizeof(T) == 2) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    } else {
      _mm256_storeu_ps(out + i, v);
    }
  }
  return i;
}
#endif

// Elements [first, first + count): each run of `inner` elements shares one channel's scale and
// zero point and is widened and scaled in vector spans (a conv weight per output channel is
// one run of C_in · K codes), so decoding costs about what reading the codes costs.
template <typename T>
void decode_affine_range(const Affine& a, const Tensor& q, int64_t first, int64_t count, T* out) {
  if (count <= 0 || a.inner <= 0) return;
  constexpr int64_t kChunk = 256;
  float x[kChunk];
  [[maybe_unused]] const bool vector = cpu_level() >= CpuLevel::kAvx2;
  const int64_t end = first + count;
  for (int64_t i = first; i < end;) {
    const int64_t c = a.channels > 0 ? (i / a.inner) % a.channels : 0;
    const int64_t stop = std::min(end, (i / a.inner + 1) * a.inner);
    const float sv = a.scale[a.scale.size() == 1 ? 0 : static_cast<size_t>(c)];
    const float zv = a.zero_point[a.zero_point.size() == 1 ? 0 : static_cast<size_t>(c)];
    while (i < stop) {
      const int64_t n = std::min(stop - i, kChunk);
      int64_t k = 0;
#if SG_DECODE_X86
      if (vector) k = widen_codes_avx2(q.raw(), q.dtype(), i, n, x);
#endif
      for (; k < n; ++k) {
        x[k] = a.signed_q ? static_cast<float>(q.data<int8_t>()[i + k])
                          : static_cast<float>(q.data<uint8_t>()[i + k]);
      }
      T* o = out + (i - first);
      k = 0;
#if SG_DECODE_X86
      if (vector) k = affine_span_f16c(x, n, zv, sv, o);
#endif
      for (; k < n; ++k) o[k] = to_out<T>((x[k] - zv) * sv);
      i += n;
    }
  }
}

// Validates the op's parameters; `q_out` receives the codes and `dtype_out` the output dtype.
Result<std::shared_ptr<Affine>> affine_params(OpContext& ctx, Tensor& q_out, DType& dtype_out) {
  SG_ASSIGN_OR_RETURN(Tensor q, ctx.get("quantized_data"));
  SG_ASSIGN_OR_RETURN(Tensor zp, ctx.get("zero_point"));
  SG_ASSIGN_OR_RETURN(Tensor scale, ctx.get("scale"));
  SG_ASSIGN_OR_RETURN(int64_t axis, ctx.get_int("axis"));
  SG_OP_CHECK(ctx, q.dtype() == DType::kI8 || q.dtype() == DType::kU8, ErrorCode::kShape,
              "quantized_data must be int8 or uint8, got {}", type_str(q));
  SG_OP_CHECK(ctx, is_float_weight(scale.dtype()), ErrorCode::kShape,
              "scale must be fp16 or fp32, got {}", type_str(scale));
  SG_OP_CHECK(ctx, zp.dtype() == DType::kI8 || zp.dtype() == DType::kU8 || is_float_weight(zp.dtype()),
              ErrorCode::kShape, "zero_point must be int8, uint8 or fp32, got {}", type_str(zp));
  const int64_t rank = q.rank();
  SG_OP_CHECK(ctx, rank >= 1, ErrorCode::kShape, "quantized_data must have rank >= 1");
  SG_OP_CHECK(ctx, axis >= -rank && axis < rank, ErrorCode::kShape,
              "axis {} is out of range for rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const int64_t channels = q.dim(axis);
  for (const Tensor* p : {&scale, &zp}) {
    const char* what = p == &scale ? "scale" : "zero_point";
    SG_OP_CHECK(ctx, p->rank() <= 1, ErrorCode::kShape, "{} {} must be a scalar or a vector",
                what, type_str(*p));
    SG_OP_CHECK(ctx, p->rank() == 0 || p->numel() == channels || p->numel() == 1,
                ErrorCode::kShape, "{} {} must have {} entries (quantized_data dim {} at axis {})",
                what, type_str(*p), channels, channels, axis);
  }
  auto a = std::make_shared<Affine>();
  a->scale = floats_of(scale);
  a->zero_point = floats_of(zp);
  a->channels = channels;
  for (int64_t d = axis + 1; d < rank; ++d) a->inner *= q.dim(d);
  a->axis = axis;
  a->signed_q = q.dtype() == DType::kI8;
  q_out = q;
  dtype_out = scale.dtype();
  return a;
}

Result<StreamedWeight> affine_stream(OpContext& ctx) {
  Tensor q;
  DType dtype = DType::kInvalid;
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Affine> a, affine_params(ctx, q, dtype));
  StreamedWeight w;
  w.shape = q.shape();
  w.dtype = dtype;
  w.decode = [a, q, dtype = w.dtype](int64_t first, int64_t count, void* dst) {
    if (dtype == DType::kF16) {
      decode_affine_range(*a, q, first, count, static_cast<uint16_t*>(dst));
    } else {
      decode_affine_range(*a, q, first, count, static_cast<float*>(dst));
    }
  };
  return w;
}

Status sparse_to_dense_impl(OpContext& ctx, const Tensor& mask, const Shape& shape,
                            const Tensor& nonzero) {
  SG_OP_CHECK(ctx, nonzero.rank() == 1, ErrorCode::kShape, "nonzero_data {} must be 1-D",
              type_str(nonzero));
  SG_OP_CHECK(ctx, nonzero.dtype() != DType::kString && nonzero.dtype() != DType::kInvalid,
              ErrorCode::kShape, "nonzero_data must be numeric");
  const int64_t n = numel(shape);
  SG_ASSIGN_OR_RETURN(int64_t set, count_set_bits(ctx, mask, n, "mask"));
  SG_OP_CHECK(ctx, set == nonzero.numel(), ErrorCode::kShape,
              "mask has {} set bits but nonzero_data has {} values", set, nonzero.numel());
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(nonzero.dtype(), shape));
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (bit(mask.raw(), i)) copy_element(nonzero, k++, out, i);
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_const(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor val, ctx.get("val"));
  ctx.set_output(0, std::move(val));
  return Status::ok();
}

Status op_constexpr_affine_dequantize(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(StreamedWeight w, affine_stream(ctx));
  return decode_all(ctx, w);
}

Status op_constexpr_cast(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor src, ctx.get("source_val"));
  SG_ASSIGN_OR_RETURN(std::string name, ctx.get_string("output_dtype"));
  const std::optional<DType> dtype = dtype_from_name(name);
  SG_OP_CHECK(ctx, dtype.has_value() && is_float_weight(*dtype), ErrorCode::kUnsupported,
              "output_dtype \"{}\" is not supported (fp16 or fp32)", name);
  SG_OP_CHECK(ctx, is_float_weight(src.dtype()), ErrorCode::kShape,
              "source_val must be fp16, got {}", type_str(src));
  auto out = cast_tensor(src, *dtype);
  SG_OP_CHECK(ctx, out.is_ok(), out.status().code(), "{}", out.status().message());
  ctx.set_output(0, std::move(out).value());
  return Status::ok();
}

Status op_constexpr_lut_to_dense(OpContext& ctx) {
  // The iOS16 form has a `shape` parameter and a 1-D LUT; the iOS18 form infers the shape
  // from a typed sub-byte indices tensor.
  if (ctx.has("shape")) {
    SG_ASSIGN_OR_RETURN(StreamedWeight w, lut_ios16_stream(ctx));
    return decode_all(ctx, w);
  }
  return lut_to_dense_ios18(ctx);
}

Status op_constexpr_blockwise_shift_scale(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(StreamedWeight w, shift_scale_stream(ctx));
  return decode_all(ctx, w);
}

Status op_constexpr_sparse_to_dense(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor nonzero, ctx.get("nonzero_data"));
  SG_ASSIGN_OR_RETURN(Tensor mask, ctx.get("mask"));
  if (ctx.has("shape")) {
    // iOS16: a flat uint8 mask, one bit per output element, LSB-first.
    SG_ASSIGN_OR_RETURN(Shape shape, shape_param(ctx));
    SG_OP_CHECK(ctx, mask.dtype() == DType::kU8 && mask.rank() == 1, ErrorCode::kShape,
                "mask must be a 1-D uint8 tensor, got {}", type_str(mask));
    const int64_t need = (numel(shape) + 7) / 8;
    SG_OP_CHECK(ctx, mask.numel() == need, ErrorCode::kShape,
                "mask holds {} bytes, but shape {} needs {}", mask.numel(), shape_str(shape),
                need);
    return sparse_to_dense_impl(ctx, mask, shape, nonzero);
  }
  SG_OP_CHECK(ctx, mask.dtype() == DType::kU1, ErrorCode::kShape, "mask must be uint1, got {}",
              type_str(mask));
  return sparse_to_dense_impl(ctx, mask, mask.shape(), nonzero);
}

Status op_constexpr_lut_to_sparse(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor mask, ctx.get("indices_mask"));
  SG_ASSIGN_OR_RETURN(Tensor nonzero, ctx.get("indices_nonzero_data"));
  SG_ASSIGN_OR_RETURN(Tensor lut, ctx.get("lut"));
  SG_OP_CHECK(ctx, mask.dtype() == DType::kU1, ErrorCode::kShape,
              "indices_mask must be uint1, got {}", type_str(mask));
  SG_OP_CHECK(ctx, nonzero.rank() == 1, ErrorCode::kShape,
              "indices_nonzero_data {} must be 1-D", type_str(nonzero));
  SG_ASSIGN_OR_RETURN(LutLayout l, lut_layout(ctx, mask.shape(), nonzero.dtype(), lut));
  const int64_t n = mask.numel();
  SG_ASSIGN_OR_RETURN(int64_t set, count_set_bits(ctx, mask, n, "indices_mask"));
  SG_OP_CHECK(ctx, set == nonzero.numel(), ErrorCode::kShape,
              "indices_mask has {} set bits but indices_nonzero_data has {} values", set,
              nonzero.numel());
  // Dense indices (0 where the mask is clear), exactly as coremltools builds them.
  SG_ASSIGN_OR_RETURN(std::vector<uint8_t> packed, unpack_indices(ctx, nonzero));
  std::vector<uint8_t> idx(static_cast<size_t>(n), 0);
  for (int64_t i = 0, k = 0; i < n; ++i) {
    if (bit(mask.raw(), i)) idx[static_cast<size_t>(i)] = packed[static_cast<size_t>(k++)];
  }
  int64_t out_count = 0;
  SG_OP_CHECK(ctx, !__builtin_mul_overflow(set, l.vector_size, &out_count), ErrorCode::kShape,
              "output size overflows");
  SG_ASSIGN_OR_RETURN(Tensor out_mask, Tensor::zeros(DType::kU1, l.output_shape));
  SG_ASSIGN_OR_RETURN(Tensor out_data, Tensor::zeros(lut.dtype(), {out_count}));
  int64_t k = 0;
  const int64_t v = l.vector_size;
  for_each_lut_output(l, [&](int64_t o, int64_t p, int64_t base) {
    if (!bit(mask.raw(), p)) return;
    set_bit(out_mask.mutable_raw(), o);
    copy_element(lut, base + static_cast<int64_t>(idx[static_cast<size_t>(p)]) * v, out_data, k++);
  });
  ctx.set_output(0, std::move(out_mask));
  ctx.set_output(1, std::move(out_data));
  return Status::ok();
}

Status op_constexpr_sparse_blockwise_shift_scale(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor mask, ctx.get("data_mask"));
  SG_ASSIGN_OR_RETURN(Tensor nonzero, ctx.get("nonzero_data"));
  SG_OP_CHECK(ctx, mask.dtype() == DType::kU1, ErrorCode::kShape,
              "data_mask must be uint1, got {}", type_str(mask));
  SG_OP_CHECK(ctx, nonzero.rank() == 1, ErrorCode::kShape, "nonzero_data {} must be 1-D",
              type_str(nonzero));
  SG_ASSIGN_OR_RETURN(ShiftScale ss, shift_scale_params(ctx, mask.shape(), nonzero.dtype()));
  const int64_t n = mask.numel();
  SG_ASSIGN_OR_RETURN(int64_t set, count_set_bits(ctx, mask, n, "data_mask"));
  SG_OP_CHECK(ctx, set == nonzero.numel(), ErrorCode::kShape,
              "data_mask has {} set bits but nonzero_data has {} values", set, nonzero.numel());
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(ss.out_dtype, {set}));
  Coords c(mask.shape());
  for (int64_t i = 0, k = 0; i < n; ++i, c.next()) {
    if (!bit(mask.raw(), i)) continue;
    store_float(out, k, ss.apply(element_as_double(nonzero, k), ss.block_index(c.at())));
    ++k;
  }
  ctx.set_output(0, mask);
  ctx.set_output(1, std::move(out));
  return Status::ok();
}

// ---------------------------------------------------------------------------------------
// The codes behind a compressed weight (weight_codes.h), for the weight diagnostics. Each
// form reuses the parameter validation and the per-element arithmetic of its decoder above,
// so a code's value here is the value the kernel writes.

namespace {

float rounded(DType out, float v) { return out == DType::kF16 ? round_to_f16(v) : v; }

WeightCodes codes_common(const char* op_type, WeightCodes::Kind kind, const Tensor& codes,
                         DType code_dtype, const Shape& shape) {
  WeightCodes c;
  c.kind = kind;
  c.op_type = op_type;
  c.shape = shape;
  c.code_dtype = code_dtype;
  c.bits = dtype_bits(code_dtype);
  c.is_signed = dtype_is_signed(code_dtype);
  c.codes = codes;
  return c;
}

Result<std::optional<WeightCodes>> shift_scale_codes(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor data, ctx.get("data"));
  const DType t = data.dtype();
  // fp16/fp32 data is a scaled float weight, not codes.
  if (t != DType::kI4 && t != DType::kU4 && t != DType::kI8 && t != DType::kU8) {
    return std::optional<WeightCodes>();
  }
  SG_ASSIGN_OR_RETURN(ShiftScale ss, shift_scale_params(ctx, data.shape(), t));
  WeightCodes c = codes_common("constexpr_blockwise_shift_scale", WeightCodes::Kind::kLinear,
                               data, t, data.shape());
  c.group_shape = ss.scale_shape;
  c.block = ss.block;
  for (int64_t i = 0; i < ss.scale.size(); ++i) c.step.push_back(std::fabs(ss.scale[i]));
  auto params = std::make_shared<const ShiftScale>(std::move(ss));
  c.value = [params](int64_t group, int64_t code) {
    return params->apply(static_cast<double>(code), group);
  };
  return std::optional<WeightCodes>(std::move(c));
}

Result<std::optional<WeightCodes>> affine_codes(OpContext& ctx) {
  Tensor q;
  DType out = DType::kInvalid;
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Affine> a, affine_params(ctx, q, out));
  WeightCodes c = codes_common("constexpr_affine_dequantize", WeightCodes::Kind::kLinear, q,
                               q.dtype(), q.shape());
  const bool per_channel = a->scale.size() > 1 || a->zero_point.size() > 1;
  c.group_shape.assign(q.shape().size(), 1);
  c.block = q.shape();
  if (per_channel) {
    c.group_shape[static_cast<size_t>(a->axis)] = a->channels;
    c.block[static_cast<size_t>(a->axis)] = 1;
  }
  const int64_t groups = per_channel ? a->channels : 1;
  for (int64_t g = 0; g < groups; ++g) {
    c.step.push_back(std::fabs(a->scale[a->scale.size() == 1 ? 0 : static_cast<size_t>(g)]));
  }
  c.value = [a, out](int64_t group, int64_t code) {
    const float sv = a->scale[a->scale.size() == 1 ? 0 : static_cast<size_t>(group)];
    const float zv = a->zero_point[a->zero_point.size() == 1 ? 0 : static_cast<size_t>(group)];
    return rounded(out, (static_cast<float>(code) - zv) * sv);
  };
  return std::optional<WeightCodes>(std::move(c));
}

Result<std::optional<WeightCodes>> lut_codes(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor indices, ctx.get("indices"));
  SG_ASSIGN_OR_RETURN(Tensor lut, ctx.get("lut"));
  if (ctx.has("shape")) {
    // iOS16: validated by the stream builder; one table for the whole tensor.
    SG_ASSIGN_OR_RETURN(StreamedWeight w, lut_ios16_stream(ctx));
    const int nbits = std::countr_zero(static_cast<uint64_t>(lut.numel()));
    DType code_dtype = DType::kU8;
    for (DType d : {DType::kU1, DType::kU2, DType::kU4, DType::kU6, DType::kU8}) {
      if (dtype_bits(d) == nbits) code_dtype = d;
    }
    WeightCodes c = codes_common("constexpr_lut_to_dense", WeightCodes::Kind::kPalette, indices,
                                 code_dtype, w.shape);
    c.bits = nbits;
    c.group_shape.assign(w.shape.size(), 1);
    c.block = w.shape;
    const std::vector<float> table = floats_of(lut);
    c.value = [table](int64_t, int64_t code) { return table[static_cast<size_t>(code)]; };
    return std::optional<WeightCodes>(std::move(c));
  }
  SG_ASSIGN_OR_RETURN(LutLayout l, lut_layout(ctx, indices.shape(), indices.dtype(), lut));
  if (l.vector_size != 1) return std::optional<WeightCodes>();
  WeightCodes c = codes_common("constexpr_lut_to_dense", WeightCodes::Kind::kPalette, indices,
                               indices.dtype(), l.output_shape);
  c.group_shape.assign(lut.shape().begin(), lut.shape().begin() + indices.rank());
  c.block = l.block;
  const std::vector<float> table = floats_of(lut);
  const int64_t palettes = l.palettes;
  c.value = [table, palettes](int64_t group, int64_t code) {
    return table[static_cast<size_t>(group * palettes + code)];
  };
  return std::optional<WeightCodes>(std::move(c));
}

}  // namespace

// The rows' functions of the weight-format table (weight_formats.def).
namespace wdec {

Result<std::optional<StreamedWeight>> stream_lut_packed(OpContext& producer) {
  SG_ASSIGN_OR_RETURN(StreamedWeight w, lut_ios16_stream(producer));
  return std::optional<StreamedWeight>(std::move(w));
}
Result<std::optional<StreamedWeight>> stream_lut_grouped(OpContext& producer) {
  return lut_ios18_stream(producer);
}
Result<std::optional<StreamedWeight>> stream_shift_scale(OpContext& producer) {
  SG_ASSIGN_OR_RETURN(StreamedWeight w, shift_scale_stream(producer));
  return std::optional<StreamedWeight>(std::move(w));
}
Result<std::optional<StreamedWeight>> stream_affine(OpContext& producer) {
  SG_ASSIGN_OR_RETURN(StreamedWeight w, affine_stream(producer));
  return std::optional<StreamedWeight>(std::move(w));
}
Result<std::optional<WeightCodes>> codes_lut(OpContext& producer) { return lut_codes(producer); }
Result<std::optional<WeightCodes>> codes_shift_scale(OpContext& producer) {
  return shift_scale_codes(producer);
}
Result<std::optional<WeightCodes>> codes_affine(OpContext& producer) { return affine_codes(producer); }

}  // namespace wdec

Result<std::optional<StreamedWeight>> stream_constexpr(OpContext& producer) {
  const WeightFormat* f = find_weight_format(ParamTypes(producer.function(), producer.op()));
  if (f == nullptr || f->stream == nullptr) return std::optional<StreamedWeight>();
  return f->stream(producer);
}

Result<std::optional<WeightCodes>> codes_constexpr(OpContext& producer) {
  const WeightFormat* f = find_weight_format(ParamTypes(producer.function(), producer.op()));
  if (f == nullptr || f->codes == nullptr) return std::optional<WeightCodes>();
  return f->codes(producer);
}

const char* weight_decode_variant_name(CpuLevel level) {
#if SG_DECODE_X86
  if (level >= CpuLevel::kAvx2) return "weight_decode_8__ssse3_avx2_f16c";
#else
  (void)level;
#endif
  return "weight_decode_1__scalar";
}

}  // namespace sg
