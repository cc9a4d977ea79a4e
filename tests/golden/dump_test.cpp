// Golden dump directories: writing and reading back, manifest validation errors (each naming
// the file and the JSON place), and files that disagree with their manifest entry.
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "shardgate/npy.h"
#include "support/json_schema_lite.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace sg {
namespace {

namespace fs = std::filesystem;

class DumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_golden_dump_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A valid two-tensor dump written with GoldenDumpWriter.
  void write_valid() {
    auto w = GoldenDumpWriter::create(dir_.string(), "tiny", "fp32", {1, 2, 3});
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    GoldenEntry ids;
    ids.name = "input_ids";
    ids.kind = "input";
    ids.position_axis = 1;
    const std::vector<int32_t> iv = {1, 2, 3};
    ASSERT_TRUE(w->add(ids, Tensor::from_i32({1, 3}, iv)).is_ok());
    GoldenEntry h;
    h.name = "hidden.0";
    h.kind = "hidden";
    h.layer = 0;
    h.position_axis = 1;
    const std::vector<float> hv = {1, 2, 3, 4, 5, 6};
    ASSERT_TRUE(w->add(h, Tensor::from_f32({1, 3, 2}, hv)).is_ok());
    ASSERT_TRUE(w->finish().is_ok());
  }

  void write_manifest(const std::string& text) {
    std::ofstream(path("manifest.json")) << text;
  }

  fs::path dir_;
};

TEST_F(DumpTest, WriterOutputReadsBackAndValidatesAgainstTheSchema) {
  write_valid();
  auto src = open_golden_dump(dir_.string());
  ASSERT_TRUE(src.is_ok()) << src.status().to_string();
  ASSERT_EQ((*src)->entries().size(), 2u);
  const GoldenEntry* h = (*src)->find("hidden.0");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->file, "hidden_0.npy");
  EXPECT_EQ(h->layer, 0);
  auto t = (*src)->load("hidden.0");
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(t->data<float>()[5], 6.0f);
  EXPECT_TRUE((*src)->verify_all().is_ok());
  // The sha256 in the manifest is the sha256 of the file on disk.
  auto sha = sha256_file(path("hidden_0.npy"));
  ASSERT_TRUE(sha.is_ok());
  EXPECT_EQ(h->sha256, *sha);

  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/golden-dump.schema.json");
  auto manifest = read_file(path("manifest.json"));
  ASSERT_TRUE(schema.is_ok() && manifest.is_ok());
  EXPECT_EQ(testing::json_schema_violations(*schema, *manifest), std::vector<std::string>{});
}

TEST_F(DumpTest, MissingFileIsAnIoErrorNamingTheFile) {
  write_valid();
  fs::remove(path("hidden_0.npy"));
  auto src = open_golden_dump(dir_.string());
  ASSERT_TRUE(src.is_ok());
  auto t = (*src)->load("hidden.0");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kIO);
  EXPECT_NE(t.status().message().find("hidden_0.npy"), std::string::npos);
  EXPECT_FALSE((*src)->verify_all().is_ok());
}

TEST_F(DumpTest, ShaMismatchIsDetected) {
  write_valid();
  const std::vector<float> other = {1, 2, 3, 4, 5, 7};
  ASSERT_TRUE(write_npy(path("hidden_0.npy"), Tensor::from_f32({1, 3, 2}, other)).is_ok());
  auto src = open_golden_dump(dir_.string());
  ASSERT_TRUE(src.is_ok());
  auto t = (*src)->load("hidden.0");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kFormat);
  EXPECT_NE(t.status().message().find("sha256 mismatch"), std::string::npos);
  EXPECT_NE(t.status().message().find("hidden_0.npy"), std::string::npos);
}

TEST_F(DumpTest, ShapeOrDtypeDisagreeingWithTheFileIsAShapeError) {
  write_valid();
  auto text = read_file(path("manifest.json"));
  ASSERT_TRUE(text.is_ok());
  auto parsed = parse_golden_manifest(*text, "manifest.json");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  GoldenManifest manifest = *parsed;
  manifest.tensors[1].shape = {1, 6};
  write_manifest(golden_manifest_json(manifest));
  auto src = open_golden_dump(dir_.string());
  ASSERT_TRUE(src.is_ok());
  auto t = (*src)->load("hidden.0");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kShape);
  EXPECT_NE(t.status().message().find("[1, 3, 2]"), std::string::npos);
  EXPECT_NE(t.status().message().find("[1, 6]"), std::string::npos);

  manifest.tensors[1].shape = {1, 3, 2};
  manifest.tensors[1].dtype = DType::kF16;
  write_manifest(golden_manifest_json(manifest));
  auto src2 = open_golden_dump(dir_.string());
  ASSERT_TRUE(src2.is_ok());
  auto t2 = (*src2)->load("hidden.0");
  ASSERT_FALSE(t2.is_ok());
  EXPECT_EQ(t2.status().code(), ErrorCode::kShape);
  EXPECT_NE(t2.status().message().find("fp16"), std::string::npos);
}

TEST(GoldenManifest, ValidationErrorsNameThePlace) {
  const std::string sha(64, 'a');
  auto entry = [&](const std::string& fields) {
    return R"({"name": "hidden.0", "kind": "hidden", "layer": 0, "position_axis": 1,
               "shape": [1, 8, 4], "dtype": "fp16", "file": "h.npy", "sha256": ")" + sha + "\"" +
           fields + "}";
  };
  auto manifest = [&](const std::string& tensors) {
    return R"({"schema": "shardgate/golden-dump@1", "model": "m", "tensors": [)" + tensors + "]}";
  };
  struct Case {
    std::string text, needle;
  };
  const std::string e = entry("");
  const std::vector<Case> cases = {
      {R"({"schema": "shardgate/golden-dump@2", "tensors": []})", "schema"},
      {R"({"schema": "shardgate/golden-dump@1"})", "tensors"},
      {manifest(e + "," + e), "tensors[1]: duplicate tensor name 'hidden.0'"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1, 2], "dtype": "fp16",
                    "position_axis": 2, "file": "x.npy", "sha256": ")" + sha + "\"}"),
       "position_axis: 2 is outside rank 2"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1, -2], "dtype": "fp16",
                    "file": "x.npy", "sha256": ")" + sha + "\"}"), "tensors[0] ('x').shape[1]: negative"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1], "dtype": "fp16",
                    "file": "../x.npy", "sha256": ")" + sha + "\"}"), "relative path"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1], "dtype": "fp16",
                    "file": "/etc/x.npy", "sha256": ")" + sha + "\"}"), "relative path"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1], "dtype": "fp16",
                    "file": "x.npy", "sha256": "ABC"})"), "sha256: expected 64"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1], "dtype": "float16",
                    "file": "x.npy", "sha256": ")" + sha + "\"}"), "unsupported dtype 'float16'"},
      {manifest(R"({"name": "x", "kind": "hidden", "shape": [1.5], "dtype": "fp16",
                    "file": "x.npy", "sha256": ")" + sha + "\"}"), "expected an integer"},
      {manifest(R"({"kind": "hidden", "shape": [1], "dtype": "fp16", "file": "x.npy"})"), "missing key 'name'"},
      {"{\"schema\": ", "invalid JSON"},
  };
  for (const Case& c : cases) {
    auto m = parse_golden_manifest(c.text, "dump/manifest.json");
    ASSERT_FALSE(m.is_ok()) << c.text;
    EXPECT_EQ(m.status().code(), ErrorCode::kFormat);
    EXPECT_NE(m.status().message().find("dump/manifest.json"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find(c.needle), std::string::npos) << m.status().message();
  }
}

TEST(GoldenDump, TestDataDumpsVerify) {
  for (const char* d : {"ref", "cand_pass", "cand_fail"}) {
    auto src = open_golden_dump(std::string(SG_TEST_DATA_DIR "/golden/") + d);
    ASSERT_TRUE(src.is_ok()) << src.status().to_string();
    EXPECT_TRUE((*src)->verify_all().is_ok()) << d;
  }
}

TEST(GoldenDump, BundledSampleFollowsTheFormat) {
  // goldens/sample is generated by tests/generators; it must follow the documented format.
  const fs::path root = SG_SOURCE_DIR "/goldens/sample";
  ASSERT_TRUE(fs::exists(root)) << "goldens/sample is missing";
  auto schema = read_file(SG_SOURCE_DIR "/reports/schema/golden-dump.schema.json");
  ASSERT_TRUE(schema.is_ok());
  int found = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().filename() != "manifest.json") continue;
    auto text = read_file(e.path().string());
    ASSERT_TRUE(text.is_ok());
    if (text->find("shardgate/golden-dump@1") == std::string::npos) continue;
    ++found;
    EXPECT_EQ(testing::json_schema_violations(*schema, *text), std::vector<std::string>{})
        << e.path();
    auto src = open_golden_dump(e.path().parent_path().string());
    ASSERT_TRUE(src.is_ok()) << src.status().to_string();
    EXPECT_TRUE((*src)->verify_all().is_ok()) << e.path();
  }
  ASSERT_GT(found, 0) << "no golden dump under goldens/sample";
}

TEST(GoldenSource, OpenDispatchesOnPathKind) {
  auto none = open_golden_source(SG_TEST_DATA_DIR "/golden/does_not_exist");
  EXPECT_EQ(none.status().code(), ErrorCode::kIO);
  auto other = open_golden_source(SG_TEST_DATA_DIR "/golden/expected.json");
  EXPECT_EQ(other.status().code(), ErrorCode::kUsage);
  auto st = open_golden_source(SG_TEST_DATA_DIR "/golden/cand_pass.safetensors");
  ASSERT_TRUE(st.is_ok()) << st.status().to_string();
}

}  // namespace
}  // namespace sg
