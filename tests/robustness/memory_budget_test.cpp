// Valid but huge shapes: before a value is allocated its size is checked against the memory
// budget (shardgate/memory_budget.h); over it is an input error naming the op, the output,
// the shape and the bytes, never std::bad_alloc, "internal error" or the OOM killer. Outputs
// with zero elements allocate nothing of their size. Each case used to end in exit 3 or a kill
// (issue: [65536, 65536] input, broadcast add to 8 GiB, conv pad 2^31-1, one_hot 2^31-1,
// zero-element tile/pad).
#include "shardgate/executor.h"
#include "shardgate/memory_budget.h"
#include "shardgate/readers.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sg {
namespace {

// Holds the budget at 1 GiB for one test and restores the previous one.
class MemoryBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = memory_budget();
    set_memory_budget(uint64_t{1} << 30);
  }
  void TearDown() override { set_memory_budget(saved_); }
  uint64_t saved_ = 0;
};

// Runs `main(inputs) -> (z)` with body `body`; inputs are declared by `params`.
Result<RunResult> run_text(const std::string& params, const std::string& body,
                           const std::map<std::string, Tensor>& inputs) {
  const std::string text = "program(1.3)\n{\n    func main<ios18>(" + params + ") {\n" + body +
                           "    } -> (z);\n}\n";
  auto p = parse_mil_text(text, "huge.mil");
  if (!p.is_ok()) return p.status();
  auto shard = Shard::from_program(std::move(p).value(), ModelInfo{}, "");
  return Executor(shard).run("main", inputs, {});
}

Tensor zeros(DType t, const Shape& s) { return Tensor::zeros(t, s).value(); }

void expect_budget_error(const Result<RunResult>& r, const std::string& op_and_output,
                         const std::string& shape) {
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape) << r.status().to_string();
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(op_and_output), std::string::npos) << m;

  EXPECT_NE(m.find("memory budget: tensor " + shape), std::string::npos) << m;
  EXPECT_NE(m.find("over the budget of 1073741824 bytes"), std::string::npos) << m;
}

TEST_F(MemoryBudget, BroadcastAddToEightGiBNamesTheOpOutputShapeAndBytes) {
  const auto r = run_text("tensor<fp32, [65536, 1]> a, tensor<fp32, [1, 32768]> b",
                          "        tensor<fp32, [65536, 32768]> z = add(x = a, y = b)"
                          "[name = string(\"z\")];\n",
                          {{"a", zeros(DType::kF32, {65536, 1})}, {"b", zeros(DType::kF32, {1, 32768})}});
  expect_budget_error(r, "op #0 'add' -> z: ", "[65536, 32768] of fp32 needs 8589934656 bytes");
}

TEST_F(MemoryBudget, OneHotOfSize2To31) {
  const auto r = run_text(
      "tensor<int32, [4]> i",
      "        tensor<fp32, [4, 2147483647]> z = one_hot(indices = i, one_hot_vector_size = "
      "int32(2147483647))[name = string(\"z\")];\n",
      {{"i", zeros(DType::kI32, {4})}});
  expect_budget_error(r, "'one_hot' -> z: ", "[4, 2147483647] of fp32");
}

TEST_F(MemoryBudget, ConvWithPad2To31) {
  const auto r = run_text(
      "tensor<fp32, [1, 1, 4, 4]> x",
      "        tensor<fp32, [1, 1, 1, 1]> w = const()[name = string(\"w\"), val = tensor<fp32, "
      "[1, 1, 1, 1]>([[[[0x1p+0]]]])];\n"
      "        tensor<fp32, [1, 1, ?, ?]> z = conv(x = x, weight = w, pad_type = "
      "string(\"custom\"), pad = tensor<int32, [4]>([2147483647, 2147483647, 0, 0]))"
      "[name = string(\"z\")];\n",
      {{"x", zeros(DType::kF32, {1, 1, 4, 4})}});
  expect_budget_error(r, "'conv' -> z: ", "[1, 1, 4294967298, 4] of fp32");
}

TEST_F(MemoryBudget, TileWithZeroElementsAllocatesNothing) {
  const auto r = run_text("tensor<fp32, [1, 0]> x",
                          "        tensor<fp32, [2147483647, 0]> z = tile(x = x, reps = "
                          "tensor<int32, [2]>([2147483647, 1]))[name = string(\"z\")];\n",
                          {{"x", zeros(DType::kF32, {1, 0})}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->outputs.at("z").shape(), (Shape{2147483647, 0}));
}

TEST_F(MemoryBudget, PadWithZeroElementsAllocatesNothing) {
  const auto r = run_text("tensor<fp32, [0, 1]> x",
                          "        tensor<fp32, [0, 2147483648]> z = pad(x = x, pad = "
                          "tensor<int32, [2]>([0, 2147483647]))[name = string(\"z\")];\n",
                          {{"x", zeros(DType::kF32, {0, 1})}});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->outputs.at("z").shape(), (Shape{0, 2147483648}));
}

TEST_F(MemoryBudget, TileOverTheBudgetIsRefusedBeforeItsIndexTables) {
  const auto r = run_text("tensor<fp32, [1, 2]> x",
                          "        tensor<fp32, [2147483647, 2]> z = tile(x = x, reps = "
                          "tensor<int32, [2]>([2147483647, 1]))[name = string(\"z\")];\n",
                          {{"x", zeros(DType::kF32, {1, 2})}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kShape);
  EXPECT_NE(r.status().message().find("'tile' -> z: memory budget: output "
                                      "[2147483647, 2] of fp32 with its index tables"),
            std::string::npos)
      << r.status().message();
}

TEST_F(MemoryBudget, LiveValuesCountTowardsTheBudget) {
  // Two 60 MiB values fit one at a time but not together.
  set_memory_budget(uint64_t{100} << 20);
  auto a = Tensor::zeros(DType::kU8, {60 << 20});
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  auto b = Tensor::zeros(DType::kU8, {60 << 20});
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("bytes already live"), std::string::npos);
  a = Tensor();
  EXPECT_TRUE(Tensor::zeros(DType::kU8, {60 << 20}).is_ok());
}

TEST(ArgReduce, OverAnEmptyAxisIsRefusedLikeReduceMax) {
  for (const char* op : {"reduce_argmax", "reduce_max"}) {
    const bool argmax = std::string(op) == "reduce_argmax";
    const std::string call = argmax ? "int32, [2]> z = reduce_argmax(x = x, axis = int32(1))"
                                    : "fp32, [2]> z = reduce_max(x = x, axes = tensor<int32, "
                                      "[1]>([1]))";
    const auto r = run_text("tensor<fp32, [2, 0]> x",
                            "        tensor<" + call + "[name = string(\"z\")];\n",
                            {{"x", zeros(DType::kF32, {2, 0})}});
    ASSERT_FALSE(r.is_ok()) << op;
    EXPECT_EQ(r.status().code(), ErrorCode::kShape) << op;
    EXPECT_NE(r.status().message().find("of an empty axis"), std::string::npos)
        << op << ": " << r.status().message();
  }
}

TEST(ByteSize, ParsesUnitsAndRefusesNonsense) {
  EXPECT_EQ(parse_byte_size("1073741824").value(), uint64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512M").value(), uint64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("4GiB").value(), uint64_t{4} << 30);
  EXPECT_EQ(parse_byte_size("2t").value(), uint64_t{2} << 40);
  for (const char* bad : {"", "0", "-1", "4X", "G", "99999999999T"}) {
    EXPECT_FALSE(parse_byte_size(bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace sg
