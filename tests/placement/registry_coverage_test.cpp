// Every op of coremltools 9.0's MIL registry (tests/data/registry/mil_core_ops.txt, written by
// tests/generators/dump_mil_registry.py) has a placement rule or an explicit, reasoned UNKNOWN:
// it is listed in runtime/placement/op_kinds.def, and an fp16 instance of it never falls to
// the DEFAULT rule.
#include "placement/program_builder.h"
#include "shardgate/io.h"
#include "shardgate/placement.h"

#include <gtest/gtest.h>

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
