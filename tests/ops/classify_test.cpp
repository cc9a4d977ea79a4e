// classify with string classes (the oracle cases, being .npy files, check int64 labels only):
// the label is the class of the largest probability, the first one on ties.
#include "support/op_harness.h"

#include <gtest/gtest.h>

namespace sg::testing {
namespace {

TEST(Classify, StringLabelIsTheClassOfTheLargestProbability) {
  const Tensor classes = Tensor::from_strings({3}, {"cat", "dog", "eel"});
  for (const auto& [probs, want] : std::vector<std::pair<std::vector<float>, std::string>>{
           {{0.1f, 0.7f, 0.2f}, "dog"}, {{0.5f, 0.2f, 0.5f}, "cat"}, {{0.0f, 0.0f, 1.0f}, "eel"}}) {
    auto r = run_op("classify",
                    {HarnessInput::tensor("probabilities", f32s({3}, probs)), HarnessInput::tensor("classes", classes)},
                    {DType::kString, DType::kF64}, Precision::kFp32);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ((*r)[0].dtype(), DType::kString);
    EXPECT_EQ((*r)[0].strings().at(0), want);
    ASSERT_EQ((*r)[1].numel(), 3);
    for (int64_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ((*r)[1].data<double>()[i], probs[static_cast<size_t>(i)]);
  }
}

}  // namespace
}  // namespace sg::testing
