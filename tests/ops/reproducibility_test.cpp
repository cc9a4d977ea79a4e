// nonreproducible_values() (shardgate/ops.h): which values of a function a device cannot
// reproduce, the analysis behind excluding random-op checks from fidelity gates. Programs are
// written in MIL text so that each data-flow path (direct, through an input, through a loop
// body that draws, through a cond branch reading a tainted value) is one line to read.
#include "shardgate/ops.h"
#include "shardgate/readers.h"

#include <gtest/gtest.h>

namespace sg {
namespace {

Program parse(const std::string& body, const std::string& outputs) {
  const std::string text =
      "program(1.3)\n{\n    func main<ios18>(tensor<fp32, [2]> x, tensor<fp32, [2]> w) {\n" + body +
      "    } -> (" + outputs + ");\n}\n";
  auto p = parse_mil_text(text, "r.mil");
  EXPECT_TRUE(p.is_ok()) << p.status().to_string();
  return p.is_ok() ? std::move(p).value() : Program{};
}

const char* kNoise =
    "        tensor<int32, [1]> s = const()[name = string(\"s\"), val = tensor<int32, [1]>([2])];\n"
    "        tensor<fp32, [2]> n = random_uniform(shape = s)[name = string(\"noise\")];\n";

TEST(Reproducibility, FollowsDataFlowFromARandomOpAndNothingElse) {
  const Program p = parse(std::string(kNoise) +
                              "        tensor<fp32, [2]> y = add(x = x, y = n)[name = string(\"y\")];\n"
                              "        tensor<fp32, [2]> z = mul(x = x, y = w)[name = string(\"z\")];\n"
                              "        tensor<fp32, [2]> u = sub(x = y, y = z)[name = string(\"u\")];\n",
                          "y, z, u");
  const auto taint = nonreproducible_values(p.functions.at(0));
  EXPECT_EQ(taint.count("n"), 1u);
  EXPECT_EQ(taint.count("y"), 1u);
  EXPECT_EQ(taint.count("u"), 1u);  // two ops downstream
  EXPECT_EQ(taint.count("z"), 0u);
  EXPECT_EQ(taint.count("s"), 0u);
  EXPECT_EQ(taint.at("u"), "random_uniform op #1 'noise'");
}

TEST(Reproducibility, ATaintedInputCarriesItsOwnReason) {
  const Program p = parse("        tensor<fp32, [2]> y = add(x = x, y = w)[name = string(\"y\")];\n"
                          "        tensor<fp32, [2]> z = mul(x = w, y = w)[name = string(\"z\")];\n",
                          "y, z");
  const auto taint = nonreproducible_values(p.functions.at(0), {{"x", "upstream noise"}, {"nope", "?"}});
  EXPECT_EQ(taint.at("y"), "upstream noise");
  EXPECT_EQ(taint.count("z"), 0u);
  EXPECT_EQ(taint.count("nope"), 0u);  // not an input of this function
  EXPECT_TRUE(nonreproducible_values(p.functions.at(0)).empty());
}

TEST(Reproducibility, ALoopWhoseBodyDrawsTaintsEveryLoopOutput) {
  const Program p = parse(
      "        tensor<fp32, [2]> v = while_loop(loop_vars = (x))[name = string(\"loop\")] "
      "block(tensor<fp32, [2]> a) {\n"
      "            bool k = const()[name = string(\"k\"), val = bool(false)];\n"
      "        } -> (k) block(tensor<fp32, [2]> b) {\n"
      "            tensor<int32, [1]> s = const()[name = string(\"s\"), val = tensor<int32, [1]>([2])];\n"
      "            tensor<fp32, [2]> n = random_normal(shape = s)[name = string(\"inner\")];\n"
      "            tensor<fp32, [2]> c = add(x = b, y = n)[name = string(\"c\")];\n"
      "        } -> (c);\n"
      "        tensor<fp32, [2]> z = mul(x = x, y = w)[name = string(\"z\")];\n",
      "v, z");
  const auto taint = nonreproducible_values(p.functions.at(0));
  ASSERT_EQ(taint.count("v"), 1u);
  EXPECT_EQ(taint.at("v"), "random_normal op #1 'inner'");
  EXPECT_EQ(taint.count("z"), 0u);
}

TEST(Reproducibility, ACondBranchReadingATaintedOuterValueTaintsTheCond) {
  const Program p = parse(
      std::string(kNoise) +
          "        bool pred = const()[name = string(\"pred\"), val = bool(true)];\n"
          "        tensor<fp32, [2]> v = cond(pred = pred)[name = string(\"c\")] block() {\n"
          "            tensor<fp32, [2]> t = add(x = w, y = n)[name = string(\"t\")];\n"
          "        } -> (t) block() {\n"
          "            tensor<fp32, [2]> f = add(x = w, y = w)[name = string(\"f\")];\n"
          "        } -> (f);\n",
      "v");
  const auto taint = nonreproducible_values(p.functions.at(0));
  EXPECT_EQ(taint.count("v"), 1u);
  EXPECT_EQ(taint.count("t"), 0u);  // values made inside a block stay there
}

}  // namespace
}  // namespace sg
