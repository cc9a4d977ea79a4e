// The harness and the comparison the oracle cases rely on: if these were lax, every oracle
// case would pass vacuously.
#include "shardgate/half.h"
#include "support/op_cases.h"
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sg::testing {
namespace {

TEST(CompareTensors, FailsOutsideTolerance) {
  const Tensor e = f32s({3}, {1.0f, 2.0f, 100.0f});
  EXPECT_EQ(compare_tensors(f32s({3}, {1.0f, 2.0f, 100.0f}), e, 0, 0), "");
  EXPECT_EQ(compare_tensors(f32s({3}, {1.0f, 2.0f, 100.1f}), e, 0, 1e-3), "");
  const std::string diff = compare_tensors(f32s({3}, {1.0f, 2.0f, 100.2f}), e, 0, 1e-3);
  EXPECT_NE(diff.find("flat index 2"), std::string::npos) << diff;
  EXPECT_NE(compare_tensors(f32s({3}, {1.001f, 2.0f, 100.0f}), e, 1e-4, 0), "");
}

TEST(CompareTensors, NanEqualsNanInfMustMatchExactly) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare_tensors(f32s({2}, {nan, inf}), f32s({2}, {nan, inf}), 0, 0), "");
  EXPECT_NE(compare_tensors(f32s({2}, {1.0f, inf}), f32s({2}, {nan, inf}), 1e9, 1e9), "");
  EXPECT_NE(compare_tensors(f32s({2}, {nan, 65504.0f}), f32s({2}, {nan, inf}), 1e9, 1e9), "");
  EXPECT_NE(compare_tensors(f32s({1}, {-inf}), f32s({1}, {inf}), 1e9, 1e9), "");
}

TEST(CompareTensors, ShapeDtypeAndIntegersAreExact) {
  EXPECT_NE(compare_tensors(f32s({2, 1}, {1, 2}), f32s({2}, {1, 2}), 0, 0).find("shape"),
            std::string::npos);
  EXPECT_NE(compare_tensors(i32_list({1, 2}), f32s({2}, {1, 2}), 0, 0).find("dtype"),
            std::string::npos);
  EXPECT_NE(compare_tensors(i32_list({1, 3}), i32_list({1, 2}), 10, 10), "");
  EXPECT_NE(compare_tensors(bools({2}, {1, 0}), bools({2}, {1, 1}), 0, 0), "");
  // fp16 bits and fp32 expectations compare by value.
  EXPECT_EQ(compare_tensors(f16s({2}, {0.5f, -2.0f}), f32s({2}, {0.5f, -2.0f}), 0, 0), "");
}

TEST(LiteralFromJson, NestedListsScalarsAndSpecialValues) {
  auto t = literal_from_json("[[1, 2, 3], [4, 5, 6]]", DType::kI32);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(t->data<int32_t>()[5], 6);
  auto s = literal_from_json("-1", DType::kI32);
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->rank(), 0);
  auto f = literal_from_json("[\"nan\", \"-inf\", 0.1]", DType::kF16);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->dtype(), DType::kF16);
  EXPECT_TRUE(std::isnan(element_as_double(*f, 0)));
  EXPECT_EQ(element_as_double(*f, 1), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(f->data<uint16_t>()[2], f32_to_f16(0.1f));
  auto e = literal_from_json("[]", DType::kI32);
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(e->shape(), (Shape{0}));
  EXPECT_FALSE(literal_from_json("[[1, 2], [3]]", DType::kI32).is_ok());
  EXPECT_FALSE(literal_from_json("[1, [2]]", DType::kI32).is_ok());
}

TEST(RunOp, StoresOutputsLikeTheExecutor) {
  // 1 + 2^-11 is a tie between fp16 neighbours 1 and 1 + 2^-10: fp16 mode rounds to even (1).
  const std::vector<HarnessInput> in = {HarnessInput::tensor("x", f32s({1}, {1.0f})),
                                        HarnessInput::tensor("y", f32s({1}, {0.00048828125f}))};
  auto r16 = run_op("add", in, {DType::kF16}, Precision::kFp16);
  ASSERT_TRUE(r16.is_ok()) << r16.status().to_string();
  EXPECT_EQ((*r16)[0].dtype(), DType::kF16);
  EXPECT_EQ(element_as_double((*r16)[0], 0), 1.0);
  auto r32 = run_op("add", in, {DType::kF16}, Precision::kFp32);
  ASSERT_TRUE(r32.is_ok());
  EXPECT_EQ((*r32)[0].dtype(), DType::kF32);
  EXPECT_EQ(element_as_double((*r32)[0], 0), 1.00048828125);
}

TEST(RunOp, ErrorsAreReportedNotCrashes) {
  auto r = run_op("reshape", {HarnessInput::tensor("x", f32s({2, 3}, {1, 2, 3, 4, 5, 6})),
                              HarnessInput::tensor("shape", i32_list({4, -1}))},
                  {DType::kF32}, Precision::kFp32);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape);
  EXPECT_NE(r.status().message().find("'reshape'"), std::string::npos) << r.status().message();
  EXPECT_FALSE(run_op("no_such_op", {}, {}, Precision::kFp16).is_ok());
}

TEST(ToStorage, RoundsWidensAndCasts) {
  auto a = to_storage(f32s({1}, {0.1f}), DType::kF16, Precision::kFp16);
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->dtype(), DType::kF16);
  EXPECT_EQ(a->data<uint16_t>()[0], f32_to_f16(0.1f));
  auto b = to_storage(f16s({1}, {0.5f}), DType::kF16, Precision::kFp32);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->dtype(), DType::kF32);
  auto c = to_storage(f32s({2}, {2.9f, -2.9f}), DType::kI32, Precision::kFp16);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->data<int32_t>()[0], 2);
  EXPECT_EQ(c->data<int32_t>()[1], -2);
  EXPECT_FALSE(to_storage(str("a"), DType::kF32, Precision::kFp16).is_ok());
  EXPECT_FALSE(to_storage(Tensor(), DType::kF32, Precision::kFp16).is_ok());
}

}  // namespace
}  // namespace sg::testing
