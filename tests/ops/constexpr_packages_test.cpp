// Constexpr forms (iOS18 inputs, plus const/cast/iOS16 affine): tiny packages written by coremltools
// (tests/data/constexpr/gen_constexpr_cases.py) whose weight `w` must decode exactly to the
// numpy-computed dense array stored beside each package (bitwise, fp16 included), both as a
// whole and, for the forms the executor streams, range by range in any order.
#include "shardgate/executor.h"
#include "shardgate/npy.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace sg {
namespace {

namespace fs = std::filesystem;

const std::string kDir = std::string(SG_TEST_DATA_DIR) + "/constexpr/";

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(kDir)) {
    if (e.path().extension() == ".mlpackage") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ConstexprPackages, EveryCaseHasAnExpectedArray) {
  const auto names = case_names();
  EXPECT_GE(names.size(), 20u);
  for (const std::string& n : names) EXPECT_TRUE(fs::exists(kDir + n + ".npy")) << n;
}

class ConstexprPackage : public ::testing::TestWithParam<std::string> {};

TEST_P(ConstexprPackage, DecodesExactlyToNumpy) {
  const std::string name = GetParam();
  auto shard = Shard::open(kDir + name + ".mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Function* fn = (*shard)->program().function("main");
  ASSERT_NE(fn, nullptr);
  // Every case is an iOS18 program except the iOS16 attribute form of affine_dequantize.
  EXPECT_EQ(fn->opset, name.find("ios16") != std::string::npos ? "ios16" : "ios18");
  auto got = materialize_weight(**shard, *fn, "w");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  auto want = read_npy(kDir + name + ".npy");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(dtype_name(got->dtype()), dtype_name(want->dtype()));
  ASSERT_EQ(shape_str(got->shape()), shape_str(want->shape()));
  ASSERT_EQ(got->nbytes(), want->nbytes());
  int64_t mismatches = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < got->numel(); ++i) {
    const size_t w = static_cast<size_t>(dtype_bits(got->dtype()) / 8);
    if (std::memcmp(got->raw() + static_cast<size_t>(i) * w, want->raw() + static_cast<size_t>(i) * w, w) != 0) {
      if (first < 0) first = i;
      ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0) << "first mismatch at flat index " << first << ": got "
                           << element_as_double(*got, first < 0 ? 0 : first) << ", expected "
                           << element_as_double(*want, first < 0 ? 0 : first);
}

// The forms with range decoders: every LUT with byte-sized entries and scalar palettization,
// every shift-scale, the iOS16 affine form. Sparse, vector-LUT, const and cast cases are
// decoded only as a whole.
bool expect_stream(const std::string& name) {
  return (name.rfind("lut_uint", 0) == 0 || name.rfind("bss_", 0) == 0 ||
          name.rfind("affine_", 0) == 0 || name == "quantized_lut_chain");
}

TEST_P(ConstexprPackage, RangeDecodingInAnyOrderMatchesNumpy) {
  const std::string name = GetParam();
  auto shard = Shard::open(kDir + name + ".mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Function& fn = *(*shard)->program().function("main");
  auto stream = stream_weight(**shard, fn, "w");
  ASSERT_TRUE(stream.is_ok()) << stream.status().to_string();
  ASSERT_EQ(stream->has_value(), expect_stream(name));
  if (!stream->has_value()) return;
  const StreamedWeight& w = **stream;
  auto want = read_npy(kDir + name + ".npy");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  ASSERT_EQ(dtype_name(w.dtype), dtype_name(want->dtype()));
  ASSERT_EQ(shape_str(w.shape), shape_str(want->shape()));
  const int64_t cols = w.shape.back();
  const int64_t rows = want->numel() / cols;
  const size_t row_bytes = static_cast<size_t>(cols * dtype_bits(w.dtype) / 8);
  // Blocks of 1, 2 and 3 rows, last block first: each must be right wherever it starts.
  for (int64_t block : {1, 2, 3}) {
    std::vector<std::byte> got(want->nbytes(), std::byte{0x5a});
    for (int64_t r1 = rows; r1 > 0;) {
      const int64_t r0 = std::max<int64_t>(0, r1 - block);
      w.decode(r0 * cols, (r1 - r0) * cols, got.data() + static_cast<size_t>(r0) * row_bytes);
      r1 = r0;
    }
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(std::memcmp(got.data() + static_cast<size_t>(r) * row_bytes,
                            want->raw() + static_cast<size_t>(r) * row_bytes, row_bytes), 0)
          << name << ": row " << r << " of " << rows << " differs (blocks of " << block << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ios18, ConstexprPackage, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ConstexprPackages, MaterializeRejectsValuesThatAreNotWeights) {
  auto shard = Shard::open(kDir + "quantized_lut_chain.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Function& fn = *(*shard)->program().function("main");
  auto compute = materialize_weight(**shard, fn, "y");
  ASSERT_FALSE(compute.is_ok());
  EXPECT_NE(compute.status().message().find("'add', which is not a const or constexpr op"),
            std::string::npos)
      << compute.status().message();
  auto input = materialize_weight(**shard, fn, "x");
  ASSERT_FALSE(input.is_ok());
  EXPECT_NE(input.status().message().find("function input"), std::string::npos);
  auto missing = materialize_weight(**shard, fn, "nope");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("no value named 'nope'"), std::string::npos);
  // The chain's intermediate (the quantized LUT) is itself a weight.
  auto lut = materialize_weight(**shard, fn, "lut_q");
  ASSERT_TRUE(lut.is_ok()) << lut.status().to_string();
  EXPECT_EQ(lut->shape(), (Shape{2, 1, 16, 1}));
  EXPECT_EQ(lut->dtype(), DType::kF16);
}

}  // namespace
}  // namespace sg
