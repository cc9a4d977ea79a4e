// Shard::fingerprint(): equal to the Python definition in validators/mac/shard_fingerprint.py
// (expected values below were printed by that script, an independent implementation), and
// sensitive to every weight byte: two builds with the same program and different weights never
// share a fingerprint, while program_sha256() alone cannot tell them apart.
#include "shardgate/file_hash.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

std::string fingerprint_of(const std::string& path) {
  auto shard = Shard::open(path);
  EXPECT_TRUE(shard.is_ok()) << shard.status().message();
  if (!shard.is_ok()) return "";
  auto fp = (*shard)->fingerprint();
  EXPECT_TRUE(fp.is_ok()) << fp.status().message();
  return fp.is_ok() ? *fp : "";
}

// Printed by: python3 validators/mac/shard_fingerprint.py PATH
TEST(ShardFingerprint, EqualsThePythonDefinitionForBothForms) {
  const std::string corpus = std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/";
  const std::string sample = std::string(SG_SOURCE_DIR) + "/goldens/sample/shards/";
  EXPECT_EQ(fingerprint_of(corpus + "unified_int8.mlmodelc"),
            "2b29cc6f443a012dc6c9c5dfac0937fcd89e1c9ba1f3e48bf6e6d638d9b69c51");
  EXPECT_EQ(fingerprint_of(corpus + "unified_int8.mlpackage"),
            "14675d3b2d13b92ca3884168d4011ad8b3ce1af6e76a279cfe26425c1b2a19e4");
  EXPECT_EQ(fingerprint_of(sample + "L0_attn_fp16.mlpackage"),
            "6e6aed9054cfa7d99af7a2b877805c059e31bbadc11b0834fb0ad1d0f80aac2c");
  EXPECT_EQ(fingerprint_of(sample + "L1_attn_fp16.mlpackage"),
            "992f4cd49f704b8570c2496fa13f46edb5e195348c2a6e40b522e3cb6c3a7ca9");
}

TEST(ShardFingerprint, OneWeightByteChangesItWhileTheProgramHashStays) {
  const fs::path src = fs::path(SG_SOURCE_DIR) / "goldens/sample/shards/L0_attn_fp16.mlpackage";
  const fs::path dir = fs::temp_directory_path() / ("sg_fp_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path copy = dir / "L0_attn_fp16.mlpackage";
  fs::copy(src, copy, fs::copy_options::recursive);
  const fs::path weight = copy / "Data/com.apple.CoreML/weights/weight.bin";
  ASSERT_TRUE(fs::exists(weight));
  {
    // Flip one byte well inside the data (past the blob headers), as a different weight would.
    std::fstream f(weight, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(weight));
    f.seekg(size - 7);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x01);
    f.seekp(size - 7);
    f.write(&c, 1);
  }
  auto a = Shard::open(src.string());
  auto b = Shard::open(copy.string());
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ((*a)->program_sha256(), (*b)->program_sha256());
  auto fa = (*a)->fingerprint();
  auto fb = (*b)->fingerprint();
  ASSERT_TRUE(fa.is_ok() && fb.is_ok());
  EXPECT_NE(*fa, *fb);
  // Cached: a second call gives the same value.
  EXPECT_EQ(*(*b)->fingerprint(), *fb);
  fs::remove_all(dir);
}

long peak_rss_kib() {
  struct rusage ru {};
  ::getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

// Hashing is bounded in memory: a 1 GiB (sparse) weight file adds far less than its size to
// the peak RSS (before: every hashed page stayed mapped, so the peak grew by the file's size;
// a 40 GB weight.bin reached 22 GB and was killed). The hash is still the file's: the sha256
// of 2^30 zero bytes.
TEST(ShardFingerprint, HashingAHugeWeightFileKeepsMemorySmall) {
  const fs::path dir = fs::temp_directory_path() / ("sg_fp_huge_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path model = dir / "m.mlmodelc";
  fs::copy(std::string(SG_TEST_DATA_DIR) + "/exec/compiled_style/compiled_style.mlmodelc", model,
           fs::copy_options::recursive);
  { std::ofstream(model / "weights/huge.bin"); }
  fs::resize_file(model / "weights/huge.bin", uint64_t{1} << 30);  // sparse: no disk used
  auto shard = Shard::open(model.string());
  ASSERT_TRUE(shard.is_ok()) << shard.status().message();
  const long before = peak_rss_kib();
  auto files = (*shard)->fingerprint_files();
  const long after = peak_rss_kib();
  fs::remove_all(dir);
  ASSERT_TRUE(files.is_ok()) << files.status().message();
  bool found = false;
  for (const auto& f : *files) {
    if (f.path != "weights/huge.bin") continue;
    found = true;
    EXPECT_EQ(f.size, uint64_t{1} << 30);
    EXPECT_EQ(f.sha256, "49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14");
  }
  EXPECT_TRUE(found);
  EXPECT_LT(after - before, 128 * 1024) << "peak RSS grew by " << (after - before) << " KiB";
}

// Window by window gives the same hash as the whole file at once, at sizes around the window.
TEST(ShardFingerprint, WindowedHashEqualsTheWholeFileHash) {
  const fs::path file = fs::temp_directory_path() / ("sg_fp_window_" + std::to_string(::getpid()));
  for (size_t n : {size_t{0}, size_t{1}, kHashWindowBytes - 1, kHashWindowBytes,
                   kHashWindowBytes + 123, 2 * kHashWindowBytes + 64}) {
    std::string bytes(n, '\0');
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
    std::ofstream(file, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
    auto mapped = MappedFile::open(file.string());
    ASSERT_TRUE(mapped.is_ok());
    EXPECT_EQ(sha256_of_mapping(**mapped),
              sha256_hex(std::as_bytes(std::span<const char>(bytes.data(), bytes.size()))))
        << n;
    // The mapping stays readable after its pages were dropped (faulted in again from the file).
    if (n > 0) {
      EXPECT_EQ(static_cast<char>((*mapped)->data()[n - 1]), bytes[n - 1]) << n;
    }
  }
  fs::remove(file);
}

}  // namespace
}  // namespace sg
