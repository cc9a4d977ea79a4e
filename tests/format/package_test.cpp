// Tests of the .mlpackage manifest reader (runtime/format/package_manifest.cpp) and the
// .mlmodelc metadata.json reader (runtime/format/compiled_metadata.cpp).
#include "shardgate/io.h"
#include "shardgate/readers.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace sg {
namespace {

namespace fs = std::filesystem;

using sg::testing::kSileroDir;
using sg::testing::kSileroModels;

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sg_package_test_XXXXXX").string();
    char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string manifest(const std::string& version, const std::string& root_id,
                     const std::string& path) {
  return R"({"fileFormatVersion": ")" + version + R"(", "itemInfoEntries": {
      "AAA": {"author": "com.example.Test", "description": "CoreML Model Specification",
              "name": "model.mlmodel", "path": ")" + path + R"("},
      "BBB": {"author": "com.example.Test", "description": "CoreML Model Weights",
              "name": "weights", "path": "com.example.Test/weights"}},
    "rootModelIdentifier": ")" + root_id + R"("})";
}

// A package with a custom author directory and an (empty) model file.
fs::path make_package(const TempDir& dir, const std::string& manifest_text) {
  const fs::path pkg = dir.path() / "m.mlpackage";
  write(pkg / "Data/com.example.Test/model.mlmodel", "");
  write(pkg / "Manifest.json", manifest_text);
  return pkg;
}

// --- Manifest.json ---------------------------------------------------------------------

TEST(PackageManifest, CorpusPackages) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    Result<PackageLayout> l = read_package_manifest(kSileroDir + name + ".mlpackage");
    ASSERT_TRUE(l.is_ok()) << l.status().to_string();
    EXPECT_TRUE(fs::path(l->root_model_path).is_absolute());
    EXPECT_TRUE(fs::equivalent(l->root_model_path, kSileroDir + name +
                                                       ".mlpackage/Data/com.apple.CoreML/"
                                                       "model.mlmodel"));
    EXPECT_TRUE(
        fs::equivalent(l->model_dir, kSileroDir + name + ".mlpackage/Data/com.apple.CoreML"));
    EXPECT_TRUE(fs::is_regular_file(fs::path(l->model_dir) / "weights/weight.bin"));
  }
}

TEST(PackageManifest, AuthorDirectoryIsNotHardCoded) {
  TempDir dir;
  const fs::path pkg =
      make_package(dir, manifest("1.0.0", "AAA", "com.example.Test/model.mlmodel"));
  Result<PackageLayout> l = read_package_manifest(pkg.string());
  ASSERT_TRUE(l.is_ok()) << l.status().to_string();
  EXPECT_EQ(fs::path(l->root_model_path).filename(), "model.mlmodel");
  EXPECT_TRUE(fs::equivalent(l->model_dir, pkg / "Data/com.example.Test"));
}

TEST(PackageManifest, OlderAndShorterVersionsAreAccepted) {
  for (const char* v : {"1.0", "0.9.9", "1"}) {
    TempDir dir;
    const fs::path pkg = make_package(dir, manifest(v, "AAA", "com.example.Test/model.mlmodel"));
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    EXPECT_TRUE(l.is_ok()) << v << ": " << l.status().to_string();
  }
}

TEST(PackageManifest, NewerVersionIsRefused) {
  for (const char* v : {"1.0.1", "1.1.0", "2.0.0"}) {
    TempDir dir;
    const fs::path pkg = make_package(dir, manifest(v, "AAA", "com.example.Test/model.mlmodel"));
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok()) << v;
    EXPECT_EQ(l.status().code(), ErrorCode::kUnsupported);
    EXPECT_NE(l.status().message().find("Manifest.json"), std::string::npos);
    EXPECT_NE(l.status().message().find(v), std::string::npos);
  }
}

TEST(PackageManifest, MalformedVersionIsAFormatError) {
  for (const char* v : {"", "x.y", "1..0", "1.0.0.0", "-1.0"}) {
    TempDir dir;
    const fs::path pkg = make_package(dir, manifest(v, "AAA", "com.example.Test/model.mlmodel"));
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok()) << v;
    EXPECT_EQ(l.status().code(), ErrorCode::kFormat) << v;
  }
}

TEST(PackageManifest, MissingOrUnknownRootIdentifier) {
  {
    TempDir dir;
    const fs::path pkg = make_package(dir, R"({"fileFormatVersion": "1.0.0",
        "itemInfoEntries": {"AAA": {"path": "com.example.Test/model.mlmodel"}}})");
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok());
    EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
    EXPECT_NE(l.status().message().find("rootModelIdentifier"), std::string::npos);
  }
  {
    TempDir dir;
    const fs::path pkg =
        make_package(dir, manifest("1.0.0", "ZZZ", "com.example.Test/model.mlmodel"));
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok());
    EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
    EXPECT_NE(l.status().message().find("'ZZZ'"), std::string::npos) << l.status().message();
  }
}

TEST(PackageManifest, PathsEscapingThePackageAreRefused) {
  for (const char* p : {"../outside/model.mlmodel", "com.example.Test/../../model.mlmodel",
                        "/etc/passwd", ""}) {
    TempDir dir;
    write(dir.path() / "outside/model.mlmodel", "");
    const fs::path pkg = make_package(dir, manifest("1.0.0", "AAA", p));
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok()) << p;
    EXPECT_EQ(l.status().code(), ErrorCode::kFormat) << p;
    EXPECT_NE(l.status().message().find("leaves the package"), std::string::npos)
        << l.status().message();
  }
}

// The weights item is held to the same rule as the model's: a package whose model path is fine
// but whose weights path climbs out of Data/ is refused, naming the item and the path.
TEST(PackageManifest, WeightsItemPathEscapingThePackageIsRefused) {
  for (const char* p : {"../outside/weights", "com.example.Test/../../weights", "/etc"}) {
    TempDir dir;
    std::string text = manifest("1.0.0", "AAA", "com.example.Test/model.mlmodel");
    const std::string good = "\"com.example.Test/weights\"";
    text.replace(text.find(good), good.size(), std::string("\"") + p + "\"");
    const fs::path pkg = make_package(dir, text);
    Result<PackageLayout> l = read_package_manifest(pkg.string());
    ASSERT_FALSE(l.is_ok()) << p;
    EXPECT_EQ(l.status().code(), ErrorCode::kFormat) << p;
    EXPECT_NE(l.status().message().find("itemInfoEntries[BBB].path '" + std::string(p) +
                                        "' leaves the package"),
              std::string::npos)
        << l.status().message();
  }
  // The same package with the weights path left alone opens.
  TempDir dir;
  const fs::path pkg = make_package(dir, manifest("1.0.0", "AAA", "com.example.Test/model.mlmodel"));
  EXPECT_TRUE(read_package_manifest(pkg.string()).is_ok());
}

TEST(PackageManifest, SymlinkOutOfThePackageIsRefused) {
  TempDir dir;
  write(dir.path() / "outside/model.mlmodel", "");
  const fs::path pkg = make_package(dir, manifest("1.0.0", "AAA", "com.example.Test/link.mlmodel"));
  fs::create_symlink(dir.path() / "outside/model.mlmodel",
                     pkg / "Data/com.example.Test/link.mlmodel");
  Result<PackageLayout> l = read_package_manifest(pkg.string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
  EXPECT_NE(l.status().message().find("outside the package"), std::string::npos);
}

TEST(PackageManifest, MissingFilesAreIOErrors) {
  TempDir dir;
  Result<PackageLayout> l = read_package_manifest((dir.path() / "none.mlpackage").string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kIO);
  const fs::path pkg = dir.path() / "p.mlpackage";
  write(pkg / "Manifest.json", manifest("1.0.0", "AAA", "com.example.Test/model.mlmodel"));
  l = read_package_manifest(pkg.string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kIO);
  EXPECT_NE(l.status().message().find("model.mlmodel"), std::string::npos);
}

TEST(PackageManifest, MalformedJsonNamesTheFile) {
  TempDir dir;
  const fs::path pkg = make_package(dir, R"({"fileFormatVersion": "1.0.0",)");
  Result<PackageLayout> l = read_package_manifest(pkg.string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
  EXPECT_NE(l.status().message().find("Manifest.json: invalid JSON at byte"), std::string::npos)
      << l.status().message();
  // Valid JSON of the wrong shape.
  write(pkg / "Manifest.json", R"(["1.0.0"])");
  l = read_package_manifest(pkg.string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
  write(pkg / "Manifest.json",
        R"({"fileFormatVersion": 1, "rootModelIdentifier": "AAA", "itemInfoEntries": {}})");
  l = read_package_manifest(pkg.string());
  ASSERT_FALSE(l.is_ok());
  EXPECT_EQ(l.status().code(), ErrorCode::kFormat);
}

// --- metadata.json ----------------------------------------------------------------------

TEST(CompiledMetadata, CorpusModelsAgreeWithTheirPackages) {
  for (const char* name : kSileroModels) {
    SCOPED_TRACE(name);
    Result<ModelInfo> meta = read_compiled_metadata(kSileroDir + name + ".mlmodelc");
    ASSERT_TRUE(meta.is_ok()) << meta.status().to_string();
    EXPECT_EQ(meta->spec_version, std::string(name) == "silero-vad-unified-v6.0.0" ? 6 : 7);
    ASSERT_EQ(meta->inputs.size(), 3u);
    EXPECT_EQ(meta->inputs[0].name, "audio_input");
    EXPECT_EQ(meta->inputs[0].dtype, DType::kF32);
    EXPECT_EQ(meta->inputs[0].shape, Shape({1, 576}));
    EXPECT_FALSE(meta->inputs[0].flexible);
    ASSERT_EQ(meta->outputs.size(), 3u);
    EXPECT_EQ(meta->outputs[0].name, "vad_output");
    EXPECT_EQ(meta->outputs[0].shape, Shape({1, 1, 1}));
    EXPECT_TRUE(meta->states.empty());

    // The package's ModelDescription describes the same features.
    Result<std::string> bytes =
        read_file(kSileroDir + name + ".mlpackage/Data/com.apple.CoreML/model.mlmodel");
    ASSERT_TRUE(bytes.is_ok());
    Result<ProtoModel> proto = parse_model_proto(
        std::as_bytes(std::span<const char>(bytes->data(), bytes->size())), "model.mlmodel");
    ASSERT_TRUE(proto.is_ok()) << proto.status().to_string();
    EXPECT_EQ(proto->info.spec_version, meta->spec_version);
    ASSERT_EQ(proto->info.inputs.size(), meta->inputs.size());
    for (size_t i = 0; i < meta->inputs.size(); ++i) {
      EXPECT_EQ(proto->info.inputs[i].name, meta->inputs[i].name);
      EXPECT_EQ(proto->info.inputs[i].dtype, meta->inputs[i].dtype);
      EXPECT_EQ(proto->info.inputs[i].shape, meta->inputs[i].shape);
    }
    ASSERT_EQ(proto->info.outputs.size(), meta->outputs.size());
    for (size_t i = 0; i < meta->outputs.size(); ++i) {
      EXPECT_EQ(proto->info.outputs[i].name, meta->outputs[i].name);
      EXPECT_EQ(proto->info.outputs[i].shape, meta->outputs[i].shape);
    }
  }
}

TEST(CompiledMetadata, MissingFileIsAnEmptyDescription) {
  TempDir dir;
  Result<ModelInfo> meta = read_compiled_metadata(dir.path().string());
  ASSERT_TRUE(meta.is_ok()) << meta.status().to_string();
  EXPECT_EQ(meta->spec_version, 0);
  EXPECT_TRUE(meta->inputs.empty());
}

TEST(CompiledMetadata, MalformedFileIsAFormatError) {
  const char* const cases[] = {
      R"([{"specificationVersion": 7,)",                       // truncated JSON
      R"({"specificationVersion": 7})",                        // not an array
      R"([])",                                                 // no object
      R"([{"inputSchema": {"name": "x"}}])",                   // schema not an array
      R"([{"inputSchema": [{"dataType": "Float16"}]}])",       // feature without a name
      R"([{"inputSchema": [{"name": "x", "dataType": "Float16", "shape": "[1, oops]"}]}])",
      R"([{"inputSchema": [{"name": "x", "dataType": "Float16", "shape": "[1, -3]"}]}])",
      R"([{"specificationVersion": "seven"}])",
  };
  for (const char* text : cases) {
    TempDir dir;
    write(dir.path() / "metadata.json", text);
    Result<ModelInfo> meta = read_compiled_metadata(dir.path().string());
    ASSERT_FALSE(meta.is_ok()) << text;
    EXPECT_EQ(meta.status().code(), ErrorCode::kFormat) << text;
    EXPECT_NE(meta.status().message().find("metadata.json"), std::string::npos)
        << meta.status().message();
  }
}

TEST(CompiledMetadata, FlexibleShapesStatesAndFunctions) {
  TempDir dir;
  write(dir.path() / "metadata.json", R"([{
    "specificationVersion": 9,
    "inputSchema": [
      {"name": "ids", "type": "MultiArray", "dataType": "Int32", "shape": "[1, 1]",
       "hasShapeFlexibility": "1", "shapeFlexibility": "1 × 1...2048",
       "shapeRange": "[[1, 1], [1, 2048]]"},
      {"name": "mask", "type": "MultiArray", "dataType": "Float16", "shape": "[1, 64]",
       "hasShapeFlexibility": "1", "shapeFlexibility": "1 × 64 | 1 × 128",
       "enumeratedShapes": "[[1, 64], [1, 128]]"},
      {"name": "text_range", "type": "MultiArray", "dataType": "Float32", "shape": "[2, 3]",
       "hasShapeFlexibility": "1", "shapeFlexibility": "2 × 1...8"},
      {"name": "text_enum", "type": "MultiArray", "dataType": "Float32", "shape": "[4, 3]",
       "hasShapeFlexibility": "1", "shapeFlexibility": "4 × 3 | 8 × 3"},
      {"name": "pos", "type": "Int64"}
    ],
    "outputSchema": [
      {"name": "logits", "type": "MultiArray", "dataType": "Float16", "shape": "[1, 1, 32000]",
       "hasShapeFlexibility": "0"}
    ],
    "stateSchema": [
      {"name": "kv", "type": "State", "dataType": "Float16", "shape": "[2, 1, 8, 256, 64]"}
    ],
    "functions": [
      {"name": "prefill", "inputSchema": [{"name": "ids", "dataType": "Int32", "shape": "[1, 64]"}],
       "outputSchema": [], "stateSchema": [{"name": "kv", "dataType": "Float16", "shape": "[2]"}]}
    ],
    "defaultFunctionName": "infer"
  }])");
  Result<ModelInfo> meta = read_compiled_metadata(dir.path().string());
  ASSERT_TRUE(meta.is_ok()) << meta.status().to_string();
  EXPECT_EQ(meta->spec_version, 9);
  ASSERT_EQ(meta->inputs.size(), 6u);
  const FeatureInfo& ids = meta->inputs[0];
  EXPECT_EQ(ids.dtype, DType::kI32);
  EXPECT_TRUE(ids.flexible);
  EXPECT_TRUE(ids.range_flexible);
  EXPECT_EQ(ids.shape, Shape({1, kUnknownDim}));
  const FeatureInfo& mask = meta->inputs[1];
  EXPECT_EQ(mask.dtype, DType::kF16);
  EXPECT_TRUE(mask.flexible);
  EXPECT_FALSE(mask.range_flexible);
  EXPECT_EQ(mask.shape, Shape({1, kUnknownDim}));
  EXPECT_TRUE(meta->inputs[2].range_flexible);
  EXPECT_EQ(meta->inputs[2].shape, Shape({2, kUnknownDim}));
  EXPECT_TRUE(meta->inputs[3].flexible);
  EXPECT_FALSE(meta->inputs[3].range_flexible);
  EXPECT_EQ(meta->inputs[3].shape, Shape({kUnknownDim, 3}));
  EXPECT_EQ(meta->inputs[4].dtype, DType::kI64);
  EXPECT_EQ(meta->inputs[5].function, "prefill");
  EXPECT_EQ(meta->inputs[5].shape, Shape({1, 64}));
  ASSERT_EQ(meta->outputs.size(), 1u);
  EXPECT_FALSE(meta->outputs[0].flexible);
  ASSERT_EQ(meta->states.size(), 2u);
  EXPECT_TRUE(meta->states[0].is_state);
  EXPECT_EQ(meta->states[0].shape, Shape({2, 1, 8, 256, 64}));
  EXPECT_EQ(meta->states[1].function, "prefill");
  EXPECT_EQ(meta->default_function, "infer");
}

TEST(CompiledMetadata, UnknownDataTypeIsUnsupported) {
  TempDir dir;
  write(dir.path() / "metadata.json",
        R"([{"inputSchema": [{"name": "x", "dataType": "Complex64", "shape": "[1]"}]}])");
  Result<ModelInfo> meta = read_compiled_metadata(dir.path().string());
  ASSERT_FALSE(meta.is_ok());
  EXPECT_EQ(meta.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(meta.status().message().find("Complex64"), std::string::npos);
}

}  // namespace
}  // namespace sg
