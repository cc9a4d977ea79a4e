// io.h: sha256 against FIPS 180-2 test vectors and coreutils' sha256sum, mapped files,
// atomic writes.
#include "shardgate/io.h"
#include "../../runtime/core/sha256_impl.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace sg {
namespace {

namespace fs = std::filesystem;

std::string sha(std::string_view s) {
  return sha256_hex(std::as_bytes(std::span<const char>(s.data(), s.size())));
}

TEST(Sha256, MatchesPublishedTestVectors) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 768 bytes: several blocks with a partial last one (python hashlib).
  std::string bytes;
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  }
  EXPECT_EQ(sha(bytes), "f3a25aa93aa2fbba28d79260535bbd6a5eb0fc1c24a8b0f04e12b484c1dfe363");
}

TEST(Sha256, FileHashMatchesSha256sum) {
  // sha256sum of the corpus program file.
  auto h = sha256_file(std::string(SG_TEST_DATA_DIR) +
                       "/corpus/silero-vad/unified_palette_4bit.mlmodelc/model.mil");
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(*h, "224366f897455ff5e922262a20ae9358402ae63d190e8882d6441766d0efa511");
  auto missing = sha256_file("/nonexistent/file.bin");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIO);
  EXPECT_NE(missing.status().message().find("/nonexistent/file.bin"), std::string::npos);
}

// sha256_hex() picks the x86 SHA instructions where the CPU has them. Both paths must agree on
// every length around the padding boundaries (55/56/63/64 bytes in the last block) and on input
// fed as many whole blocks at once. (Dropping the final state addition in either path, or the
// W(g-2) term of the message schedule, fails this test.)
TEST(Sha256, CpuExtensionPathEqualsPortablePath) {
  std::string data(5000, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  for (size_t n = 0; n <= data.size(); n += (n < 300 ? 1 : 257)) {
    const auto bytes = std::as_bytes(std::span<const char>(data.data(), n));
    ASSERT_EQ(sha256_hex(bytes), detail::sha256_hex_portable(bytes)) << "length " << n;
  }
  const std::string million(1000000, 'a');
  const auto bytes = std::as_bytes(std::span<const char>(million.data(), million.size()));
  EXPECT_EQ(detail::sha256_hex_portable(bytes),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex(bytes), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  std::printf("sha256_hex uses the CPU's SHA instructions: %s\n",
              detail::sha256_uses_cpu_extensions() ? "yes" : "no");
}

class IoFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(IoFiles, MapsFilesIncludingEmptyOnes) {
  const std::string empty = (dir_ / "empty").string();
  std::ofstream(empty).close();
  auto e = MappedFile::open(empty);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->size(), 0u);
  EXPECT_TRUE((*e)->bytes().empty());

  const std::string full = (dir_ / "full").string();
  std::ofstream(full) << "hello";
  auto f = MappedFile::open(full);
  ASSERT_TRUE(f.is_ok());
  ASSERT_EQ((*f)->size(), 5u);
  EXPECT_EQ(static_cast<char>((*f)->data()[4]), 'o');

  auto dir = MappedFile::open(dir_.string());
  ASSERT_FALSE(dir.is_ok());
  EXPECT_EQ(dir.status().code(), ErrorCode::kIO);
  EXPECT_NE(dir.status().message().find("not a regular file"), std::string::npos);
}

TEST_F(IoFiles, ReadFileAndPathHelpers) {
  const std::string p = (dir_ / "a.txt").string();
  std::ofstream(p) << "line1\nline2";
  auto r = read_file(p);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "line1\nline2");
  EXPECT_TRUE(path_exists(p));
  EXPECT_FALSE(is_directory(p));
  EXPECT_TRUE(is_directory(dir_.string()));
  EXPECT_FALSE(path_exists((dir_ / "b.txt").string()));
  auto missing = read_file((dir_ / "b.txt").string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIO);
  EXPECT_NE(missing.status().message().find("b.txt"), std::string::npos);
}

TEST_F(IoFiles, WriteFileAtomicReplacesContentAndLeavesNoTemporaries) {
  const std::string p = (dir_ / "report.json").string();
  ASSERT_TRUE(write_file_atomic(p, "first").is_ok());
  ASSERT_TRUE(write_file_atomic(p, "second, longer").is_ok());
  auto r = read_file(p);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, "second, longer");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
  auto bad = write_file_atomic((dir_ / "no_such_dir" / "x.json").string(), "x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.code(), ErrorCode::kIO);
  EXPECT_NE(bad.message().find("no_such_dir"), std::string::npos);
}

}  // namespace
}  // namespace sg
