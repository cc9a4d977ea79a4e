// softmax (runtime/ops/README.md, Normalization and activations): exp(x − max) / Σ exp(x − max)
// along `axis` (default −1). The max is subtracted first, as the reference does, so large logits do
// not overflow.
#include "core/parallel.h"
#include "ops/kernel_util.h"
#include "ops/softmax_kernel.h"
#include "ops/kernels.h"

#include <cmath>
#include <limits>

namespace sg {

void softmax_strided(const float* x, int64_t n, int64_t stride, float* out) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = std::fmax(mx, x[j * stride]);
  // A row of −inf (every position masked) stays defined: the max is taken as 0, every exp is
  // 0 and the row becomes NaN through 0/0, as numpy gives.
  if (std::isinf(mx) && mx < 0) mx = 0;
  float sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const float e = std::exp(x[j * stride] - mx);
    out[j * stride] = e;
    sum += e;
  }
  const float inv = 1.0f / sum;
  for (int64_t j = 0; j < n; ++j) out[j * stride] *= inv;
}

Status op_softmax(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(int64_t axis_in, ctx.get_int_or("axis", -1));
  SG_OP_CHECK(ctx, x.rank() >= 1, ErrorCode::kShape, "x must have rank >= 1, got a scalar");
  SG_ASSIGN_OR_RETURN(int64_t axis, kern::normalize_axis(ctx, axis_in, x.rank(), "axis"));
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, x.shape()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t n = x.dim(axis);
  const float* src = x.data<float>();
  float* dst = out.mutable_data<float>();
  parallel_for(outer * inner, 4096 / std::max<int64_t>(n, 1) + 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t base = (r / inner) * n * inner + r % inner;
      softmax_strided(src + base, n, inner, dst + base);
    }
  });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
