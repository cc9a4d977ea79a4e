#include "shardgate/op_context.h"

namespace sg {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp16: return "fp16";
    case Precision::kFp32: return "fp32";
    case Precision::kFp16Ftz: return "fp16-ftz";
  }
  return "fp16";
}

Result<Tensor> OpContext::get_f32(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  auto r = to_f32(t);
  if (!r.is_ok()) return error(r.status().code(), "parameter '" + std::string(name) + "': " + r.status().message());
  return r;
}

namespace {
Result<double> scalar_of(OpContext& ctx, std::string_view name, const Tensor& t) {
  if (t.numel() != 1 || t.dtype() == DType::kString) {
    return ctx.error(ErrorCode::kShape, fmt::format("parameter '{}' must be a numeric scalar, got tensor<{}, {}>",
                                                    name, dtype_name(t.dtype()), shape_str(t.shape())));
  }
  return element_as_double(t, 0);
}
}  // namespace

Result<int64_t> OpContext::get_int(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  SG_ASSIGN_OR_RETURN(double v, scalar_of(*this, name, t));
  // A float literal given for an integer parameter must be finite and in range: casting NaN or
  // 1e300 to int64 is undefined behaviour.
  if (!(v >= -9.2e18 && v <= 9.2e18)) {
    return error(ErrorCode::kShape, fmt::format("parameter '{}' = {} is not a representable integer", name, v));
  }
  return static_cast<int64_t>(v);
}

Result<int64_t> OpContext::get_int_or(std::string_view name, int64_t fallback) {
  if (!has(name)) return fallback;
  return get_int(name);
}

Result<double> OpContext::get_float(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  return scalar_of(*this, name, t);
}

Result<double> OpContext::get_float_or(std::string_view name, double fallback) {
  if (!has(name)) return fallback;
  return get_float(name);
}

Result<bool> OpContext::get_bool(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  SG_ASSIGN_OR_RETURN(double v, scalar_of(*this, name, t));
  return v != 0;
}

Result<bool> OpContext::get_bool_or(std::string_view name, bool fallback) {
  if (!has(name)) return fallback;
  return get_bool(name);
}

Result<std::string> OpContext::get_string(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  if (t.dtype() != DType::kString || t.strings().size() != 1) {
    return error(ErrorCode::kShape, fmt::format("parameter '{}' must be a string scalar", name));
  }
  return t.strings()[0];
}

Result<std::string> OpContext::get_string_or(std::string_view name, std::string fallback) {
  if (!has(name)) return fallback;
  return get_string(name);
}

Result<std::vector<int64_t>> OpContext::get_ints(std::string_view name) {
  SG_ASSIGN_OR_RETURN(Tensor t, get(name));
  auto v = to_int64_vector(t);
  if (!v.is_ok()) return error(ErrorCode::kShape, fmt::format("parameter '{}': {}", name, v.status().message()));
  return v;
}

Result<std::vector<int64_t>> OpContext::get_ints_or(std::string_view name,
                                                    std::vector<int64_t> fallback) {
  if (!has(name)) return fallback;
  return get_ints(name);
}

Result<std::vector<bool>> OpContext::get_bools_or(std::string_view name, std::vector<bool> fallback) {
  if (!has(name)) return fallback;
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> v, get_ints(name));
  std::vector<bool> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] != 0;
  return out;
}

void OpContext::set_output(size_t i, Tensor t) {
  if (outputs_.size() <= i) outputs_.resize(i + 1);
  outputs_[i] = std::move(t);
}

std::string OpContext::where() const {
  const Op& o = op();
  std::string s;
  const std::string file = source_file();
  if (!file.empty()) s = o.line > 0 ? fmt::format("{}:{}: ", file, o.line) : file + ": ";
  s += fmt::format("function '{}', op #{} '{}'", function().name, o.index, o.type);
  if (!o.outputs.empty()) s += " -> " + o.outputs[0].name;
  if (file.empty() && o.line > 0) s += fmt::format(" (model.mil:{})", o.line);
  return s;
}

Status OpContext::error(ErrorCode code, const std::string& message) const {
  return Status(code, where() + ": " + message);
}

}  // namespace sg
