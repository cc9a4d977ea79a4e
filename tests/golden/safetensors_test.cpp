// .safetensors parsing: valid files (dtypes, metadata, misaligned offsets), and malformed ones
// (short file, header length past the end, bad JSON, offsets out of bounds, sizes that do not
// match the shape, overlapping tensors, unsupported dtypes) refused with a precise message.
#include "shardgate/fidelity.h"
#include "shardgate/golden.h"
#include "shardgate/half.h"

#include <gtest/gtest.h>

#include <cstring>

namespace sg {
namespace {

// Builds a safetensors byte image: 8-byte LE header length, header text, data.
std::vector<std::byte> image(const std::string& header, const std::vector<uint8_t>& data,
                             std::optional<uint64_t> forced_len = std::nullopt) {
  std::vector<std::byte> out(8);
  const uint64_t len = forced_len.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = std::byte((len >> (8 * i)) & 0xff);
  for (char c : header) out.push_back(std::byte(static_cast<uint8_t>(c)));
  for (uint8_t b : data) out.push_back(std::byte(b));
  return out;
}

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Result<SafetensorsContents> parse(const std::vector<std::byte>& bytes) {
  return parse_safetensors(bytes, nullptr, "x.safetensors");
}

TEST(Safetensors, ParsesTensorsInHeaderOrder) {
  std::vector<uint8_t> data = f32_bytes({1, 2, 3, 4});
  const uint16_t h[2] = {f32_to_f16(0.5f), f32_to_f16(-2.0f)};
  data.push_back(static_cast<uint8_t>(h[0] & 0xff));
  data.push_back(static_cast<uint8_t>(h[0] >> 8));
  data.push_back(static_cast<uint8_t>(h[1] & 0xff));
  data.push_back(static_cast<uint8_t>(h[1] >> 8));
  const std::string header =
      R"({"b": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},)"
      R"( "a": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]},)"
      R"( "__metadata__": {"shardgate": "{}", "format": "pt"}})";
  const auto bytes = image(header, data);
  auto c = parse(bytes);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->tensors.size(), 2u);
  EXPECT_EQ(c->tensors[0].name, "b");
  EXPECT_EQ(c->tensors[0].tensor.shape(), (Shape{2, 2}));
  EXPECT_EQ(c->tensors[1].tensor.dtype(), DType::kF16);
  EXPECT_EQ(element_as_double(c->tensors[1].tensor, 1), -2.0);
  EXPECT_EQ(c->metadata_shardgate, "{}");
}

TEST(Safetensors, MisalignedDataIsCopiedNotReadInPlace) {
  // Header of odd length: the F32 data starts at an address that is not 4-byte aligned.
  std::string header = R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})";
  if ((8 + header.size()) % 4 == 0) header += " ";
  const auto bytes = image(header, f32_bytes({1.5f, 2.5f, 3.5f}));
  auto c = parse(bytes);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(element_as_double(c->tensors[0].tensor, 2), 3.5);
}

TEST(Safetensors, BF16AndIntegers) {
  std::vector<uint8_t> data = {0x80, 0x3f, 0x00, 0xc0};  // bf16 1.0, -2.0 (LE)
  for (int32_t v : {7, -9}) {  // little-endian int32
    const auto u = static_cast<uint32_t>(v);
    for (int k = 0; k < 4; ++k) data.push_back(static_cast<uint8_t>(u >> (8 * k)));
  }
  const std::string header = R"({"x": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},)"
                             R"( "i": {"dtype": "I32", "shape": [1, 2], "data_offsets": [4, 12]}})";
  auto c = parse(image(header, data));
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(element_as_double(c->tensors[0].tensor, 0), 1.0);
  EXPECT_EQ(element_as_double(c->tensors[0].tensor, 1), -2.0);
  EXPECT_EQ(element_as_double(c->tensors[1].tensor, 1), -9.0);
}

TEST(Safetensors, MalformedFilesAreRefused) {
  const auto data = f32_bytes({1, 2});
  struct Case {
    std::vector<std::byte> bytes;
    ErrorCode code;
    std::string needle;
  };
  const std::string ok_entry = R"("t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  std::vector<Case> cases = {
      {std::vector<std::byte>(5), ErrorCode::kFormat, "too short"},
      {image("{}", data, 1000), ErrorCode::kFormat, "runs past the end"},
      {image("{\"t\": ", data), ErrorCode::kFormat, "header: invalid JSON"},
      {image("[1, 2]", data), ErrorCode::kFormat, "expected a JSON object"},
      {image(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", data),
       ErrorCode::kFormat, "outside the data region"},
      {image(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [8, 4]}})", data),
       ErrorCode::kFormat, "outside the data region"},
      {image(R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", data),
       ErrorCode::kFormat, "needs 12"},
      {image(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, )"
             R"("u": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})", data),
       ErrorCode::kFormat, "overlap"},
      {image(R"({"t": {"dtype": "F8_E4M3", "shape": [8], "data_offsets": [0, 8]}})", data),
       ErrorCode::kUnsupported, "F8_E4M3"},
      {image(R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", data),
       ErrorCode::kFormat, "non-negative"},
      {image(R"({"t": {"dtype": "F32", "shape": [2]}})", data), ErrorCode::kFormat, "data_offsets"},
      {image(R"({"t": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", data),
       ErrorCode::kFormat, "shape"},
      {image(R"({"__metadata__": {"shardgate": 3}, )" + ok_entry + "}", data), ErrorCode::kFormat,
       "must be strings"},
  };
  for (const Case& c : cases) {
    auto r = parse(c.bytes);
    ASSERT_FALSE(r.is_ok()) << c.needle;
    EXPECT_EQ(r.status().code(), c.code) << r.status().message();
    EXPECT_NE(r.status().message().find("x.safetensors"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.needle), std::string::npos) << r.status().message();
  }
}

TEST(Safetensors, FileWithShardgateMetadataComparesLikeTheDump) {
  auto st = open_golden_source(SG_TEST_DATA_DIR "/golden/cand_pass.safetensors");
  auto dump = open_golden_source(SG_TEST_DATA_DIR "/golden/cand_pass");
  auto ref = open_golden_source(SG_TEST_DATA_DIR "/golden/ref");
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
  ASSERT_TRUE(dump.is_ok() && ref.is_ok());
  const GoldenEntry* embed = (*st)->find("embed");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->kind, "hidden");
  EXPECT_EQ(embed->layer, -1);
  EXPECT_EQ(embed->position_axis, 1);
  auto a = compare_sources(**st, **ref, {});
  auto b = compare_sources(**dump, **ref, {});
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_EQ(a->checks.size(), b->checks.size());
  for (size_t i = 0; i < a->checks.size(); ++i) {
    for (size_t r = 0; r < a->checks[i].rows.size(); ++r) {
      EXPECT_EQ(a->checks[i].rows[r].value(Metric::kCosine), b->checks[i].rows[r].value(Metric::kCosine));
    }
  }
}

}  // namespace
}  // namespace sg
