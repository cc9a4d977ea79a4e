// Constexpr decoders on handcrafted parameters, run through the op harness (no model files).
// Expected values are worked out by hand in the comments, or are the examples of the
// coremltools op docstrings (iOS18 compression ops), so a wrong bit order, group mapping or
// vector layout fails.
#include "shardgate/half.h"
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sg {
namespace {

using testing::f16s;
using testing::f32s;
using testing::HarnessInput;
using testing::run_op;

Tensor u8s(const Shape& shape, const std::vector<uint8_t>& v) {
  Tensor t = Tensor::zeros(DType::kU8, shape).value();
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<uint8_t>()[i] = v[i];
  return t;
}

Tensor i8s(const Shape& shape, const std::vector<int8_t>& v) {
  Tensor t = Tensor::zeros(DType::kI8, shape).value();
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<int8_t>()[i] = v[i];
  return t;
}

Tensor u32s(const std::vector<uint32_t>& v) {
  Tensor t = Tensor::zeros(DType::kU32, {static_cast<int64_t>(v.size())}).value();
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<uint32_t>()[i] = v[i];
  return t;
}

// A sub-byte tensor holding `v`: element i occupies stream bits [i*n, (i+1)*n), stream bit k
// being bit k%8 of byte k/8 (runtime/format/README.md, Sub-byte packing).
Tensor packed(DType dtype, const Shape& shape, const std::vector<uint32_t>& v) {
  Tensor t = Tensor::zeros(dtype, shape).value();
  const int n = dtype_bits(dtype);
  auto* bytes = reinterpret_cast<uint8_t*>(t.mutable_raw());
  for (size_t i = 0; i < v.size(); ++i) {
    for (int b = 0; b < n; ++b) {
      const size_t k = i * static_cast<size_t>(n) + static_cast<size_t>(b);
      if ((v[i] >> b) & 1u) bytes[k / 8] |= static_cast<uint8_t>(1u << (k % 8));
    }
  }
  return t;
}

HarnessInput in(std::string name, Tensor t) { return HarnessInput::tensor(std::move(name), std::move(t)); }

std::vector<float> values(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = static_cast<float>(element_as_double(t, i));
  return v;
}

Tensor run1(const std::string& op, std::vector<HarnessInput> inputs, DType out) {
  auto r = run_op(op, inputs, {out}, Precision::kFp16);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Tensor();
  return (*r)[0];
}

std::string error_of(const std::string& op, std::vector<HarnessInput> inputs,
                     std::vector<DType> outs = {DType::kF16}) {
  auto r = run_op(op, inputs, outs, Precision::kFp16);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? std::string() : r.status().message();
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << (haystack)

// ----------------------------------------------------------------------------- const / cast

TEST(ConstexprOps, ConstReturnsItsValue) {
  Tensor v = run1("const", {in("val", f16s({2}, {1.5f, -2.0f}))}, DType::kF16);
  EXPECT_EQ(values(v), (std::vector<float>{1.5f, -2.0f}));
}

TEST(ConstexprOps, CastWidensFp16ToFp32) {
  Tensor v = run1("constexpr_cast",
                  {in("source_val", f16s({3}, {0.333251953125f, -65504.0f, 1e-7f})),
                   in("output_dtype", testing::str("fp32"))},
                  DType::kF32);
  ASSERT_EQ(v.dtype(), DType::kF32);
  EXPECT_EQ(v.data<float>()[0], 0.333251953125f);
  EXPECT_EQ(v.data<float>()[1], -65504.0f);
  EXPECT_EQ(v.data<float>()[2], round_to_f16(1e-7f));
  EXPECT_HAS(error_of("constexpr_cast", {in("source_val", f16s({1}, {1})),
                                         in("output_dtype", testing::str("int8"))}),
             "output_dtype \"int8\"");
}

// ----------------------------------------------------------------------------- iOS16 LUT

TEST(ConstexprOps, LutToDenseIos16Unpacks2BitIndicesLsbFirst) {
  // indices 0,1,2,3,3,0 at 2 bits: byte0 = 0b11'10'01'00 = 0xE4, byte1 = 0b00'11 = 0x03.
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", u8s({2}, {0xE4, 0x03})), in("lut", f16s({4}, {10, 20, 30, 40})),
                   in("shape", u32s({2, 3}))},
                  DType::kF16);
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(v), (std::vector<float>{10, 20, 30, 40, 40, 10}));
}

TEST(ConstexprOps, LutToDenseIos16Handles6BitIndicesAcrossBytes) {
  // 63, 1, 32, 5 at 6 bits (numpy packbits bitorder="little"): 0x7f 0x00 0x16.
  std::vector<float> lut(64);
  for (int i = 0; i < 64; ++i) lut[static_cast<size_t>(i)] = static_cast<float>(i);
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", u8s({3}, {0x7f, 0x00, 0x16})), in("lut", f32s({64}, lut)),
                   in("shape", u32s({4}))},
                  DType::kF32);
  EXPECT_EQ(values(v), (std::vector<float>{63, 1, 32, 5}));
}

TEST(ConstexprOps, LutToDenseIos16FourBitFp16TableOnEveryPath) {
  // 4-bit indices into a 16-entry fp16 table take the 16-at-a-time pshufb decoder on AVX2 CPUs
  // (from an even element), the scalar gather for the rest: 84 elements decoded as a whole are
  // 80 through the vector path and a tail of 4. Every element must be lut[index].
  const int64_t n = 4 * 21;
  std::vector<uint32_t> idx(static_cast<size_t>(n));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>((i * 7 + 3) % 16);
  std::vector<float> lut(16);
  for (size_t i = 0; i < lut.size(); ++i) lut[i] = 0.25f * static_cast<float>(i) - 1.5f;
  Tensor indices = packed(DType::kU4, {n}, idx);
  std::vector<uint8_t> bytes(static_cast<size_t>(indices.nbytes()));
  std::memcpy(bytes.data(), indices.raw(), bytes.size());
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", u8s({static_cast<int64_t>(bytes.size())}, bytes)),
                   in("lut", f16s({16}, lut)), in("shape", u32s({4, 21}))},
                  DType::kF16);
  const std::vector<float> got = values(v);
  ASSERT_EQ(got.size(), idx.size());
  for (size_t i = 0; i < idx.size(); ++i) ASSERT_EQ(got[i], lut[idx[i]]) << i;
}

TEST(ConstexprOps, LutToDenseIos16RejectsBadLutAndShortIndices) {
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", u8s({2}, {0, 0})), in("lut", f16s({3}, {1, 2, 3})),
                       in("shape", u32s({2, 3}))}),
             "lut has 3 entries");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", u8s({1}, {0})), in("lut", f16s({4}, {1, 2, 3, 4})),
                       in("shape", u32s({2, 3}))}),
             "indices hold 1 bytes, but 6 2-bit indices for shape [2, 3] need 2");
  // The error names the op.
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", u8s({1}, {0})), in("lut", f16s({4}, {1, 2, 3, 4})),
                       in("shape", u32s({2, 3}))}),
             "'constexpr_lut_to_dense'");
}

// ----------------------------------------------------------------------------- iOS18 LUT

TEST(ConstexprOps, LutToDenseIos18PerGroupedChannel) {
  // coremltools docstring, case 1: two LUTs along axis 0 (3 rows each).
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", packed(DType::kU2, {6, 2}, {2, 3, 3, 0, 1, 0, 3, 0, 2, 1, 0, 3})),
                   in("lut", f16s({2, 1, 4, 1}, {1, 5, 9, 13, 2, 10, 18, 26}))},
                  DType::kF16);
  EXPECT_EQ(v.shape(), (Shape{6, 2}));
  EXPECT_EQ(values(v), (std::vector<float>{9, 13, 13, 1, 5, 1, 26, 2, 18, 10, 2, 26}));
}

TEST(ConstexprOps, LutToDenseIos18GroupsAlongAxis1) {
  // indices uint1 [2, 4], lut [1, 2, 2, 1]: columns 0-1 use {0, 1}, columns 2-3 use {10, 11}.
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", packed(DType::kU1, {2, 4}, {1, 0, 1, 0, 0, 1, 0, 1})),
                   in("lut", f16s({1, 2, 2, 1}, {0, 1, 10, 11}))},
                  DType::kF16);
  EXPECT_EQ(values(v), (std::vector<float>{1, 0, 11, 10, 0, 1, 10, 11}));
}

// 4-bit indices with fp16 tables take a 16-at-a-time shuffle path when a table's column run is
// a multiple of 16 and starts on a whole byte, and the element loop otherwise. Both must give
// lut[group(r, c)][index(r, c)] for every element; the expectation is that definition written
// out element by element. Table values g·100 + entry make a wrong group or entry visible.
void expect_lut4_decodes_by_definition(int64_t rows, int64_t cols, int64_t row_groups,
                                       int64_t col_groups) {
  std::vector<uint32_t> idx(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>((i * 7 + i / 5) % 16);
  std::vector<float> lut;
  for (int64_t g = 0; g < row_groups * col_groups; ++g) {
    for (int e = 0; e < 16; ++e) lut.push_back(static_cast<float>(g * 100 + e));
  }
  Tensor v = run1("constexpr_lut_to_dense",
                  {in("indices", packed(DType::kU4, {rows, cols}, idx)),
                   in("lut", f16s({row_groups, col_groups, 16, 1}, lut))},
                  DType::kF16);
  ASSERT_EQ(v.shape(), (Shape{rows, cols}));
  const std::vector<float> got = values(v);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t g = (r / (rows / row_groups)) * col_groups + c / (cols / col_groups);
      const size_t i = static_cast<size_t>(r * cols + c);
      ASSERT_EQ(got[i], static_cast<float>(g * 100 + idx[i]))
          << rows << "x" << cols << " groups " << row_groups << "x" << col_groups << " at (" << r
          << ", " << c << ")";
    }
  }
}

TEST(ConstexprOps, LutToDenseIos18FourBitMatchesTheDefinitionOnEveryPath) {
  expect_lut4_decodes_by_definition(4, 64, 2, 1);   // per-grouped-channel, 64-wide runs
  expect_lut4_decodes_by_definition(5, 48, 1, 3);   // groups along columns, 16-wide runs
  expect_lut4_decodes_by_definition(3, 17, 3, 1);   // odd width: rows start mid-byte
  expect_lut4_decodes_by_definition(2, 40, 2, 5);   // 8-wide runs: element loop
}

TEST(ConstexprOps, LutToDenseIos18VectorPalettization) {
  // coremltools docstring, case 2: indices [[[0,0],[1,0]],[[1,1],[0,0]]], a = (1,2,3),
  // b = (4,5,6).
  const std::vector<uint32_t> idx = {0, 0, 1, 0, 1, 1, 0, 0};
  Tensor lut = i8s({1, 1, 1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axis1 = run1("constexpr_lut_to_dense",
                      {in("indices", packed(DType::kU1, {2, 2, 2}, idx)), in("lut", lut),
                       in("vector_axis", Tensor::scalar_i32(1))},
                      DType::kI8);
  EXPECT_EQ(axis1.shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(values(axis1), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 1, 5, 2, 6, 3,  //
                                               4, 4, 5, 5, 6, 6, 1, 1, 2, 2, 3, 3}));
  Tensor axis2 = run1("constexpr_lut_to_dense",
                      {in("indices", packed(DType::kU1, {2, 2, 2}, idx)), in("lut", lut),
                       in("vector_axis", Tensor::scalar_i32(-1))},
                      DType::kI8);
  EXPECT_EQ(axis2.shape(), (Shape{2, 2, 6}));
  EXPECT_EQ(values(axis2), (std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 1, 2, 3,  //
                                               4, 5, 6, 4, 5, 6, 1, 2, 3, 1, 2, 3}));
}

TEST(ConstexprOps, LutToDenseIos18RejectsInconsistentParameters) {
  Tensor idx = packed(DType::kU2, {6, 2}, std::vector<uint32_t>(12, 1));
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", idx), in("lut", f16s({1, 1, 3, 1}, {1, 2, 3}))}),
             "has 3 palette entries, but uint2 indices need exactly 4");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", idx), in("lut", f16s({4, 1, 4, 1}, std::vector<float>(16, 0)))}),
             "indices dim 6 (axis 0) is not divisible by the lut's 4 groups");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", idx), in("lut", f16s({1, 1, 4, 2}, std::vector<float>(8, 0)))}),
             "no vector_axis");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", idx), in("lut", f16s({1, 4, 1}, std::vector<float>(4, 0)))}),
             "must have rank 4");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", idx), in("lut", f16s({1, 1, 4, 2}, std::vector<float>(8, 0))),
                       in("vector_axis", Tensor::scalar_i32(2))}),
             "vector_axis 2 is out of range");
  EXPECT_HAS(error_of("constexpr_lut_to_dense",
                      {in("indices", i8s({2}, {0, 1})), in("lut", f16s({1, 256, 1}, std::vector<float>(256, 0)))}),
             "indices must be uint1/2/3/4/6/8");
}

// ----------------------------------------------------------------------------- affine

TEST(ConstexprOps, AffineDequantizePerChannelAlongAxis0) {
  // scale * (q - zp) per row: row0 zp 0 scale 0.5, row1 zp 10 scale 0.25.
  Tensor v = run1("constexpr_affine_dequantize",
                  {in("quantized_data", i8s({2, 3}, {-1, 0, 1, 10, 20, 30})),
                   in("zero_point", i8s({2}, {0, 10})), in("scale", f16s({2}, {0.5f, 0.25f})),
                   in("axis", Tensor::scalar_i32(0))},
                  DType::kF16);
  ASSERT_EQ(v.dtype(), DType::kF16);
  EXPECT_EQ(values(v), (std::vector<float>{-0.5f, 0, 0.5f, 0, 2.5f, 5}));
}

TEST(ConstexprOps, AffineDequantizeVectorRunsMatchTheScalarArithmetic) {
  // A conv weight [C_out, C_in, K] per output channel: each channel is one run of C_in·K codes,
  // widened and scaled 8 at a time (AVX2/F16C) with the tail element by element. Every element
  // must be float16(float32(q - zp) · scale), the arithmetic coremltools uses. 6 channels of
  // 5·7 = 35 codes (4 vector steps and a tail of 3), fp16 scales with long mantissas.
  const Shape shape = {6, 5, 7};
  std::vector<int8_t> q(210);
  for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(static_cast<int>(i * 53 % 256) - 128);
  const std::vector<int8_t> zp = {0, 3, -7, 12, -128, 127};
  const std::vector<float> scale = {0.013702f, 0.0071831f, 1.337f, 0.00051f, 3.3333f, 0.1f};
  Tensor v = run1("constexpr_affine_dequantize",
                  {in("quantized_data", i8s(shape, q)), in("zero_point", i8s({6}, zp)),
                   in("scale", f16s({6}, scale)), in("axis", Tensor::scalar_i32(0))},
                  DType::kF16);
  const std::vector<float> got = values(v);
  ASSERT_EQ(got.size(), q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    const size_t c = i / 35;
    const float want = round_to_f16((static_cast<float>(q[i]) - static_cast<float>(zp[c])) *
                                    round_to_f16(scale[c]));
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST(ConstexprOps, AffineDequantizeAlongLastAxisWithScalarZeroPoint) {
  // uint8 data, zp 128 for all, per-column fp32 scale (axis -1).
  Tensor v = run1("constexpr_affine_dequantize",
                  {in("quantized_data", u8s({2, 2}, {128, 130, 0, 255})),
                   in("zero_point", u8s({}, {128})), in("scale", f32s({2}, {0.5f, 2.0f})),
                   in("axis", Tensor::scalar_i32(-1))},
                  DType::kF32);
  EXPECT_EQ(values(v), (std::vector<float>{0, 4, -64, 254}));
}

TEST(ConstexprOps, AffineDequantizeRejectsWrongVectorLength) {
  EXPECT_HAS(error_of("constexpr_affine_dequantize",
                      {in("quantized_data", i8s({2, 3}, {0, 0, 0, 0, 0, 0})),
                       in("zero_point", i8s({3}, {0, 0, 0})), in("scale", f16s({2}, {1, 1})),
                       in("axis", Tensor::scalar_i32(0))}),
             "zero_point tensor<int8, [3]> must have 2 entries");
  EXPECT_HAS(error_of("constexpr_affine_dequantize",
                      {in("quantized_data", i8s({2}, {0, 0})), in("zero_point", i8s({}, {0})),
                       in("scale", f16s({}, {1})), in("axis", Tensor::scalar_i32(1))}),
             "axis 1 is out of range");
}

// ----------------------------------------------------------------------------- blockwise

TEST(ConstexprOps, BlockwiseShiftScaleWithBlocksAndOffset) {
  // data [2, 4], scale/offset [2, 2] -> blocks of 1 x 2.
  // row0: (1-1)*1, (2-1)*1, (3-0)*2, (4-0)*2; row1: (5-2)*.5, (6-2)*.5, (7-4)*.25, (8-4)*.25
  Tensor v = run1("constexpr_blockwise_shift_scale",
                  {in("data", i8s({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})),
                   in("scale", f16s({2, 2}, {1, 2, 0.5f, 0.25f})),
                   in("offset", i8s({2, 2}, {1, 0, 2, 4}))},
                  DType::kF16);
  EXPECT_EQ(values(v), (std::vector<float>{0, 1, 6, 8, 1.5f, 2, 0.75f, 1}));
}

TEST(ConstexprOps, BlockwiseShiftScaleInt4Data) {
  // int4 -8..7 (two's complement nibbles), one scale per row, no offset.
  Tensor data = packed(DType::kI4, {2, 2}, {0x8, 0x7, 0xF, 0x1});  // -8, 7, -1, 1
  Tensor v = run1("constexpr_blockwise_shift_scale",
                  {in("data", data), in("scale", f32s({2, 1}, {0.5f, 3.0f}))}, DType::kF32);
  EXPECT_EQ(values(v), (std::vector<float>{-4, 3.5f, -3, 3}));
}

TEST(ConstexprOps, BlockwiseShiftScaleRoundsInFp16LikeNumpy) {
  // fp32 data is first converted to the fp16 scale dtype: 1.0004 -> 1.0 in fp16, so the
  // result is exactly 3.0 (computing in fp32 first would give 3.0012 -> 3.002 in fp16).
  Tensor v = run1("constexpr_blockwise_shift_scale",
                  {in("data", f32s({2}, {1.0004f, 2049.0f})), in("scale", f16s({1}, {3.0f}))},
                  DType::kF16);
  ASSERT_EQ(v.dtype(), DType::kF16);
  EXPECT_EQ(values(v)[0], 3.0f);
  // 2049 -> fp16 2048 (ties to even), times 3 = 6144.
  EXPECT_EQ(values(v)[1], 6144.0f);
}

TEST(ConstexprOps, BlockwiseShiftScaleVectorPathsMatchNumpyArithmetic) {
  // Runs of 8 codes are widened and scaled 8 at a time (AVX2/F16C), the rest element by
  // element; every element must equal numpy's fp16 arithmetic on it: float16(scale *
  // float16(data)) without offset, float16(scale * float16(data - offset)) with one. Scales
  // with long mantissas make every product round.
  const int64_t cols = 256;
  std::vector<int8_t> d(static_cast<size_t>(2 * cols));
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 256) - 128);
  const std::vector<float> scale = {0.013702f, 0.0071831f};
  Tensor v = run1("constexpr_blockwise_shift_scale",
                  {in("data", i8s({2, cols}, d)), in("scale", f16s({2, 1}, scale))}, DType::kF16);
  const std::vector<float> got = values(v);
  for (int64_t r = 0; r < 2; ++r) {
    const float s = round_to_f16(scale[static_cast<size_t>(r)]);
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      ASSERT_EQ(got[i], round_to_f16(s * static_cast<float>(d[i]))) << "int8 at " << i;
    }
  }
  // int4, blocks of 16 columns with int4 offsets.
  std::vector<uint32_t> nib(64);
  for (size_t i = 0; i < nib.size(); ++i) nib[i] = static_cast<uint32_t>((i * 5 + 3) % 16);
  const std::vector<float> s4 = {0.3337f, 1.0009f, 0.0123f, 7.77f};
  const std::vector<uint32_t> off = {1, 15, 8, 0};  // 1, -1, -8, 0
  Tensor w = run1("constexpr_blockwise_shift_scale",
                  {in("data", packed(DType::kI4, {2, 32}, nib)), in("scale", f16s({2, 2}, s4)),
                   in("offset", packed(DType::kI4, {2, 2}, off))},
                  DType::kF16);
  const std::vector<float> got4 = values(w);
  auto int4 = [](uint32_t n) { return n >= 8 ? static_cast<float>(n) - 16 : static_cast<float>(n); };
  for (size_t i = 0; i < nib.size(); ++i) {
    const size_t b = (i / 32) * 2 + (i % 32) / 16;
    const float t = round_to_f16(int4(nib[i]) - int4(off[b]));
    ASSERT_EQ(got4[i], round_to_f16(round_to_f16(s4[b]) * t)) << "int4 at " << i;
  }
  // uint4 rows of 17 (odd rows start mid-byte) and uint8, fp32 scales: float32(scale * data).
  std::vector<uint32_t> u4(51);
  for (size_t i = 0; i < u4.size(); ++i) u4[i] = static_cast<uint32_t>((i * 11 + 2) % 16);
  const std::vector<float> s3 = {0.1f, 0.7f, 1.3f};
  Tensor x = run1("constexpr_blockwise_shift_scale",
                  {in("data", packed(DType::kU4, {3, 17}, u4)), in("scale", f32s({3, 1}, s3))},
                  DType::kF32);
  const std::vector<float> gotu = values(x);
  for (size_t i = 0; i < u4.size(); ++i) {
    ASSERT_EQ(gotu[i], s3[i / 17] * static_cast<float>(u4[i])) << "uint4 at " << i;
  }
  std::vector<uint8_t> u8(20);
  for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<uint8_t>(i * 13);
  Tensor y = run1("constexpr_blockwise_shift_scale",
                  {in("data", u8s({20}, u8)), in("scale", f32s({1}, {0.37f}))}, DType::kF32);
  const std::vector<float> got8 = values(y);
  for (size_t i = 0; i < u8.size(); ++i) ASSERT_EQ(got8[i], 0.37f * static_cast<float>(u8[i])) << i;
}

TEST(ConstexprOps, BlockwiseShiftScaleConvShapedRunsMatchNumpyArithmetic) {
  // Conv weights [C_out, C_in, K]: the scale is constant over the trailing dims (per tensor, or
  // per output channel), which the decoder reads as one run of C_in * K elements (per channel)
  // or of the whole tensor (per tensor) in chunks of 1024, instead of K at a time. Runs longer
  // than a chunk, runs that start mid-byte (uint4, odd lengths) and every element's fp16
  // arithmetic must agree with numpy's float16(scale * float16(data)).
  const Shape shape = {40, 16, 3};  // 1920 elements: the per-tensor run spans two chunks
  std::vector<int8_t> d(1920);
  for (size_t i = 0; i < d.size(); ++i) d[i] = static_cast<int8_t>(static_cast<int>(i * 71 % 256) - 128);
  std::vector<float> per_channel(40);
  for (size_t c = 0; c < per_channel.size(); ++c) per_channel[c] = 0.0013f * static_cast<float>(c + 1);
  for (bool channel : {false, true}) {
    Tensor scale = channel ? f16s({40, 1, 1}, per_channel) : f16s({1, 1, 1}, {0.0071831f});
    Tensor v = run1("constexpr_blockwise_shift_scale", {in("data", i8s(shape, d)), in("scale", scale)},
                    DType::kF16);
    const std::vector<float> got = values(v);
    ASSERT_EQ(got.size(), d.size());
    for (size_t i = 0; i < d.size(); ++i) {
      const float s = round_to_f16(channel ? per_channel[i / 48] : 0.0071831f);
      ASSERT_EQ(got[i], round_to_f16(s * static_cast<float>(d[i]))) << (channel ? "per channel " : "per tensor ") << i;
    }
  }
  // uint4 [7, 5, 3] per output channel: runs of 15 codes, every other one starting mid-byte.
  std::vector<uint32_t> u4(105);
  for (size_t i = 0; i < u4.size(); ++i) u4[i] = static_cast<uint32_t>((i * 7 + 5) % 16);
  std::vector<float> s7(7);
  for (size_t c = 0; c < s7.size(); ++c) s7[c] = 0.37f + 0.11f * static_cast<float>(c);
  Tensor w = run1("constexpr_blockwise_shift_scale",
                  {in("data", packed(DType::kU4, {7, 5, 3}, u4)), in("scale", f32s({7, 1, 1}, s7))},
                  DType::kF32);
  const std::vector<float> got4 = values(w);
  for (size_t i = 0; i < u4.size(); ++i) ASSERT_EQ(got4[i], s7[i / 15] * static_cast<float>(u4[i])) << i;
}

TEST(ConstexprOps, BlockwiseShiftScaleRejectsBadBlocks) {
  EXPECT_HAS(error_of("constexpr_blockwise_shift_scale",
                      {in("data", i8s({2, 4}, std::vector<int8_t>(8, 0))),
                       in("scale", f16s({2, 3}, std::vector<float>(6, 1)))}),
             "does not divide data [2, 4] at axis 1");
  EXPECT_HAS(error_of("constexpr_blockwise_shift_scale",
                      {in("data", i8s({2, 4}, std::vector<int8_t>(8, 0))),
                       in("scale", f16s({2}, {1, 1}))}),
             "must have the data's rank 2");
  EXPECT_HAS(error_of("constexpr_blockwise_shift_scale",
                      {in("data", i8s({2, 4}, std::vector<int8_t>(8, 0))),
                       in("scale", f16s({2, 1}, {1, 1})), in("offset", i8s({1, 2}, {0, 0}))}),
             "must have the scale's shape [2, 1]");
  EXPECT_HAS(error_of("constexpr_blockwise_shift_scale",
                      {in("data", i8s({2, 4}, std::vector<int8_t>(8, 0))),
                       in("scale", f16s({2, 1}, {1, 1})), in("offset", u8s({2, 1}, {0, 0}))}),
             "must be float or the data dtype int8");
}

// ----------------------------------------------------------------------------- sparse

TEST(ConstexprOps, SparseToDenseIos16) {
  // mask 0b00100101: bits 0, 2, 5 of a [2, 3] output.
  Tensor v = run1("constexpr_sparse_to_dense",
                  {in("nonzero_data", f16s({3}, {7, 8, 9})), in("mask", u8s({1}, {0x25})),
                   in("shape", u32s({2, 3}))},
                  DType::kF16);
  EXPECT_EQ(v.shape(), (Shape{2, 3}));
  EXPECT_EQ(values(v), (std::vector<float>{7, 0, 8, 0, 0, 9}));
}

TEST(ConstexprOps, SparseToDenseIos18WithUint1Mask) {
  Tensor v = run1("constexpr_sparse_to_dense",
                  {in("nonzero_data", i8s({2}, {-3, 4})),
                   in("mask", packed(DType::kU1, {3, 3}, {0, 0, 0, 1, 0, 0, 0, 0, 1}))},
                  DType::kI8);
  EXPECT_EQ(v.shape(), (Shape{3, 3}));
  EXPECT_EQ(values(v), (std::vector<float>{0, 0, 0, -3, 0, 0, 0, 0, 4}));
}

TEST(ConstexprOps, SparseToDenseRejectsCountMismatchAndPaddingBits) {
  EXPECT_HAS(error_of("constexpr_sparse_to_dense",
                      {in("nonzero_data", f16s({2}, {7, 8})), in("mask", u8s({1}, {0x25})),
                       in("shape", u32s({2, 3}))}),
             "mask has 3 set bits but nonzero_data has 2 values");
  EXPECT_HAS(error_of("constexpr_sparse_to_dense",
                      {in("nonzero_data", f16s({4}, {7, 8, 9, 10})), in("mask", u8s({1}, {0x65})),
                       in("shape", u32s({2, 3}))}),
             "set padding bit at bit 6");
  EXPECT_HAS(error_of("constexpr_sparse_to_dense",
                      {in("nonzero_data", f16s({1}, {7})), in("mask", u8s({2}, {1, 0})),
                       in("shape", u32s({2, 3}))}),
             "mask holds 2 bytes, but shape [2, 3] needs 1");
}

// Docstring example of constexpr_lut_to_sparse / constexpr_sparse_blockwise_shift_scale.
const std::vector<uint32_t> kDocMask = {1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1,
                                        0, 1, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0};

TEST(ConstexprOps, LutToSparseScalar) {
  auto r = run_op("constexpr_lut_to_sparse",
                  {in("indices_mask", packed(DType::kU1, {4, 6}, kDocMask)),
                   in("indices_nonzero_data", packed(DType::kU1, {9}, {0, 1, 1, 0, 1, 1, 0, 0, 1})),
                   in("lut", f16s({1, 1, 2, 1}, {2, 3}))},
                  {DType::kU1, DType::kF16}, Precision::kFp16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Tensor& mask = (*r)[0];
  EXPECT_EQ(mask.shape(), (Shape{4, 6}));
  std::vector<float> want_mask(kDocMask.begin(), kDocMask.end());
  EXPECT_EQ(values(mask), want_mask);
  EXPECT_EQ(values((*r)[1]), (std::vector<float>{2, 3, 3, 2, 3, 3, 2, 2, 3}));
}

TEST(ConstexprOps, LutToSparseVectorKeepsRowMajorOrderOfTheExpandedMask) {
  // Vectors (2, 20) and (3, 30) along axis 0: output row 2r holds lane 0 of input row r,
  // row 2r+1 lane 1, and nonzero values follow the expanded mask in row-major order.
  auto r = run_op("constexpr_lut_to_sparse",
                  {in("indices_mask", packed(DType::kU1, {4, 6}, kDocMask)),
                   in("indices_nonzero_data", packed(DType::kU1, {9}, {0, 1, 1, 0, 1, 1, 0, 0, 1})),
                   in("lut", f16s({1, 1, 2, 2}, {2, 20, 3, 30})),
                   in("vector_axis", Tensor::scalar_i32(0))},
                  {DType::kU1, DType::kF16}, Precision::kFp16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape(), (Shape{8, 6}));
  std::vector<float> want_mask;
  for (int row = 0; row < 4; ++row) {
    for (int rep = 0; rep < 2; ++rep) {
      for (int c = 0; c < 6; ++c) want_mask.push_back(static_cast<float>(kDocMask[static_cast<size_t>(row * 6 + c)]));
    }
  }
  EXPECT_EQ(values((*r)[0]), want_mask);
  EXPECT_EQ(values((*r)[1]), (std::vector<float>{2, 3, 20, 30, 3, 2, 3, 30, 20, 30, 3, 2, 2,
                                                 30, 20, 20, 3, 30}));
}

TEST(ConstexprOps, LutToSparseRejectsCountMismatch) {
  EXPECT_HAS(error_of("constexpr_lut_to_sparse",
                      {in("indices_mask", packed(DType::kU1, {4, 6}, kDocMask)),
                       in("indices_nonzero_data", packed(DType::kU1, {8}, {0, 1, 1, 0, 1, 1, 0, 0})),
                       in("lut", f16s({1, 1, 2, 1}, {2, 3}))},
                      {DType::kU1, DType::kF16}),
             "indices_mask has 9 set bits but indices_nonzero_data has 8 values");
}

TEST(ConstexprOps, SparseBlockwiseShiftScale) {
  // Docstring example: per-column scale 0.1..0.4 and offset 1..4 over a [4, 4] mask.
  const std::vector<uint32_t> mask = {1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0};
  auto r = run_op("constexpr_sparse_blockwise_shift_scale",
                  {in("data_mask", packed(DType::kU1, {4, 4}, mask)),
                   in("nonzero_data", i8s({9}, {10, 11, 3, 4, 5, 6, 7, 8, 9})),
                   in("scale", f32s({1, 4}, {0.1f, 0.2f, 0.3f, 0.4f})),
                   in("offset", i8s({1, 4}, {1, 2, 3, 4}))},
                  {DType::kU1, DType::kF32}, Precision::kFp16);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].shape(), (Shape{4, 4}));
  const std::vector<float> got = values((*r)[1]);
  // fp32 products as numpy computes them: float32(scale) * float32(data - offset).
  const std::vector<float> want = {0.1f * 9, 0.2f * 9, 0.1f * 2, 0.2f * 2, 0.3f * 2,
                                   0.3f * 3, 0.4f * 3, 0.1f * 7, 0.2f * 7};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
  EXPECT_HAS(error_of("constexpr_sparse_blockwise_shift_scale",
                      {in("data_mask", packed(DType::kU1, {4, 4}, mask)),
                       in("nonzero_data", i8s({3}, {1, 2, 3})),
                       in("scale", f32s({1, 4}, {1, 1, 1, 1}))},
                      {DType::kU1, DType::kF32}),
             "data_mask has 9 set bits but nonzero_data has 3 values");
}

}  // namespace
}  // namespace sg
