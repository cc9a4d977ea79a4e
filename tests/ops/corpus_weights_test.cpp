// Decoded corpus weights against the dense model: every constexpr weight of the 4-bit LUT
// and int8 silero-vad variants must match the same-named const of the dense
// silero-vad-unified-v6.0.0 model within the quantizer's own error, element by element, and
// the .mlmodelc and .mlpackage of a variant must decode bit-identically. A wrong bit order,
// nibble order or scale axis breaks the per-element bound on most elements.
#include "shardgate/executor.h"
#include "shardgate/shard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace sg {
namespace {

const std::string kCorpus = std::string(SG_TEST_DATA_DIR) + "/corpus/silero-vad/";

std::shared_ptr<Shard> open_or_die(const std::string& name) {
  auto s = Shard::open(kCorpus + name);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  return s.is_ok() ? *s : nullptr;
}

std::string dense_name(std::string name) {
  for (const std::string suffix : {"_palettized", "_quantized"}) {
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return name.substr(0, name.size() - suffix.size());
    }
  }
  return name;
}

// What bounds the error of one decoded element against the dense weight, from how the
// variant was quantized:
// - 4-bit LUT (k-means palettization): each weight takes the LUT entry nearest to it, so the
//   decoded value must be a nearest entry: |got - ref| == min_j |lut_j - ref|.
// - int8 per-channel affine: round-to-nearest on the grid of step scale[c] gives
//   |got - ref| <= scale[c] / 2. The corpus variant was not quantized from exactly these fp16
//   values (a few elements per tensor sit up to 0.62 steps away, numpy agrees), so the bound
//   is 0.65 steps plus the rounding of the result and of the reference; a decoding error
//   (wrong axis, sign or zero point) moves elements by whole steps or more.
// (The absolute errors are far larger than "a few hundredths" for the encoder convs and LSTM
// matrices, whose weights span up to |31|; these per-element bounds are the real contract.)
enum class Scheme { kLut, kAffine };

struct Variant {
  const char* model;
  const char* op_type;
  Scheme scheme;
};

class CorpusWeights : public ::testing::TestWithParam<Variant> {};

// Per-element bound for element i of the weight produced by `op`.
struct Bound {
  std::vector<double> lut;       // kLut
  std::vector<double> scale;     // kAffine, per output channel (axis 0)
  bool scale_fp16 = true;
  int64_t channel_stride = 1;    // elements per channel
};

// Half a unit in the last place of |v| (normal range), an upper bound on rounding to fp16
// (11 significant bits) or fp32 (24).
double half_ulp(double v, int bits) {
  const double a = std::fabs(v);
  const int min_exp = bits == 11 ? -14 : -126;
  if (a == 0 || std::ilogb(a) < min_exp) return std::ldexp(1.0, min_exp - bits);
  return std::ldexp(1.0, std::ilogb(a) - bits);
}

TEST_P(CorpusWeights, DecodedWeightsMatchTheDenseModel) {
  const Variant v = GetParam();
  auto dense = open_or_die("silero-vad-unified-v6.0.0.mlmodelc");
  auto compiled = open_or_die(std::string(v.model) + ".mlmodelc");
  auto package = open_or_die(std::string(v.model) + ".mlpackage");
  ASSERT_TRUE(dense && compiled && package);
  const Function* dense_fn = dense->program().function("main");
  const Function* fn = compiled->program().function("main");
  const Function* pkg_fn = package->program().function("main");
  ASSERT_TRUE(dense_fn && fn && pkg_fn);

  int checked = 0;
  for (const Op& op : fn->block.ops) {
    if (!op.is_constexpr()) continue;
    ASSERT_EQ(op.type, v.op_type);
    const std::string name = op.outputs.at(0).name;
    SCOPED_TRACE(name);
    auto got = materialize_weight(*compiled, *fn, name);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    auto from_package = materialize_weight(*package, *pkg_fn, name);
    ASSERT_TRUE(from_package.is_ok()) << from_package.status().to_string();
    auto want = materialize_weight(*dense, *dense_fn, dense_name(name));
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();

    // Same model, two containers: identical bits.
    ASSERT_EQ(got->dtype(), from_package->dtype());
    ASSERT_EQ(got->shape(), from_package->shape());
    EXPECT_EQ(std::memcmp(got->raw(), from_package->raw(), got->nbytes()), 0);

    // The declared dtype of the op's output (fp16 weights stay fp16 bits).
    EXPECT_EQ(got->dtype(), op.outputs[0].type.dtype);
    ASSERT_EQ(got->shape(), want->shape());
    ASSERT_EQ(got->dtype(), want->dtype());

    Bound bound;
    const char* param = v.scheme == Scheme::kLut ? "lut" : "scale";
    ASSERT_NE(op.attribute(param), nullptr);
    auto p = compiled->resolve(*op.attribute(param));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    auto pv = to_double_vector(*p);
    ASSERT_TRUE(pv.is_ok());
    if (v.scheme == Scheme::kLut) {
      bound.lut = *pv;
    } else {
      bound.scale = *pv;
      bound.scale_fp16 = p->dtype() == DType::kF16;
      ASSERT_EQ(static_cast<int64_t>(bound.scale.size()), got->dim(0));
      bound.channel_stride = got->numel() / got->dim(0);
    }

    double max_err = 0;
    int64_t violations = 0;
    int64_t first = -1;
    for (int64_t i = 0; i < got->numel(); ++i) {
      const double g = element_as_double(*got, i);
      const double r = element_as_double(*want, i);
      const double err = std::fabs(g - r);
      max_err = std::max(max_err, err);
      double allowed = 0;
      if (v.scheme == Scheme::kLut) {
        allowed = std::numeric_limits<double>::infinity();
        for (double e : bound.lut) allowed = std::min(allowed, std::fabs(e - r));
        allowed += 1e-9;
      } else {
        const double sc = bound.scale[static_cast<size_t>(i / bound.channel_stride)];
        const int bits = bound.scale_fp16 ? 11 : 24;
        allowed = 0.65 * sc + half_ulp(g, bits) + half_ulp(r, bits) + 1e-9;
      }
      if (err > allowed) {
        if (first < 0) {
          first = i;
          std::printf("  first violation at %lld: got %.8g, dense %.8g, allowed error %.8g\n",
                      static_cast<long long>(i), g, r, allowed);
        }
        ++violations;
      }
    }
    RecordProperty(name, std::to_string(max_err));
    std::printf("  %-48s %-16s max |err| %.6f\n", name.c_str(), shape_str(got->shape()).c_str(), max_err);
    EXPECT_EQ(violations, 0) << "first at flat index " << first << " of " << got->numel();
    ++checked;
  }
  EXPECT_EQ(checked, 7);  // stft basis, 4 encoder convs, 2 LSTM matrices
}

INSTANTIATE_TEST_SUITE_P(
    SileroVad, CorpusWeights,
    ::testing::Values(Variant{"unified_palette_4bit", "constexpr_lut_to_dense", Scheme::kLut},
                      Variant{"unified_int8", "constexpr_affine_dequantize", Scheme::kAffine}),
    [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace sg
