// Found while fuzzing (fuzz_exec): the while_loop limit of 100,000 iterations counted each loop
// on its own, so a loop that never ends around one of 1000 iterations ran 10^8 iterations (a
// hang of hours in a Release build) before failing. Nested loops now count together.
#include "shardgate/executor.h"
#include "shardgate/readers.h"

#include <gtest/gtest.h>

#include <string>

namespace sg {
namespace {

TEST(FuzzRegression, NestedLoopsShareTheIterationLimitInsteadOfMultiplyingIt) {
  const std::string text = R"(program(1.3)
{
    func main<ios18>(tensor<fp32, [1]> x) {
            tensor<fp32, [1]> w = while_loop(loop_vars = (x))[name = string("w")] block(tensor<fp32, [1]> v) {
                bool k = const()[name = string("k"), val = bool(true)];
            } -> (k) block(tensor<fp32, [1]> v2) {
                tensor<fp32, [1]> zero = const()[name = string("zero"), val = tensor<fp32, [1]>([0])];
                tensor<fp32, [1]> u = while_loop(loop_vars = (zero))[name = string("u")] block(tensor<fp32, [1]> a) {
                    fp32 lim = const()[name = string("lim"), val = fp32(1000)];
                    tensor<bool, [1]> k2 = less(x = a, y = lim)[name = string("k2")];
                } -> (k2) block(tensor<fp32, [1]> b) {
                    fp32 one = const()[name = string("one"), val = fp32(1)];
                    tensor<fp32, [1]> c = add(x = b, y = one)[name = string("c")];
                } -> (c);
                tensor<fp32, [1]> v3 = add(x = v2, y = u)[name = string("v3")];
            } -> (v3);
    } -> (w);
}
)";
  auto program = parse_mil_text(text, "nested_loops.mil");
  ASSERT_TRUE(program.is_ok()) << program.status().to_string();
  auto shard = Shard::from_program(std::move(*program), ModelInfo{}, "");
  auto r = Executor(shard).run("main", {{"x", Tensor::from_f32({1}, std::vector<float>{1.0f})}}, {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.status().message().find("the loop has not ended after 100000 iterations (nested "
                                      "loops count together)"),
            std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace sg
