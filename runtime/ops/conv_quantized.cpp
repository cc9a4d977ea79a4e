// conv_quantized (coremltools 9.0 iOS15/conv.py, "experimental"): conv whose weight is a uint8
// tensor of quantized values (one value < 2^nbits per element, unpacked: coremltools packs
// them only when writing a NeuralNetwork model), dequantized as
//   W = W_quantized * quant_scale + quant_bias            (quantization_type "linear")
// with quant_scale / quant_bias scalars or one value per output channel. The convolution itself
// is the conv kernel's (runtime/ops/conv.cpp), run on the dequantized weight. "lut" is refused:
// coremltools hands no lookup table to the op (its NeuralNetwork mapping passes only scale and
// bias), so its meaning is not defined.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

namespace sg {
namespace {

// The op seen by conv: every parameter as given except `weight`, replaced by the dense one.
class DequantizedWeightContext : public OpContext {
 public:
  DequantizedWeightContext(OpContext& base, Tensor weight) : base_(base), weight_(std::move(weight)) {}
  const Op& op() const override { return base_.op(); }
  const Function& function() const override { return base_.function(); }
  Precision precision() const override { return base_.precision(); }
  int threads() const override { return base_.threads(); }
  std::string source_file() const override { return base_.source_file(); }
  bool has(std::string_view name) const override { return base_.has(name); }
  Result<Tensor> get(std::string_view name) override {
    if (name == "weight") return weight_;
    return base_.get(name);
  }
  Result<std::vector<Tensor>> get_all(std::string_view name) override {
    if (name == "weight") return std::vector<Tensor>{weight_};
    return base_.get_all(name);
  }
  Result<Tensor> read_state(std::string_view name) override { return base_.read_state(name); }
  Status write_state(std::string_view name, Tensor value) override {
    return base_.write_state(name, std::move(value));
  }

 private:
  OpContext& base_;
  Tensor weight_;
};

}  // namespace

Status op_conv_quantized(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::string type, ctx.get_string("quantization_type"));
  SG_OP_CHECK(ctx, type == "linear", ErrorCode::kUnsupported,
              "quantization_type '{}': only 'linear' has defined semantics (coremltools passes no "
              "lookup table for 'lut')", type);
  SG_ASSIGN_OR_RETURN(int64_t nbits, ctx.get_int_or("nbits", 8));
  SG_OP_CHECK(ctx, nbits >= 1 && nbits <= 8, ErrorCode::kShape, "nbits {} must be in [1, 8]", nbits);
  SG_ASSIGN_OR_RETURN(Tensor q, ctx.get("weight"));
  SG_OP_CHECK(ctx, q.dtype() == DType::kU8, ErrorCode::kShape, "weight is {}, expected uint8 quantized values",
              dtype_name(q.dtype()));
  SG_OP_CHECK(ctx, q.rank() >= 3, ErrorCode::kShape, "weight has shape {}: expected [C_out, C_in / groups, *K]",
              shape_str(q.shape()));
  SG_ASSIGN_OR_RETURN(Tensor scale, ctx.get_f32("quant_scale"));
  SG_ASSIGN_OR_RETURN(Tensor bias, ctx.get_f32("quant_bias"));
  const int64_t cout = q.dim(0), per = q.numel() / std::max<int64_t>(1, cout);
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"quant_scale", &scale}, {"quant_bias", &bias}}) {
    SG_OP_CHECK(ctx, t->numel() == 1 || t->numel() == cout, ErrorCode::kShape,
                "{} has {} values: expected 1 or one per output channel ({})", name, t->numel(), cout);
  }
  SG_ASSIGN_OR_RETURN(Tensor w, kern::new_tensor(ctx, DType::kF32, q.shape()));
  const uint8_t* src = q.data<uint8_t>();
  float* dst = w.mutable_data<float>();
  const int64_t limit = int64_t{1} << nbits;
  for (int64_t i = 0; i < q.numel(); ++i) {
    SG_OP_CHECK(ctx, src[i] < limit, ErrorCode::kShape, "weight[{}] = {} does not fit in nbits = {}", i, src[i], nbits);
    const int64_t c = i / per;
    const float s = scale.data<float>()[scale.numel() == 1 ? 0 : c];
    const float b = bias.data<float>()[bias.numel() == 1 ? 0 : c];
    dst[i] = static_cast<float>(src[i]) * s + b;
  }
  DequantizedWeightContext conv_ctx(ctx, std::move(w));
  SG_TRY(op_conv(conv_ctx));
  for (size_t i = 0; i < conv_ctx.outputs().size(); ++i) ctx.set_output(i, conv_ctx.outputs()[i]);
  return Status::ok();
}

}  // namespace sg
