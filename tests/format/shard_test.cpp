// Shard::open on the corpus (both forms), form detection, weight path confinement, blob
// caching and literal resolution.
#include "shardgate/half.h"
#include "shardgate/blob.h"
#include "shardgate/shard.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSileroDir;

const Op* find_op_producing(const Function& fn, const std::string& name) {
  for (const Op& op : fn.block.ops) {
    for (const NamedType& out : op.outputs) {
      if (out.name == name) return &op;
    }
  }
  return nullptr;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class ShardFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("sg_shard_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST(Shard, OpensCompiledModel) {
  const std::string path = kSileroDir + "unified_palette_4bit.mlmodelc";
  auto shard = Shard::open(path);
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Shard& s = **shard;
  EXPECT_EQ(s.form(), ShardForm::kCompiled);
  EXPECT_STREQ(shard_form_name(s.form()), "mlmodelc");
  EXPECT_EQ(s.path(), path);
  EXPECT_EQ(s.model_dir(), path);
  EXPECT_TRUE(ends_with(s.program_file(), "unified_palette_4bit.mlmodelc/model.mil"));
  // sha256sum of model.mil.
  EXPECT_EQ(s.program_sha256(), "224366f897455ff5e922262a20ae9358402ae63d190e8882d6441766d0efa511");
  EXPECT_EQ(s.weight_file_bytes(), 158912u);  // the one weight.bin
  ASSERT_NE(s.program().function("main"), nullptr);
}

TEST(Shard, OpensPackage) {
  const std::string path = kSileroDir + "unified_palette_4bit.mlpackage";
  auto shard = Shard::open(path + "/");  // a trailing slash is accepted
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Shard& s = **shard;
  EXPECT_EQ(s.form(), ShardForm::kPackage);
  EXPECT_STREQ(shard_form_name(s.form()), "mlpackage");
  EXPECT_TRUE(ends_with(s.model_dir(), "Data/com.apple.CoreML")) << s.model_dir();
  EXPECT_TRUE(ends_with(s.program_file(), "model.mlmodel"));
  EXPECT_EQ(s.program_sha256(), "b7657f6ee570b99f6170f37b7a80349eaa775967a1b7e5386b88a8c6cb912df4");
  EXPECT_EQ(s.weight_file_bytes(), 158912u);
  ASSERT_NE(s.program().function("main"), nullptr);
}

TEST_F(ShardFiles, DetectsTheFormByContentsNotExtension) {
  const fs::path compiled = dir_ / "renamed_without_extension";
  fs::copy(kSileroDir + "unified_palette_4bit.mlmodelc", compiled, fs::copy_options::recursive);
  auto a = Shard::open(compiled.string());
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_EQ((*a)->form(), ShardForm::kCompiled);

  const fs::path package = dir_ / "misnamed.mlmodelc";
  fs::copy(kSileroDir + "unified_palette_4bit.mlpackage", package, fs::copy_options::recursive);
  auto b = Shard::open(package.string());
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ((*b)->form(), ShardForm::kPackage);
}

TEST_F(ShardFiles, OpenErrorsNameThePath) {
  auto missing = Shard::open((dir_ / "nothing.mlmodelc").string());
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIO);
  EXPECT_NE(missing.status().message().find("nothing.mlmodelc: no such file"), std::string::npos);

  const std::string file = (dir_ / "plain.mlpackage").string();
  std::ofstream(file) << "not a directory";
  auto plain = Shard::open(file);
  ASSERT_FALSE(plain.is_ok());
  EXPECT_EQ(plain.status().code(), ErrorCode::kIO);
  EXPECT_NE(plain.status().message().find("plain.mlpackage: not a directory"), std::string::npos);

  fs::create_directories(dir_ / "empty.mlmodelc");
  auto compiled = Shard::open((dir_ / "empty.mlmodelc").string());
  ASSERT_FALSE(compiled.is_ok());
  EXPECT_EQ(compiled.status().code(), ErrorCode::kFormat);
  EXPECT_NE(compiled.status().message().find("empty.mlmodelc: model.mil is missing"),
            std::string::npos)
      << compiled.status().message();

  fs::create_directories(dir_ / "empty.mlpackage");
  auto package = Shard::open((dir_ / "empty.mlpackage").string());
  ASSERT_FALSE(package.is_ok());
  EXPECT_EQ(package.status().code(), ErrorCode::kFormat);
  EXPECT_NE(package.status().message().find("Manifest.json is missing"), std::string::npos);

  fs::create_directories(dir_ / "other");
  auto other = Shard::open((dir_ / "other").string());
  ASSERT_FALSE(other.is_ok());
  EXPECT_EQ(other.status().code(), ErrorCode::kFormat);
}

TEST_F(ShardFiles, BrokenProgramFileIsAnError) {
  const fs::path compiled = dir_ / "broken.mlmodelc";
  fs::copy(kSileroDir + "unified_palette_4bit.mlmodelc", compiled, fs::copy_options::recursive);
  std::ofstream(compiled / "model.mil", std::ios::trunc) << "program(1.0) { func";
  auto s = Shard::open(compiled.string());
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("model.mil"), std::string::npos) << s.status().message();
}

TEST(Shard, BlobPathStaysInsideTheModel) {
  auto shard = Shard::open(kSileroDir + "unified_palette_4bit.mlmodelc");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Shard& s = **shard;
  auto ok = s.blob_path("@model_path/weights/weight.bin");
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, s.model_dir() + "/weights/weight.bin");
  for (const char* bad : {"weights/weight.bin", "/etc/passwd", "@model_path//etc/passwd",
                          "@model_path/../unified_int8.mlmodelc/weights/weight.bin",
                          "@model_path/weights/../../x.bin", "@model_path/", "@model_path/./w.bin",
                          "@model_path"}) {
    auto r = s.blob_path(bad);
    EXPECT_FALSE(r.is_ok()) << bad << " -> " << (r.is_ok() ? *r : "");
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kFormat) << bad;
    }
  }
}

TEST(Shard, PackageBlobPathTakesTheBaseNameInTheWeightsDirectory) {
  auto shard = Shard::open(kSileroDir + "unified_palette_4bit.mlpackage");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Shard& s = **shard;
  auto r = s.blob_path("@model_path/weights/weight.bin");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(*r, s.model_dir() + "/weights/weight.bin");
  auto other = s.blob_path("@model_path/some/where/weight.bin");
  ASSERT_TRUE(other.is_ok());
  EXPECT_EQ(*other, s.model_dir() + "/weights/weight.bin");
  EXPECT_FALSE(s.blob_path("@model_path/../weights/weight.bin").is_ok());
}

TEST(Shard, BlobFilesAreOpenedOnce) {
  auto shard = Shard::open(kSileroDir + "unified_palette_4bit.mlmodelc");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  auto a = (*shard)->blob_file(BlobRef{"@model_path/weights/weight.bin", 64});
  auto b = (*shard)->blob_file(BlobRef{"@model_path/weights/weight.bin", 33152});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(a->get(), b->get());
  auto missing = (*shard)->blob_file(BlobRef{"@model_path/weights/other.bin", 64});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kIO);
  EXPECT_NE(missing.status().message().find("other.bin"), std::string::npos);
}

TEST(Shard, ResolvesProgramLiterals) {
  auto shard = Shard::open(kSileroDir + "unified_palette_4bit.mlmodelc");
  ASSERT_TRUE(shard.is_ok()) << shard.status().to_string();
  const Shard& s = **shard;
  const Function* fn = s.program().function("main");
  ASSERT_NE(fn, nullptr);
  const Op* op = find_op_producing(*fn, "stft_forward_basis_to_fp16_palettized");
  ASSERT_NE(op, nullptr);
  const Value* lut = op->attribute("lut");
  ASSERT_NE(lut, nullptr);
  ASSERT_TRUE(lut->is_blob());
  auto t = s.resolve(*lut);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DType::kF16);
  EXPECT_EQ(t->shape(), (Shape{16}));
  EXPECT_TRUE(t->is_view());
  // First and last LUT entries as numpy reads them from weight.bin.
  EXPECT_EQ(t->data<uint16_t>()[0], f32_to_f16(-0.9194f));
  EXPECT_EQ(t->data<uint16_t>()[15], f32_to_f16(0.9297f));

  const Value* shape = op->attribute("shape");
  ASSERT_NE(shape, nullptr);
  auto inline_t = s.resolve(*shape);
  ASSERT_TRUE(inline_t.is_ok());
  EXPECT_EQ(inline_t->numel(), 3);

  // The same blob under a wrong type: dtype, then element count, then an unknown dim.
  Value wrong = *lut;
  wrong.type.dtype = DType::kF32;
  auto r1 = s.resolve(wrong);
  ASSERT_FALSE(r1.is_ok());
  EXPECT_NE(r1.status().message().find("weight.bin: blob at offset 33152: stored as fp16"),
            std::string::npos)
      << r1.status().message();
  wrong = *lut;
  wrong.type.shape = {17};
  EXPECT_FALSE(s.resolve(wrong).is_ok());
  wrong.type.shape = {kUnknownDim};
  auto r3 = s.resolve(wrong);
  ASSERT_FALSE(r3.is_ok());
  EXPECT_EQ(r3.status().code(), ErrorCode::kShape);
  EXPECT_NE(r3.status().message().find("fully known shape"), std::string::npos);
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// A const without its value is refused when the shard is opened, naming the file and line,
// not later when something first decodes it.
TEST_F(ShardFiles, ConstWithoutValueIsRefusedAtOpen) {
  const fs::path model = dir_ / "m.mlmodelc";
  fs::create_directories(model);
  std::ofstream(model / "model.mil") << R"(program(1.0)
{
    func main<ios16>(tensor<fp16, [1, 2]> x) {
            tensor<fp16, [1, 2]> w = const()[name = tensor<string, []>("w")];
            tensor<fp16, [1, 2]> y = add(x = x, y = w)[name = tensor<string, []>("y")];
        } -> (y);
}
)";
  auto shard = Shard::open(model.string());
  ASSERT_FALSE(shard.is_ok());
  EXPECT_EQ(shard.status().code(), ErrorCode::kFormat);
  EXPECT_NE(shard.status().message().find("model.mil:4: function 'main', op #0 'const' -> w: has no 'val'"),
            std::string::npos)
      << shard.status().message();
}

}  // namespace
}  // namespace sg
