// classify (coremltools 9.0 iOS15/classify.py): marks a classifier model. Inputs: fp32
// `probabilities` (any shape, one value per class in row-major order) and `classes` (a list of
// strings or int64, resolved as the stacked tensor of its elements). Outputs: the label of the
// largest probability (the first one on ties) as a rank-0 tensor of the classes' dtype, and the
// dict class -> probability, which the runtime keeps as its values: an fp64 tensor [classes] in
// the order of `classes` (the executor stores dict outputs that way; the keys are the op's
// `classes`).
#include "ops/kernel_util.h"
#include "ops/kernels.h"

namespace sg {

Status op_classify(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor p, ctx.get_f32("probabilities"));
  SG_ASSIGN_OR_RETURN(Tensor classes, ctx.get("classes"));
  SG_OP_CHECK(ctx, classes.dtype() == DType::kString || classes.dtype() == DType::kI64 ||
                       classes.dtype() == DType::kI32,
              ErrorCode::kShape, "classes must be strings or int64, not {}", dtype_name(classes.dtype()));
  SG_OP_CHECK(ctx, classes.numel() == p.numel() && p.numel() > 0, ErrorCode::kShape,
              "{} classes for {} probabilities ({}): they must match", classes.numel(), p.numel(),
              shape_str(p.shape()));
  const float* v = p.data<float>();
  int64_t best = 0;
  for (int64_t i = 1; i < p.numel(); ++i) {
    if (v[i] > v[best]) best = i;
  }
  Tensor label;
  if (classes.dtype() == DType::kString) {
    label = Tensor::from_strings({}, {classes.strings()[static_cast<size_t>(best)]});
  } else {
    SG_ASSIGN_OR_RETURN(std::vector<int64_t> ids, to_int64_vector(classes));
    SG_ASSIGN_OR_RETURN(label, kern::new_tensor(ctx, DType::kI64, {}));
    label.mutable_data<int64_t>()[0] = ids[static_cast<size_t>(best)];
  }
  SG_ASSIGN_OR_RETURN(Tensor probs, kern::new_tensor(ctx, DType::kF64, {p.numel()}));
  for (int64_t i = 0; i < p.numel(); ++i) probs.mutable_data<double>()[i] = v[i];
  ctx.set_output(0, std::move(label));
  ctx.set_output(1, std::move(probs));
  return Status::ok();
}

}  // namespace sg
