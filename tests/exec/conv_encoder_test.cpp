// The conv-heavy fixture of issue 11 (tests/data/fixtures/conv_encoder/, written by
// tests/generators/gen_conv_encoder.py): a 1-D conv encoder over 1024 frames (64 -> 128 -> 128
// -> 128 -> 64 channels, kernels 5, 3, 3, 3, "same" padding, relu between) in fp16, int8 per
// tensor and int8 per channel. Each variant's output matches numpy's forward pass on the
// weights numpy decoded from the int8 data and scales coremltools wrote.
//
// Tolerances. fp32 mode against numpy fp32 math (float64 accumulation): ours accumulates in
// fp32 over at most 640 terms per output, measured 1.7e-6 max abs at outputs up to 5.9:
// cosine >= 0.999999 and max abs error <= 2e-5 * max|expected|. fp16 mode against the oracle
// that rounds every op output to fp16: both round the same conv sums, but a sum within fp32
// noise of an fp16 rounding boundary lands on the other side (measured: one fp16 ulp, 0.00195,
// at most): cosine >= 0.99999 and max abs error <= 1e-3 * max|expected| (3 ulps at the largest
// outputs), far below the int8 variants' distance from fp16 (checked below, > 1e-2).
#include "shardgate/executor.h"
#include "shardgate/metrics.h"
#include "shardgate/npy.h"
#include "shardgate/shard.h"
#include "support/tensor_values.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace sg {
namespace {
using sg::testing::doubles;
using sg::testing::npy_or_fail;

namespace fs = std::filesystem;
const fs::path kEncoderDir = fs::path(SG_TEST_DATA_DIR) / "fixtures" / "conv_encoder";

nlohmann::json cases() {
  std::ifstream in(kEncoderDir / "cases" / "cases.json");
  return nlohmann::json::parse(in, nullptr, false);
}

Tensor encoder_npy(const std::string& file) { return npy_or_fail(kEncoderDir / "cases" / file); }

struct Gap {
  double cosine = 0;
  double max_abs = 0;
  double max_ref = 0;
};

Gap gap(const Tensor& got, const Tensor& want) {
  const std::vector<double> a = doubles(got), b = doubles(want);
  Gap g;
  if (a.size() != b.size() || a.empty()) return g;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
    g.max_abs = std::max(g.max_abs, std::fabs(a[i] - b[i]));
    g.max_ref = std::max(g.max_ref, std::fabs(b[i]));
  }
  g.cosine = dot / std::sqrt(na * nb);
  return g;
}

Result<Tensor> run_variant(const std::string& name, Precision p) {
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> shard,
                      Shard::open((kEncoderDir / (name + ".mlpackage")).string()));
  RunOptions o;
  o.precision = p;
  SG_ASSIGN_OR_RETURN(RunResult r,
                      Executor(shard).run("main", {{"x", encoder_npy("input_x.npy")}}, o));
  return r.outputs.at("y");
}

TEST(ConvEncoder, FixtureHoldsTheThreeWeightForms) {
  const nlohmann::json c = cases();
  ASSERT_FALSE(c.is_discarded());
  EXPECT_EQ(c["frames"], 1024);
  ASSERT_EQ(c["variants"].size(), 3u);
  for (const auto& v : c["variants"]) {
    const std::string name = v["name"];
    ASSERT_EQ(v["weights"].size(), 4u) << name;
    for (const auto& w : v["weights"]) {
      if (name == "fp16") {
        EXPECT_EQ(w["producer"], "const");
      } else {
        EXPECT_EQ(w["producer"], "constexpr_blockwise_shift_scale") << name;
        const std::vector<int64_t> s = w["scale_shape"];
        ASSERT_EQ(s.size(), 3u);
        EXPECT_EQ(s[0], name == "int8" ? 1 : (s[0] == 64 ? 64 : 128)) << name;
        EXPECT_EQ(s[1] * s[2], 1) << name;
      }
    }
    EXPECT_LT(v["package_bytes"].get<int64_t>(), 1 << 20) << name;
  }
}

TEST(ConvEncoder, EveryVariantMatchesNumpy) {
  const nlohmann::json c = cases();
  ASSERT_FALSE(c.is_discarded());
  for (const auto& v : c["variants"]) {
    const std::string name = v["name"];
    for (Precision p : {Precision::kFp32, Precision::kFp16}) {
      auto y = run_variant(name, p);
      ASSERT_TRUE(y.is_ok()) << name << ": " << y.status().to_string();
      const Tensor want = encoder_npy(p == Precision::kFp32 ? v["fp32"] : v["fp16ops"]);
      ASSERT_EQ(y->shape(), want.shape()) << name;
      const Gap g = gap(*y, want);
      const bool fp32 = p == Precision::kFp32;
      EXPECT_GE(g.cosine, fp32 ? 0.999999 : 0.99999) << name << " " << precision_name(p);
      EXPECT_LE(g.max_abs, (fp32 ? 2e-5 : 1e-3) * g.max_ref)
          << name << " " << precision_name(p) << " (max |expected| " << g.max_ref << ")";
    }
  }
}

TEST(ConvEncoder, QuantizedVariantsAreDistinguishableFromFp16) {
  // The tolerance above must not be so loose that an int8 output would pass for the fp16 one.
  const Tensor dense = encoder_npy("expected_fp16_fp32.npy");
  for (const char* name : {"int8", "int8pc"}) {
    auto y = run_variant(name, Precision::kFp32);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    const Gap g = gap(*y, dense);
    EXPECT_GT(g.max_abs, 1e-2 * g.max_ref) << name;
  }
}

}  // namespace
}  // namespace sg
