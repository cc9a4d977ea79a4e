// The .npy header dict has exactly the keys 'descr', 'fortran_order' and 'shape'. numpy 2.4
// refuses any other (np.load: "Header does not contain the correct keys: ['descr', 'extra',
// 'fortran_order', 'shape']", checked on these very headers), so the reader refuses them too:
// a format error naming the file and the key, never a tensor numpy would not read.
#include "shardgate/npy.h"
#include "support/npy_bytes.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace sg {
namespace {

// A version 1.0 .npy of two little-endian fp32 values (1.5, 2.5) with the given header dict.
std::vector<std::byte> npy_with(const std::string& dict) {
  std::string h = testing::npy_v1_header(dict);
  const float v[2] = {1.5f, 2.5f};
  h.append(reinterpret_cast<const char*>(v), sizeof v);
  std::vector<std::byte> out(h.size());
  std::memcpy(out.data(), h.data(), h.size());
  return out;
}

TEST(NpyHeader, TheThreeKeysAreRead) {
  // parse_npy may return a view of the bytes: they outlive the tensor.
  const std::vector<std::byte> bytes = npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }");
  auto t = parse_npy(bytes, "ok.npy");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->shape(), (Shape{2}));
  EXPECT_EQ(t->data<float>()[1], 2.5f);
  // Double quotes and a value that reads like a key are still only three keys.
  const std::vector<std::byte> quoted =
      npy_with("{\"shape\": (2,), \"descr\": \"<f4\", \"fortran_order\": False}");
  auto q = parse_npy(quoted, "q.npy");
  EXPECT_TRUE(q.is_ok()) << q.status().to_string();
}

TEST(NpyHeader, AnotherKeyIsAFormatErrorNamingFileAndKey) {
  for (const auto& [dict, key] : std::vector<std::pair<std::string, std::string>>{
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1, }", "extra"},
           {"{'descr': '<f4', 'owner': 'x', 'fortran_order': False, 'shape': (2,)}", "owner"},
           // Its value 'shape' must not pass for the shape key (nor the key pass as a value).
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'note': 'shape'}", "note"},
           {"{'descr': '<f4', 'fortran_order': False, \"strides\": (4,), 'shape': (2,)}", "strides"}}) {
    const std::vector<std::byte> bytes = npy_with(dict);
    auto t = parse_npy(bytes, "x.npy");
    ASSERT_FALSE(t.is_ok()) << dict;
    EXPECT_EQ(t.status().code(), ErrorCode::kFormat) << dict;
    EXPECT_NE(t.status().message().find("x.npy: npy header has a key '" + key + "', which numpy refuses"),
              std::string::npos)
        << t.status().message();
  }
}

}  // namespace
}  // namespace sg
