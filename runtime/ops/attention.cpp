// scaled_dot_product_attention (runtime/ops/README.md, Attention and state; iOS18): softmax(q·kᵀ /
// sqrt(E) + mask)·v per batch matrix. A bool mask marks the key positions that participate (false
// adds −inf); a float mask is added. Both products go through gemm_x_wt.
#include "core/parallel.h"
#include "ops/broadcast.h"
#include "ops/kernel_util.h"
#include "ops/linear_kernel.h"
#include "ops/softmax_kernel.h"
#include "ops/kernels.h"

#include <cmath>
#include <limits>
#include <vector>

namespace sg {

Status op_scaled_dot_product_attention(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor q, ctx.get_f32("query"));
  SG_ASSIGN_OR_RETURN(Tensor k, ctx.get_f32("key"));
  SG_ASSIGN_OR_RETURN(Tensor v, ctx.get_f32("value"));
  const int64_t rank = q.rank();
  SG_OP_CHECK(ctx, rank >= 3 && k.rank() == rank && v.rank() == rank, ErrorCode::kShape,
              "query {}, key {} and value {} must share one rank >= 3", shape_str(q.shape()),
              shape_str(k.shape()), shape_str(v.shape()));
  const Shape batch(q.shape().begin(), q.shape().end() - 2);
  const int64_t L = q.dim(rank - 2), E = q.dim(rank - 1);
  const int64_t S = k.dim(rank - 2), EV = v.dim(rank - 1);
  SG_OP_CHECK(ctx,
              Shape(k.shape().begin(), k.shape().end() - 2) == batch &&
                  Shape(v.shape().begin(), v.shape().end() - 2) == batch,
              ErrorCode::kShape, "query {}, key {} and value {} must have the same batch dims",
              shape_str(q.shape()), shape_str(k.shape()), shape_str(v.shape()));
  SG_OP_CHECK(ctx, k.dim(rank - 1) == E && v.dim(rank - 2) == S, ErrorCode::kShape,
              "key {} must be [.., S, E={}] and value {} [.., S={}, EV]", shape_str(k.shape()), E,
              shape_str(v.shape()), S);

  // The mask, broadcast to the scores [*batch, L, S].
  Shape scores_shape = batch;
  scores_shape.push_back(L);
  scores_shape.push_back(S);
  Tensor mask;
  bool bool_mask = false;
  std::vector<int64_t> mstrides;
  if (ctx.has("attn_mask")) {
    SG_ASSIGN_OR_RETURN(Tensor raw, ctx.get("attn_mask"));
    bool_mask = raw.dtype() == DType::kBool;
    if (bool_mask) {
      mask = raw;
    } else {
      SG_ASSIGN_OR_RETURN(mask, ctx.get_f32("attn_mask"));
    }
    SG_OP_CHECK(ctx, mask.rank() >= 1 && mask.rank() <= rank, ErrorCode::kShape,
                "attn_mask {} must have rank 1..{}", shape_str(mask.shape()), rank);
    SG_ASSIGN_OR_RETURN(Shape b, kern::broadcast_shapes(ctx, {scores_shape, mask.shape()}));
    SG_OP_CHECK(ctx, b == scores_shape, ErrorCode::kShape,
                "attn_mask {} does not broadcast to the scores {}", shape_str(mask.shape()),
                shape_str(scores_shape));
    mstrides = kern::broadcast_strides(mask.shape(), scores_shape);
  }

  Shape out_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(EV);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  const int64_t nb = numel(batch);
  const float sqrt_e = std::sqrt(static_cast<float>(E));
  const float* qd = q.data<float>();
  const float* kd = k.data<float>();
  const float* vd = v.data<float>();
  float* od = out.mutable_data<float>();
  const size_t r = static_cast<size_t>(rank);
  parallel_for(nb, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> scores(static_cast<size_t>(L * S));
    std::vector<float> vt(static_cast<size_t>(EV * S));
    for (int64_t b = b0; b < b1; ++b) {
      WeightRows keys{DType::kF32, kd + b * S * E, S, E, E};
      gemm_x_wt(qd + b * L * E, L, E, keys, nullptr, scores.data(), S);
      // Flat offset of this batch matrix inside the broadcast mask.
      int64_t moff = 0;
      if (mask.defined()) {
        int64_t rem = b;
        for (size_t d = r - 2; d-- > 0;) {
          moff += (rem % batch[d]) * mstrides[d];
          rem /= batch[d];
        }
      }
      for (int64_t i = 0; i < L; ++i) {
        float* row = scores.data() + i * S;
        for (int64_t j = 0; j < S; ++j) {
          float s = row[j] / sqrt_e;
          if (mask.defined()) {
            const int64_t mi = moff + i * mstrides[r - 2] + j * mstrides[r - 1];
            if (bool_mask) {
              if (mask.data<uint8_t>()[mi] == 0) s = -std::numeric_limits<float>::infinity();
            } else {
              s += mask.data<float>()[mi];
            }
          }
          row[j] = s;
        }
        softmax_strided(row, S, 1, row);
      }
      transpose_copy(vd + b * S * EV, S, EV, EV, vt.data());
      WeightRows values{DType::kF32, vt.data(), EV, S, S};
      gemm_x_wt(scores.data(), L, S, values, nullptr, od + b * L * EV, EV);
    }
  });
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
