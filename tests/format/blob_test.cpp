// weight.bin reader: every rejection on handcrafted files, and a walk over real files.
#include "shardgate/blob.h"
#include "shardgate/blob_refs.h"
#include "shardgate/shard.h"
#include "shardgate/half.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sg {
namespace {

namespace fs = std::filesystem;

// Builds blob storage bytes the way coremltools' writer lays them out (runtime/format/README.md, Blob storage v2),
// with knobs to break each field.
class BlobBuilder {
 public:
  explicit BlobBuilder(uint32_t version = 2) : bytes_(64, 0) { put32(4, version); }
  // Appends a record + data at the next 64-byte boundary; returns the metadata offset.
  uint64_t add(uint32_t code, const std::vector<uint8_t>& data, uint64_t padding_bits = 0) {
    align();
    const uint64_t meta = bytes_.size();
    bytes_.resize(meta + 64, 0);
    put32(meta, kBlobSentinel);
    put32(meta + 4, code);
    put64(meta + 8, data.size());
    put64(meta + 16, meta + 64);
    put64(meta + 24, padding_bits);
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    put32(0, ++count_);
    return meta;
  }
  void put32(uint64_t at, uint32_t v) { std::memcpy(bytes_.data() + at, &v, 4); }
  void put64(uint64_t at, uint64_t v) { std::memcpy(bytes_.data() + at, &v, 8); }
  void align() { bytes_.resize((bytes_.size() + 63) / 64 * 64, 0); }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  uint32_t count_ = 0;
};

class BlobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_blob_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "weights");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::vector<uint8_t>& bytes) {
    const std::string path = (dir_ / "weights" / "weight.bin").string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
  }

  fs::path dir_;
};

std::vector<uint8_t> f16_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = f32_to_f16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

TEST_F(BlobTest, ReadsFp16TensorAsViewOfTheMapping) {
  BlobBuilder b;
  const uint64_t off = b.add(1, f16_bytes({1.0f, -2.5f, 0.125f, 65504.0f}));
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  EXPECT_EQ((*file)->count(), 1u);
  auto t = (*file)->tensor_at(off, DType::kF16, {2, 2});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_TRUE(t->is_view());
  EXPECT_EQ(t->shape(), (Shape{2, 2}));
  EXPECT_EQ(f16_to_f32(t->data<uint16_t>()[0]), 1.0f);
  EXPECT_EQ(f16_to_f32(t->data<uint16_t>()[1]), -2.5f);
  EXPECT_EQ(f16_to_f32(t->data<uint16_t>()[2]), 0.125f);
  EXPECT_EQ(f16_to_f32(t->data<uint16_t>()[3]), 65504.0f);
}

TEST_F(BlobTest, ViewOutlivesTheBlobFileObject) {
  BlobBuilder b;
  const uint64_t off = b.add(3, {7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Tensor t;
  {
    auto file = BlobFile::open(write(b.bytes()));
    ASSERT_TRUE(file.is_ok());
    auto r = (*file)->tensor_at(off, DType::kU8, {10});
    ASSERT_TRUE(r.is_ok());
    t = *r;
  }
  // The mapping is kept alive by the tensor, not by the BlobFile.
  EXPECT_EQ(t.data<uint8_t>()[0], 7);
  EXPECT_EQ(t.data<uint8_t>()[9], 16);
}

TEST_F(BlobTest, RejectsVersion1Header) {
  BlobBuilder b(1);
  b.add(1, f16_bytes({1, 2}));
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kFormat);
  EXPECT_NE(file.status().message().find("weights/weight.bin: blob storage header at offset 0: version 1, expected 2"),
            std::string::npos)
      << file.status().message();
}

TEST_F(BlobTest, RejectsFileShorterThanHeader) {
  auto file = BlobFile::open(write(std::vector<uint8_t>(10, 0)));
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kFormat);
  EXPECT_NE(file.status().message().find("10 bytes"), std::string::npos);
}

TEST_F(BlobTest, RejectsCountThatCannotFit) {
  BlobBuilder b;
  b.add(1, f16_bytes({1, 2}));
  b.put32(0, 1000);
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_FALSE(file.is_ok());
  EXPECT_NE(file.status().message().find("count 1000"), std::string::npos);
}

TEST_F(BlobTest, MissingFileIsAnIOError) {
  auto file = BlobFile::open((dir_ / "nope.bin").string());
  ASSERT_FALSE(file.is_ok());
  EXPECT_EQ(file.status().code(), ErrorCode::kIO);
  EXPECT_NE(file.status().message().find("nope.bin"), std::string::npos);
}

TEST_F(BlobTest, RejectsWrongSentinelNamingFileAndOffset) {
  BlobBuilder b;
  b.add(1, f16_bytes({1, 2}));
  const uint64_t off = b.add(1, f16_bytes({3, 4}));
  b.put32(off, 0);
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto info = (*file)->info_at(off);
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), ErrorCode::kFormat);
  EXPECT_NE(info.status().message().find(
                "weights/weight.bin: blob metadata at offset 192: sentinel 0x00000000, expected 0xDEADBEEF"),
            std::string::npos)
      << info.status().message();
  // A walk reports the same record.
  auto walk = (*file)->walk();
  ASSERT_FALSE(walk.is_ok());
  EXPECT_NE(walk.status().message().find("offset 192"), std::string::npos);
}

TEST_F(BlobTest, RejectsUnalignedOffsetAndOffsetsOutsideTheFile) {
  BlobBuilder b;
  const uint64_t off = b.add(1, f16_bytes({1, 2}));
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto unaligned = (*file)->info_at(off + 1);
  ASSERT_FALSE(unaligned.is_ok());
  EXPECT_NE(unaligned.status().message().find("offset 65: offset is not a multiple of 64"),
            std::string::npos)
      << unaligned.status().message();
  auto header = (*file)->info_at(0);
  ASSERT_FALSE(header.is_ok());
  EXPECT_NE(header.status().message().find("header"), std::string::npos);
  auto past = (*file)->info_at(1024);
  ASSERT_FALSE(past.is_ok());
  EXPECT_NE(past.status().message().find("past the end"), std::string::npos);
  auto huge = (*file)->info_at(~uint64_t{63});
  ASSERT_FALSE(huge.is_ok());
}

TEST_F(BlobTest, RejectsDataRangePastEndOfFile) {
  BlobBuilder b;
  const uint64_t off = b.add(1, f16_bytes({1, 2, 3, 4}));
  b.put64(off + 8, 4096);  // size larger than the file
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto info = (*file)->info_at(off);
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("blob metadata at offset 64: data [128, +4096) runs past the end"),
            std::string::npos)
      << info.status().message();
  // An offset + size that wraps around 2^64 is caught too.
  b.put64(off + 8, ~uint64_t{0} - 64);
  auto wrap_file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(wrap_file.is_ok());
  EXPECT_FALSE((*wrap_file)->info_at(off).is_ok());
}

TEST_F(BlobTest, RejectsUnknownDtypeCodeAndUnalignedData) {
  BlobBuilder b;
  const uint64_t off = b.add(99, {1, 2, 3, 4});
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto info = (*file)->info_at(off);
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("unknown blob data type code 99"), std::string::npos);

  BlobBuilder c;
  const uint64_t off2 = c.add(3, {1, 2, 3, 4});
  c.put64(off2 + 16, off2 + 65);
  auto file2 = BlobFile::open(write(c.bytes()));
  ASSERT_TRUE(file2.is_ok());
  auto info2 = (*file2)->info_at(off2);
  ASSERT_FALSE(info2.is_ok());
  EXPECT_NE(info2.status().message().find("data offset 129 is not a multiple of 64"),
            std::string::npos);
}

TEST_F(BlobTest, RejectsDtypeMismatchWithProgramType) {
  BlobBuilder b;
  const uint64_t off = b.add(1, f16_bytes({1, 2, 3, 4}));
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto t = (*file)->tensor_at(off, DType::kF32, {2});
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kShape);
  EXPECT_NE(t.status().message().find("blob at offset 64: stored as fp16, but the program declares fp32"),
            std::string::npos)
      << t.status().message();
}

TEST_F(BlobTest, RejectsSizeThatDoesNotMatchShape) {
  BlobBuilder b;
  const uint64_t off = b.add(1, f16_bytes({1, 2, 3, 4}));
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto small = (*file)->tensor_at(off, DType::kF16, {3});
  ASSERT_FALSE(small.is_ok());
  EXPECT_NE(small.status().message().find("holds 4 fp16 elements (8 bytes), but tensor<fp16, [3]> needs 3"),
            std::string::npos)
      << small.status().message();
  EXPECT_FALSE((*file)->tensor_at(off, DType::kF16, {5}).is_ok());
  EXPECT_FALSE((*file)->tensor_at(off, DType::kF16, {-1, 4}).is_ok());
  // An odd byte count is not a whole number of fp16 elements.
  BlobBuilder c;
  const uint64_t odd = c.add(1, {1, 2, 3});
  auto file2 = BlobFile::open(write(c.bytes()));
  ASSERT_TRUE(file2.is_ok());
  EXPECT_FALSE((*file2)->info_at(odd).is_ok());
}

TEST_F(BlobTest, SubBytePaddingDefinesElementCount) {
  // Three uint4 values 1, 2, 3: 12 bits in 2 bytes, 4 padding bits, LSB-first.
  BlobBuilder b;
  const uint64_t u4 = b.add(11, {0x21, 0x03}, 4);
  // Five uint3 values 7, 0, 5, 1, 6: 15 bits, 1 padding bit; element i sits at stream bits
  // [3i, 3i+3), so element 2 straddles the two bytes.
  uint32_t stream = 0;
  const uint32_t vals[5] = {7, 0, 5, 1, 6};
  for (int i = 0; i < 5; ++i) stream |= vals[i] << (3 * i);
  const uint64_t u3 = b.add(12, {static_cast<uint8_t>(stream & 0xff), static_cast<uint8_t>(stream >> 8)}, 1);
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());

  auto info = (*file)->info_at(u4);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(info->element_count(), 3u);
  auto t = (*file)->tensor_at(u4, DType::kU4, {3});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(element_as_double(*t, 0), 1);
  EXPECT_EQ(element_as_double(*t, 1), 2);
  EXPECT_EQ(element_as_double(*t, 2), 3);
  // Four elements would need no padding.
  EXPECT_FALSE((*file)->tensor_at(u4, DType::kU4, {4}).is_ok());

  auto t3 = (*file)->tensor_at(u3, DType::kU3, {5});
  ASSERT_TRUE(t3.is_ok()) << t3.status().to_string();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(element_as_double(*t3, i), vals[i]) << i;
}

TEST_F(BlobTest, RejectsInconsistentSubBytePadding) {
  BlobBuilder b;
  const uint64_t bad_range = b.add(11, {0x21, 0x03}, 9);
  const uint64_t bad_count = b.add(11, {0x21, 0x03}, 3);  // 13 bits is not whole uint4s
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto r1 = (*file)->info_at(bad_range);
  ASSERT_FALSE(r1.is_ok());
  EXPECT_NE(r1.status().message().find("padding of 9 bits, expected 0..7"), std::string::npos);
  auto r2 = (*file)->info_at(bad_count);
  ASSERT_FALSE(r2.is_ok());
  EXPECT_NE(r2.status().message().find("do not hold a whole number of uint4 elements"),
            std::string::npos)
      << r2.status().message();
}

TEST_F(BlobTest, ByteSizedBlobsIgnoreThePaddingField) {
  // Older writers left the padding field (once reserved) non-zero; it has no meaning there.
  BlobBuilder b;
  const uint64_t off = b.add(3, {1, 2, 3, 4}, 0xdead);
  auto file = BlobFile::open(write(b.bytes()));
  ASSERT_TRUE(file.is_ok());
  auto t = (*file)->tensor_at(off, DType::kU8, {4});
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->data<uint8_t>()[3], 4);
}

TEST_F(BlobTest, WalksAllRecordsOfRealCorpusFiles) {
  struct Case {
    const char* file;
    uint32_t count;
  };
  const std::string root = std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/";
  for (const char* model : {"silero-vad-unified-v6.0.0.mlmodelc", "unified_int8.mlmodelc",
                            "unified_palette_4bit.mlmodelc",
                            "unified_palette_4bit.mlpackage/Data/com.apple.CoreML"}) {
    SCOPED_TRACE(model);
    auto file = BlobFile::open(root + model + "/weights/weight.bin");
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    auto records = (*file)->walk();
    ASSERT_TRUE(records.is_ok()) << records.status().to_string();
    ASSERT_EQ(records->size(), (*file)->count());
    ASSERT_GT(records->size(), 5u);
    EXPECT_EQ(records->front().metadata_offset, 64u);
    EXPECT_EQ(records->front().data_offset, 128u);
    for (const BlobInfo& r : *records) {
      EXPECT_EQ(r.data_offset, r.metadata_offset + 64);
      EXPECT_TRUE(r.dtype == DType::kF16 || r.dtype == DType::kF32 || r.dtype == DType::kU8 ||
                  r.dtype == DType::kI8)
          << dtype_name(r.dtype);
    }
    // Real files end exactly at a 64-byte boundary after the last blob.
    const BlobInfo& last = records->back();
    EXPECT_EQ((last.data_offset + last.size_bytes + 63) / 64 * 64, (*file)->file_size());
  }
}

TEST_F(BlobTest, CorpusPaletteRecordsMatchTheProgramText) {
  // unified_palette_4bit model.mil: indices tensor<uint8, [33024]> at 64 and the 16-entry
  // fp16 LUT at 33152 (values cross-checked with numpy when the corpus was examined).
  const std::string path = std::string(SG_TEST_DATA_DIR) +
                           "/corpus/silero-vad/unified_palette_4bit.mlmodelc/weights/weight.bin";
  auto file = BlobFile::open(path);
  ASSERT_TRUE(file.is_ok());
  auto indices = (*file)->tensor_at(64, DType::kU8, {33024});
  ASSERT_TRUE(indices.is_ok()) << indices.status().to_string();
  auto lut = (*file)->tensor_at(33152, DType::kF16, {16});
  ASSERT_TRUE(lut.is_ok()) << lut.status().to_string();
  // A LUT from k-means is sorted ascending.
  for (int i = 1; i < 16; ++i) {
    EXPECT_LT(f16_to_f32(lut->data<uint16_t>()[i - 1]), f16_to_f32(lut->data<uint16_t>()[i]));
  }
  auto wrong = (*file)->tensor_at(33152, DType::kF16, {32});
  EXPECT_FALSE(wrong.is_ok());
}

// A blob's data over metadata records: its own, or one the program references (listed to
// open). Those bytes (sentinel, offsets) would otherwise be read as weights.
TEST_F(BlobTest, RejectsDataOverlappingAMetadataRecord) {
  BlobBuilder b;
  const uint64_t first = b.add(1, f16_bytes({1, 2, 3, 4}));   // record 64, data 128
  const uint64_t second = b.add(1, f16_bytes({5, 6, 7, 8}));  // record 192, data 256
  b.put64(first + 16, second);  // the first blob's data now starts at the second record
  const std::string path = write(b.bytes());
  {
    auto file = BlobFile::open(path, {first, second});
    ASSERT_TRUE(file.is_ok());
    auto info = (*file)->info_at(first);
    ASSERT_FALSE(info.is_ok());
    EXPECT_EQ(info.status().code(), ErrorCode::kFormat);
    EXPECT_NE(info.status().message().find(
                  "weight.bin: blob metadata at offset 64: data [192, +8) overlaps the metadata "
                  "record at offset 192"),
              std::string::npos)
        << info.status().message();
    EXPECT_TRUE((*file)->info_at(second).is_ok());
  }
  // Its own record: data offset pointing back at the record itself.
  b.put64(first + 16, first);
  auto own = BlobFile::open(write(b.bytes()), {first});
  ASSERT_TRUE(own.is_ok());
  auto info = (*own)->info_at(first);
  ASSERT_FALSE(info.is_ok());
  EXPECT_NE(info.status().message().find("data [64, +8) overlaps its own metadata record"),
            std::string::npos)
      << info.status().message();
  // A referenced offset that holds no record (a bad reference: unaligned, or into data) does
  // not make a sound blob fail; the op that uses it meets its own error there.
  BlobBuilder sound;
  const uint64_t only = sound.add(1, f16_bytes({1, 2, 3, 4}));
  auto bad_refs = BlobFile::open(write(sound.bytes()), {only, only + 1, only + 64});
  ASSERT_TRUE(bad_refs.is_ok());
  EXPECT_TRUE((*bad_refs)->info_at(only).is_ok());
  // Data that ends right where the next record starts is fine (the layout every writer makes).
  BlobBuilder ok;
  const uint64_t a = ok.add(1, std::vector<uint8_t>(64, 0));
  const uint64_t c = ok.add(1, f16_bytes({1}));
  auto tight = BlobFile::open(write(ok.bytes()), {a, c});
  ASSERT_TRUE(tight.is_ok());
  EXPECT_TRUE((*tight)->info_at(a).is_ok());
  EXPECT_TRUE((*tight)->info_at(c).is_ok());
}

// The defect as found on the real fixture: in compiled_style.mlmodelc the record at 960 (a
// [1, 8] fp16 weight) given data offset 1088, the next record, which the program references.
// Every reader of the shard (exec resolving the weight, the blob-reference check of weights
// and ane-validator) refuses it naming the file and both offsets.
TEST_F(BlobTest, RealFixtureWithDataOverTheNextRecordIsRefused) {
  const fs::path src = fs::path(SG_TEST_DATA_DIR) / "exec/compiled_style/compiled_style.mlmodelc";
  const fs::path model = dir_ / "b10.mlmodelc";
  fs::copy(src, model, fs::copy_options::recursive);
  {
    auto shard = Shard::open(model.string());
    ASSERT_TRUE(shard.is_ok()) << shard.status().message();
    EXPECT_TRUE(verify_blob_refs(**shard).is_ok());  // the fixture as generated is sound
  }
  const fs::path bin = model / "weights/weight.bin";
  std::fstream f(bin, std::ios::in | std::ios::out | std::ios::binary);
  const uint64_t data_offset = 1088;
  f.seekp(976);  // the data offset field of the record at 960
  f.write(reinterpret_cast<const char*>(&data_offset), 8);
  f.close();
  auto shard = Shard::open(model.string());
  ASSERT_TRUE(shard.is_ok()) << shard.status().message();
  Status s = verify_blob_refs(**shard);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kFormat);
  EXPECT_NE(s.message().find(bin.string() +
                             ": blob metadata at offset 960: data [1088, +16) overlaps the "
                             "metadata record at offset 1088"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace sg
