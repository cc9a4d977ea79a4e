// random_uniform, random_normal, random_bernoulli, random_categorical (coremltools 9.0
// iOS15/random.py). Apple does not document its generator, so these values can never match a
// device: the ops are SG_OP_NONREPRODUCIBLE in ops.def and fidelity gates must exclude what
// depends on them. What we promise instead is a documented, seeded, platform-independent
// stream (runtime/ops/README.md "Random ops"), so a run is repeatable and testable:
//   state = the seed parameter as a two's-complement uint64 (default seed -1: 2^64 - 1);
//   next() = SplitMix64: state += 0x9E3779B97F4A7C15; z = state;
//            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
//            return z ^ (z >> 31);
//   u() = (next() >> 11) * 2^-53, in [0, 1).
// Elements are drawn in row-major order, all arithmetic in double:
//   uniform   low + (high - low) * u()
//   normal    mean + stddev * sqrt(-2 ln(1 - u1)) * cos(2 pi u2), two draws per element
//   bernoulli 1 if u() < prob else 0
//   categorical, per distribution (row of the last axis), `size` draws: p = softmax(x)
//             (mode logits) or x / sum(x) (mode probs); the sample is the first class k whose
//             running sum of p exceeds u() (the last class if rounding leaves none); the
//             class index is returned in x's float dtype, as coremltools types it.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <cmath>

namespace sg {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(int64_t seed) : state_(static_cast<uint64_t>(seed)) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

Result<Shape> target_shape(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.get_ints("shape"));
  for (int64_t d : shape) {
    SG_OP_CHECK(ctx, d >= 0, ErrorCode::kShape, "shape {} holds a negative dim", kern::ints_str(shape));
  }
  SG_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  (void)n;
  return Shape(shape.begin(), shape.end());
}

template <typename F>
Status fill(OpContext& ctx, F draw) {
  SG_ASSIGN_OR_RETURN(Shape shape, target_shape(ctx));
  SG_ASSIGN_OR_RETURN(int64_t seed, ctx.get_int_or("seed", -1));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, shape));
  SplitMix64 rng(seed);
  float* p = out.mutable_data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<float>(draw(rng));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace

Status op_random_uniform(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double low, ctx.get_float_or("low", 0.0));
  SG_ASSIGN_OR_RETURN(double high, ctx.get_float_or("high", 1.0));
  SG_OP_CHECK(ctx, low <= high, ErrorCode::kShape, "low {} is above high {}", low, high);
  return fill(ctx, [=](SplitMix64& r) { return low + (high - low) * r.uniform(); });
}

Status op_random_normal(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double mean, ctx.get_float_or("mean", 0.0));
  SG_ASSIGN_OR_RETURN(double stddev, ctx.get_float_or("stddev", 1.0));
  SG_OP_CHECK(ctx, stddev >= 0, ErrorCode::kShape, "stddev {} is negative", stddev);
  return fill(ctx, [=](SplitMix64& r) {
    const double u1 = r.uniform(), u2 = r.uniform();
    return mean + stddev * std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * M_PI * u2);
  });
}

Status op_random_bernoulli(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(double prob, ctx.get_float_or("prob", 0.5));
  SG_OP_CHECK(ctx, prob >= 0 && prob <= 1, ErrorCode::kShape, "prob {} is outside [0, 1]", prob);
  return fill(ctx, [=](SplitMix64& r) { return r.uniform() < prob ? 1.0 : 0.0; });
}

Status op_random_categorical(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(std::string mode, ctx.get_string_or("mode", "logits"));
  SG_ASSIGN_OR_RETURN(int64_t size, ctx.get_int_or("size", 1));
  SG_ASSIGN_OR_RETURN(int64_t seed, ctx.get_int_or("seed", -1));
  SG_OP_CHECK(ctx, mode == "logits" || mode == "probs", ErrorCode::kShape,
              "mode '{}' is not logits or probs", mode);
  SG_OP_CHECK(ctx, x.rank() >= 1 && x.dim(x.rank() - 1) >= 1, ErrorCode::kShape,
              "x has shape {}: needs a last axis of classes", shape_str(x.shape()));
  SG_OP_CHECK(ctx, size >= 1 && size <= (int64_t{1} << 24), ErrorCode::kShape, "size {} must be in [1, 2^24]",
              size);
  const int64_t classes = x.dim(x.rank() - 1), rows = x.numel() / classes;
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(size);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  SplitMix64 rng(seed);
  std::vector<double> p(static_cast<size_t>(classes));
  float* dst = out.mutable_data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x.data<float>() + r * classes;
    double total = 0;
    if (mode == "logits") {
      double mx = row[0];
      for (int64_t k = 1; k < classes; ++k) mx = std::max(mx, static_cast<double>(row[k]));
      for (int64_t k = 0; k < classes; ++k) total += p[static_cast<size_t>(k)] = std::exp(row[k] - mx);
    } else {
      for (int64_t k = 0; k < classes; ++k) {
        SG_OP_CHECK(ctx, row[k] >= 0, ErrorCode::kShape, "mode probs: x[{}] = {} is negative",
                    r * classes + k, row[k]);
        total += p[static_cast<size_t>(k)] = row[k];
      }
    }
    SG_OP_CHECK(ctx, total > 0 && std::isfinite(total), ErrorCode::kShape,
                "distribution {} has no probability mass (sum {})", r, total);
    for (int64_t s = 0; s < size; ++s) {
      const double u = rng.uniform();
      double run = 0;
      int64_t pick = classes - 1;
      for (int64_t k = 0; k < classes; ++k) {
        run += p[static_cast<size_t>(k)] / total;
        if (run > u) {
          pick = k;
          break;
        }
      }
      *dst++ = static_cast<float>(pick);
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
