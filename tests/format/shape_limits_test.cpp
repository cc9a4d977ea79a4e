// One rank limit and one dimension limit for every reader of declared shapes (shardgate/
// limits.h): model.mil text, metadata.json, .npy and safetensors headers here; the .mlpackage
// protobuf in mil_proto_test.cpp. Each reader refuses rank 33 and a dimension of 2^36 + 1 with
// the same words after its own file and place, and accepts the limits themselves. Before one
// header, the text reader allowed dimensions up to 2^40 while the others stopped at 2^36, and
// the five readers worded the refusal five ways.
#include "shardgate/golden.h"
#include "shardgate/npy.h"
#include "shardgate/readers.h"

#include "support/npy_bytes.h"
#include "support/temp_dir_test.h"
#include "support/file_bytes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace sg {
namespace {
using sg::testing::slurp;
using sg::testing::spit;

namespace fs = std::filesystem;

const std::string kDimOver = "dimension 68719476737 is out of range [0, 68719476736]";
const std::string kRankOver = "rank 33 is out of range [0, 32]";
const std::string kRankOverStreamed = "rank 33 or more is out of range [0, 32]";

// "1, 1, ..., 1" with `n` ones.
std::string ones(int n, const std::string& sep = ", ") {
  std::string s = "1";
  for (int i = 1; i < n; ++i) s += sep + "1";
  return s;
}

template <typename R>
std::string error_of(const R& r) {
  EXPECT_FALSE(r.is_ok());
  if (r.is_ok()) return "";
  EXPECT_EQ(r.status().code(), ErrorCode::kFormat) << r.status().to_string();
  return r.status().message();
}

class ShapeLimits : public sg::testing::TempDirTest {
 protected:
  ShapeLimits() : TempDirTest("sg_shape_limits_") {}
};

std::string mil_with_input(const std::string& dims) {
  return "program(1.0)\n{\n    func main<ios16>(tensor<fp16, [" + dims +
         "]> x) {\n        tensor<fp16, [1]> y = relu(x = x)[name = string(\"y\")];\n"
         "    } -> (y);\n}\n";
}

TEST_F(ShapeLimits, MilText) {
  EXPECT_NE(error_of(parse_mil_text(mil_with_input("1, 68719476737"), "m.mil"))
                .find("m.mil:3:39: " + kDimOver),
            std::string::npos);
  EXPECT_NE(error_of(parse_mil_text(mil_with_input(ones(33)), "m.mil")).find(kRankOverStreamed),
            std::string::npos);
  // The limits themselves parse (the relu's declared output is checked later, not here).
  const auto at = parse_mil_text(mil_with_input("68719476736, " + ones(31)), "m.mil");
  EXPECT_TRUE(at.is_ok() || at.status().message().find("out of range") == std::string::npos)
      << at.status().to_string();
}

TEST_F(ShapeLimits, CompiledMetadata) {
  const fs::path m = dir_ / "m.mlmodelc";
  fs::create_directories(m);
  const std::string base =
      slurp(SG_TEST_DATA_DIR "/corpus/silero-vad/unified_int8.mlmodelc/metadata.json");
  ASSERT_NE(base.find("\"[1, 576]\""), std::string::npos);
  const auto with_shape = [&](const std::string& dims) {
    std::string j = base;
    j.replace(j.find("\"[1, 576]\""), 10, "\"[" + dims + "]\"");
    spit(m / "metadata.json", j);
    return read_compiled_metadata(m.string());
  };
  std::string msg = error_of(with_shape("1, 68719476737"));
  EXPECT_NE(msg.find((m / "metadata.json").string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(kDimOver), std::string::npos) << msg;
  msg = error_of(with_shape(ones(33)));
  EXPECT_NE(msg.find(kRankOver), std::string::npos) << msg;
  EXPECT_TRUE(with_shape("68719476736, " + ones(31)).is_ok());
}

// A version 1.0 .npy file of fp32 with the given shape tuple text and no data.
std::string npy_header(const std::string& shape) {
  return testing::npy_v1_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }");
}

TEST_F(ShapeLimits, NpyHeader) {
  const fs::path f = dir_ / "x.npy";
  spit(f, npy_header("1, 68719476737"));
  std::string msg = error_of(read_npy(f.string()));
  EXPECT_NE(msg.find(f.string() + ": npy 'shape': " + kDimOver), std::string::npos) << msg;
  spit(f, npy_header(ones(33, ",")));
  msg = error_of(read_npy(f.string()));
  EXPECT_NE(msg.find(f.string() + ": npy 'shape': " + kRankOverStreamed), std::string::npos) << msg;
  // 32 dimensions of 1 and no element missing: a valid file.
  spit(f, npy_header(ones(32, ",")) + std::string(4, '\0'));
  EXPECT_TRUE(read_npy(f.string()).is_ok()) << read_npy(f.string()).status().to_string();
  // Every dimension within its limit, their product not: the message still names the file.
  spit(f, npy_header("1, 68719476736, 8"));
  const auto big = read_npy(f.string());
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), ErrorCode::kShape);
  msg = big.status().message();
  EXPECT_NE(msg.find(f.string() + ": shape [1, 68719476736, 8] is too large"), std::string::npos) << msg;
}

TEST_F(ShapeLimits, SafetensorsHeader) {
  const fs::path f = dir_ / "g.safetensors";
  const auto with_shape = [&](const std::string& dims) {
    const std::string j =
        R"({"t": {"dtype": "F16", "shape": [)" + dims + R"(], "data_offsets": [0, 0]}})";
    std::string bytes(8, '\0');
    const uint64_t n = j.size();
    std::memcpy(bytes.data(), &n, 8);
    spit(f, bytes + j);
    return open_safetensors(f.string());
  };
  std::string msg = error_of(with_shape("0, 68719476737"));
  EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(kDimOver), std::string::npos) << msg;
  msg = error_of(with_shape(ones(33)));
  EXPECT_NE(msg.find(kRankOver), std::string::npos) << msg;
}

}  // namespace
}  // namespace sg
