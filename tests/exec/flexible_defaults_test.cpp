// Seeded runs of programs with flexible inputs use the shapes the model declares as defaults:
// a coremltools-built .mlpackage (RangeDim default and EnumeratedShapes default, written as the
// description's ArrayFeatureType.shape; tests/data/exec/flexible/gen_flexible.py) and an
// Apple-compiled-style model.mil whose function carries FlexibleShapeInformation DefaultShapes
// (tests/data/exec/compiled_style). Without any declared default the input must be given.
#include "shardgate/executor.h"
#include "shardgate/probe.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sg {
namespace {

const std::string kData = std::string(SG_TEST_DATA_DIR) + "/exec/";

std::shared_ptr<Shard> open(const std::string& rel) {
  auto s = Shard::open(kData + rel);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : nullptr;
}

bool any_note_contains(const SeededInputs& in, const std::string& text) {
  return std::any_of(in.notes.begin(), in.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST(FlexibleDefaults, CoremltoolsPackageUsesTheDescriptionDefaults) {
  auto shard = open("flexible/flexible.mlpackage");
  ASSERT_NE(shard, nullptr);
  auto in = make_seeded_inputs(*shard, "main", 7);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_EQ(in->inputs.at("x").shape(), (Shape{1, 5, 8}));  // RangeDim(1, 64, default=5)
  EXPECT_EQ(in->inputs.at("y").shape(), (Shape{1, 3}));     // EnumeratedShapes default
  EXPECT_TRUE(any_note_contains(*in, "'x' drawn with shape [1, 5, 8]")) << "the note says which shape was used";
  RunOptions o;
  o.precision = Precision::kFp32;
  auto r = Executor(shard).run("main", in->inputs, o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  const Tensor& x = in->inputs.at("x");
  const Tensor& z = r->outputs.at("z");
  ASSERT_EQ(z.shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    EXPECT_FLOAT_EQ(static_cast<float>(element_as_double(z, i)), std::max(0.0f, 2.0f * static_cast<float>(element_as_double(x, i))));
  }
  EXPECT_EQ(r->outputs.at("w").shape(), (Shape{1, 3}));
}

TEST(FlexibleDefaults, CompiledProgramUsesFlexibleShapeInformationDefaultShapes) {
  auto shard = open("compiled_style/compiled_style.mlmodelc");  // no metadata.json: model.mil only
  ASSERT_NE(shard, nullptr);
  auto in = make_seeded_inputs(*shard, "main", 1);
  ASSERT_TRUE(in.is_ok()) << in.status().to_string();
  EXPECT_EQ(in->inputs.at("x").shape(), (Shape{1, 4, 8}));
  EXPECT_TRUE(any_note_contains(*in, "DefaultShapes"));
  auto r = Executor(shard).run("main", in->inputs, RunOptions{});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->outputs.at("y").shape(), (Shape{1, 4, 8}));
}

TEST(FlexibleDefaults, WithoutADeclaredDefaultTheInputMustBeGiven) {
  auto shard = open("compiled_style/compiled_style.mlmodelc");
  ASSERT_NE(shard, nullptr);
  Program p = shard->program();
  p.functions.at(0).attributes.clear();  // drop FlexibleShapeInformation
  auto bare = Shard::from_program(std::move(p), ModelInfo{}, shard->model_dir());
  auto in = make_seeded_inputs(*bare, "main", 1);
  ASSERT_FALSE(in.is_ok());
  EXPECT_EQ(in.status().code(), ErrorCode::kUsage);
  EXPECT_NE(in.status().message().find("--input x="), std::string::npos) << in.status().message();
}

}  // namespace
}  // namespace sg
