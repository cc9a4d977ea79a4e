// ops/f16_table.h: the costly unary ops look their results up for fp16 inputs once they have
// run on 65536 elements. A lookup must give the bits the function computes: every op that
// uses it is run here on all 65536 fp16 bit patterns (subnormals, ±inf, every NaN) as an fp16
// input, which takes the table, and on the same values widened to an fp32 input, which
// computes; the fp32 outputs are compared bit for bit, except that a NaN need only be a NaN:
// which NaN an operation on two NaNs returns follows the operand order the compiler chose for
// that one call site (softplus's sum of two NaNs gave +NaN in one loop and -NaN in the other),
// so no two compiled copies of a function promise a NaN's sign or payload.
#include "ops/elementwise.h"
#include "ops/f16_table.h"
#include "shardgate/half.h"
#include "shardgate/ops.h"
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace sg::testing {
namespace {

// Every fp16 bit pattern, as an fp16 tensor and widened (by the runtime's own widening) to fp32.
Tensor all_f16() {
  std::vector<uint16_t> h(1 << 16);
  for (uint32_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i);
  return Tensor::from_f16_bits({1 << 16}, h);
}
Tensor all_f16_widened() {
  const Tensor h = all_f16();
  std::vector<float> v(1 << 16);
  f16_to_f32_span(h.data<uint16_t>(), v.data(), v.size());
  return Tensor::from_f32({1 << 16}, v);
}

// The kernel's raw fp32 output (before the executor's storage rounding) for input x.
std::vector<uint32_t> raw_output(const std::string& type, const Tensor& x, const std::string& mode) {
  std::vector<HarnessInput> inputs = {HarnessInput::tensor("x", x)};
  if (!mode.empty()) inputs.push_back(HarnessInput::tensor("mode", str(mode)));
  std::vector<uint32_t> bits;
  const Status s = with_op_context(type, inputs, [&](OpContext& ctx) {
    const OpInfo* op = find_op(type);
    if (op == nullptr) return Status(ErrorCode::kUsage, "no op " + type);
    SG_TRY(run_kernel(*op, ctx));
    const Tensor& out = ctx.outputs().at(0);
    if (out.dtype() != DType::kF32) return Status(ErrorCode::kUsage, type + ": output is not fp32");
    bits.resize(static_cast<size_t>(out.numel()));
    std::memcpy(bits.data(), out.data<float>(), bits.size() * sizeof(float));
    return Status::ok();
  });
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return bits;
}

struct Costly {
  const char* type;
  const char* mode;
};

TEST(F16Table, EveryLookedUpOpGivesTheComputedBitsForEveryFp16Input) {
  const Costly ops[] = {
      {"silu", ""},    {"sigmoid", ""}, {"gelu", "EXACT"}, {"gelu", "TANH_APPROXIMATION"},
      {"gelu", "SIGMOID_APPROXIMATION"}, {"softplus", ""}, {"softsign", ""}, {"tanh", ""},
      {"exp", ""},     {"exp2", ""},    {"erf", ""},       {"sin", ""},
      {"cos", ""},     {"tan", ""},     {"sinh", ""},      {"cosh", ""},
      {"asin", ""},    {"acos", ""},    {"atan", ""},      {"atanh", ""},
  };
  const Tensor h = all_f16(), w = all_f16_widened();
  for (const Costly& c : ops) {
    SCOPED_TRACE(std::string(c.type) + " " + c.mode);
    // 65536 elements: the first fp16 call already reaches kF16TableAfter, so it looks up.
    static_assert(kern::kF16TableAfter <= (1 << 16));
    const std::vector<uint32_t> looked = raw_output(c.type, h, c.mode);
    const std::vector<uint32_t> computed = raw_output(c.type, w, c.mode);
    ASSERT_EQ(looked.size(), computed.size());
    int differ = 0, first = -1;
    const auto nan = [](uint32_t b) { return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0; };
    for (size_t i = 0; i < looked.size(); ++i) {
      if (looked[i] != computed[i] && !(nan(looked[i]) && nan(computed[i]))) {
        if (first < 0) first = static_cast<int>(i);
        ++differ;
      }
    }
    EXPECT_EQ(differ, 0) << "first at fp16 input 0x" << std::hex << first << ": looked up 0x"
                         << (first >= 0 ? looked[static_cast<size_t>(first)] : 0) << ", computed 0x"
                         << (first >= 0 ? computed[static_cast<size_t>(first)] : 0);
  }
}

// Calls of the counting function below (a captureless lambda can still count in a global).
int g_calls = 0;

// map_x_costly computes while its function has run on fewer than kF16TableAfter elements, then
// builds the table (one call per fp16 input) and calls the function no more for fp16 inputs; an
// fp32 input is always computed. The lookup path is what the op test above relies on taking.
TEST(F16Table, ACostlyMapCallsItsFunctionNoMoreOnceItsTableIsBuilt) {
  const auto f = [](float v) {
    ++g_calls;
    return v * 0.5f - 1.0f;
  };
  std::vector<float> outputs;
  const auto map = [&](const Tensor& x) {
    const Status s = with_op_context("silu", {HarnessInput::tensor("x", x)}, [&](OpContext& ctx) {
      SG_TRY(kern::map_x_costly(ctx, f));
      const Tensor& out = ctx.outputs().at(0);
      outputs.assign(out.data<float>(), out.data<float>() + out.numel());
      return Status::ok();
    });
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  };
  map(rand_f16({1000}, 7));
  EXPECT_EQ(g_calls, 1000);  // below kF16TableAfter: computed
  const Tensor h = all_f16(), w = all_f16_widened();
  map(h);
  EXPECT_EQ(g_calls, 1000 + (1 << 16));  // the table built: one call per fp16 input
  map(h);
  EXPECT_EQ(g_calls, 1000 + (1 << 16));  // looked up
  for (size_t i = 0; i < outputs.size(); i += 97) {
    const float want = w.data<float>()[i] * 0.5f - 1.0f;
    if (want == want) {
      EXPECT_EQ(outputs[i], want) << i;
    }
  }
  map(w);
  EXPECT_EQ(g_calls, 1000 + 2 * (1 << 16));  // fp32 input: computed
}

// The table waits until the function has run on kF16TableAfter elements, then holds f of every
// widened input.
TEST(F16Table, BuiltOnceTheFunctionHasRunOnAsManyElementsAsItHolds) {
  const auto f = [](float v) { return v * 3.0f + 1.0f; };
  EXPECT_EQ(kern::f16_table(f, 1000), nullptr);
  EXPECT_EQ(kern::f16_table(f, kern::kF16TableAfter - 2000), nullptr);
  const float* t = kern::f16_table(f, 1000);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(kern::f16_table(f, 1), t);
  for (uint32_t i = 0; i < (1u << 16); i += 97) {
    const float want = f(f16_to_f32(static_cast<uint16_t>(i)));
    if (want != want) {
      EXPECT_NE(t[i], t[i]) << i;
    } else {
      EXPECT_EQ(t[i], want) << i;
    }
  }
}

}  // namespace
}  // namespace sg::testing
