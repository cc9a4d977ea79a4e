// Every op of coremltools 9.0's MIL registry (tests/data/registry/mil_core_ops.txt, written by
// tests/generators/dump_mil_registry.py) has a placement rule or an explicit, reasoned UNKNOWN:
// it is listed in runtime/placement/op_kinds.def, and an fp16 instance of it never falls to
// the DEFAULT rule.
#include "placement/program_builder.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <sstream>

namespace sg {
namespace {

std::vector<std::string> registry_ops() {
  auto text = read_file(SG_TEST_DATA_DIR "/registry/mil_core_ops.txt");
  EXPECT_TRUE(text.is_ok());
  std::vector<std::string> ops;
  std::istringstream in(text.is_ok() ? *text : std::string());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ops.push_back(line.substr(0, line.find('\t')));
  }
  return ops;
}

const PlacementOpKind* kind_of(std::string_view op) {
  for (const PlacementOpKind& k : placement_op_kinds()) {
    if (k.op == op) return &k;
  }
  return nullptr;
}

TEST(RegistryCoverage, TheCommittedListIsTheWholeRegistry) {
  EXPECT_EQ(registry_ops().size(), 168u);  // SSAOpRegistry.core_ops of coremltools 9.0
}

TEST(RegistryCoverage, EveryRegistryOpHasAKindAndUnknownsHaveAReason) {
  for (const std::string& op : registry_ops()) {
    const PlacementOpKind* k = kind_of(op);
    ASSERT_NE(k, nullptr) << op << " is not in runtime/placement/op_kinds.def";
    if (k->kind == "kUnknown") {
      EXPECT_GT(k->why.size(), 20u) << op << ": an explicit UNKNOWN needs its reason";
    } else {
      EXPECT_TRUE(k->why.empty()) << op;
    }
  }
}

TEST(RegistryCoverage, NoRegistryOpFallsToDefault) {
  for (const std::string& op : registry_ops()) {
    SCOPED_TRACE(op);
    test::ProgramBuilder b;
    b.input("x", DType::kF16, {1, 8, 4, 4});
    b.op(op, {{"y", DType::kF16, {1, 8, 4, 4}}}, {{"x", {"x"}}});
    b.output("y");
    auto rows = predict_placement(b.program, {});
    ASSERT_TRUE(rows.is_ok()) << rows.status().to_string();
    const OpPlacement& row = rows->back();
    EXPECT_NE(row.rule_id, "DEFAULT");
    if (row.placement == Placement::kUnknown) {
      EXPECT_EQ(row.rule_id, "U1");
      EXPECT_FALSE(row.detail.empty()) << "an UNKNOWN row carries the op's reason";
    }
  }
}

TEST(RegistryCoverage, AnOpOutsideTheRegistryStillFallsToDefault) {
  test::ProgramBuilder b;
  b.input("x", DType::kF16, {1, 8});
  b.op("my_custom_layer", {{"y", DType::kF16, {1, 8}}}, {{"x", {"x"}}});
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ(rows->back().rule_id, "DEFAULT");
}

}  // namespace
}  // namespace sg

namespace sg {
namespace {

// Shapes come from the input file: huge dims must never overflow a predicate's arithmetic
// (the sanitizer build reports signed overflow; a saturating count keeps the verdict sane).
TEST(RegistryCoverage, HugeDimsNeverOverflowThePredicates) {
  const int64_t huge = int64_t{1} << 62;
  test::ProgramBuilder b;
  b.input("x", DType::kF16, {1, 8, huge, huge});
  b.input("g", DType::kF16, {1, 8, 1, 1});
  b.input("q", DType::kF16, {huge, huge, huge, 64});
  b.op("upsample_nearest_neighbor", {{"u", DType::kF16, {1, 8, huge + 1, huge}}}, {{"x", {"x"}}});
  b.op("mul", {{"m", DType::kF16, {1, 8, huge, huge}}}, {{"x", {"x"}}, {"y", {"g"}}});
  b.op("scaled_dot_product_attention", {{"s", DType::kF16, {huge, huge, huge, 64}}},
       {{"key", {"q"}}, {"query", {"q"}}, {"value", {"q"}}});
  auto rows = predict_placement(b.program, {});
  ASSERT_TRUE(rows.is_ok());
  for (const OpPlacement& r : *rows) EXPECT_EQ(r.rule_id, "G11") << r.type;  // dims > 16384
  PredictOptions options;
  options.max_dim = std::numeric_limits<int64_t>::max();  // let the op rules see the dims
  rows = predict_placement(b.program, {}, options);
  ASSERT_TRUE(rows.is_ok());
  EXPECT_EQ((*rows)[0].rule_id, "R9");   // not exactly 2x
  EXPECT_EQ((*rows)[1].rule_id, "R6a");  // runtime 1x1 operand broadcast
  EXPECT_EQ((*rows)[2].rule_id, "R3");   // saturated element count: not below the floor
}

}  // namespace
}  // namespace sg
