#include "support/op_harness.h"

#include "shardgate/half.h"
#include "shardgate/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

namespace sg::testing {

HarnessInput HarnessInput::tensor(std::string name, Tensor t) {
  HarnessInput in;
  in.name = std::move(name);
  in.values.push_back(std::move(t));
  return in;
}

HarnessInput HarnessInput::tuple(std::string name, std::vector<Tensor> ts) {
  HarnessInput in;
  in.name = std::move(name);
  in.values = std::move(ts);
  in.is_tuple = true;
  return in;
}

HarnessInput HarnessInput::streamed(std::string name, Tensor dense) {
  HarnessInput in = tensor(std::move(name), std::move(dense));
  in.is_streamed = true;
  return in;
}

HarnessInput HarnessInput::state(std::string name, Tensor initial) {
  HarnessInput in = tensor(std::move(name), std::move(initial));
  in.is_state = true;
  return in;
}

Tensor i32s(const Shape& shape, std::vector<int32_t> v) { return Tensor::from_i32(shape, v); }
Tensor i32_list(std::vector<int32_t> v) {
  return Tensor::from_i32({static_cast<int64_t>(v.size())}, v);
}
Tensor f32s(const Shape& shape, std::vector<float> v) { return Tensor::from_f32(shape, v); }
Tensor f16s(const Shape& shape, const std::vector<float>& v) {
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = f32_to_f16(v[i]);
  return Tensor::from_f16_bits(shape, bits);
}
Tensor rand_f16(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(numel(shape)));
  for (float& x : v) x = dist(gen);
  return f16s(shape, v);
}
Tensor bools(const Shape& shape, std::vector<uint8_t> v) { return Tensor::from_bool(shape, v); }
Tensor str(std::string s) { return Tensor::from_strings({}, {std::move(s)}); }

namespace {

class HarnessContext final : public OpContext {
 public:
  HarnessContext(Op op, Precision precision, int threads,
                 std::map<std::string, std::vector<Tensor>> params,
                 std::map<std::string, Tensor>* states, std::map<std::string, DType> declared,
                 const std::string& opset)
      : op_(std::move(op)),
        precision_(precision),
        threads_(threads),
        params_(std::move(params)),
        states_(states) {
    declared_ = std::move(declared);
    function_.name = "harness";
    function_.opset = opset;
  }

  const Op& op() const override { return op_; }
  const Function& function() const override { return function_; }
  Precision precision() const override { return precision_; }
  int threads() const override { return threads_; }
  bool poison_new_tensors() const override { return true; }

  bool has(std::string_view name) const override {
    const std::string n(name);
    return params_.count(n) > 0 || states_->count(n) > 0 || streamed_.count(n) > 0;
  }

  Result<std::optional<StreamedWeight>> streamed_param(std::string_view name,
                                                       StreamRanks ranks) override {
    auto it = streamed_.find(std::string(name));
    if (it == streamed_.end()) return std::optional<StreamedWeight>();
    const auto rank = static_cast<int>(it->second.rank());
    if (rank < ranks.min || rank > ranks.max) {
      declined_.insert(it->first);  // the kernel reads it densely instead
      return std::optional<StreamedWeight>();
    }
    StreamedWeight w;
    w.shape = it->second.shape();
    w.dtype = it->second.dtype();
    w.decode = [t = it->second](int64_t first, int64_t count, void* dst) {
      const size_t esize = static_cast<size_t>(dtype_bits(t.dtype()) / 8);
      std::memcpy(dst, t.raw() + static_cast<size_t>(first) * esize, static_cast<size_t>(count) * esize);
    };
    return std::optional<StreamedWeight>(std::move(w));
  }

  void add_streamed(const std::string& name, Tensor dense) { streamed_[name] = std::move(dense); }

  Result<Tensor> get(std::string_view name) override {
    if (auto s = streamed_.find(std::string(name)); s != streamed_.end()) {
      if (declined_.count(s->first)) return s->second;
      return error(ErrorCode::kInternal,
                   fmt::format("parameter '{}' is offered as a stream; the kernel read it densely",
                               name));
    }
    auto it = params_.find(std::string(name));
    if (it == params_.end()) {
      if (states_->count(std::string(name))) {
        return error(ErrorCode::kInvalidProgram,
                     fmt::format("parameter '{}' is a state; it can only be read with read_state",
                                 name));
      }
      return error(ErrorCode::kMissingParameter, fmt::format("missing parameter '{}'", name));
    }
    if (it->second.size() != 1) {
      return error(ErrorCode::kInvalidProgram,
                   fmt::format("parameter '{}' has {} bindings where one is expected", name,
                               it->second.size()));
    }
    return it->second[0];
  }

  Result<std::vector<Tensor>> get_all(std::string_view name) override {
    auto it = params_.find(std::string(name));
    if (it == params_.end()) return error(ErrorCode::kMissingParameter, fmt::format("missing parameter '{}'", name));
    return it->second;
  }

  Result<Tensor> read_state(std::string_view name) override {
    auto it = states_->find(std::string(name));
    if (it == states_->end()) {
      return error(ErrorCode::kInvalidProgram, fmt::format("parameter '{}' is not a state", name));
    }
    return it->second;
  }

  Status write_state(std::string_view name, Tensor value) override {
    auto it = states_->find(std::string(name));
    if (it == states_->end()) {
      return error(ErrorCode::kInvalidProgram, fmt::format("parameter '{}' is not a state", name));
    }
    if (value.shape() != it->second.shape()) {
      return error(ErrorCode::kShape,
                   fmt::format("write_state: value of shape {} for state '{}' of shape {}",
                               shape_str(value.shape()), name, shape_str(it->second.shape())));
    }
    const DType declared = declared_.at(std::string(name));
    auto stored = to_storage(value, declared, precision_);
    if (!stored.is_ok()) return error(stored.status().code(), stored.status().message());
    it->second = std::move(stored).value();
    return Status::ok();
  }

 private:
  Op op_;
  Function function_;
  Precision precision_;
  int threads_;
  std::map<std::string, std::vector<Tensor>> params_;
  std::map<std::string, Tensor>* states_;
  std::map<std::string, DType> declared_;  // state dtypes as given, before widening
  std::map<std::string, Tensor> streamed_;
  std::set<std::string> declined_;  // streams refused for their rank
};

// How the executor would hold an input value: fp16 activations are fp32 in fp32 mode.
Result<Tensor> stored_input(const Tensor& t, Precision precision) {
  if (t.dtype() == DType::kF16 && precision == Precision::kFp32) return to_f32(t);
  return t;
}

}  // namespace

Result<HarnessRun> run_op_full(const std::string& type, const std::vector<HarnessInput>& inputs,
                               const std::vector<DType>& output_dtypes, Precision precision,
                               int threads, const std::string& opset) {
  const OpInfo* info = find_op(type);
  SG_CHECK(info != nullptr, ErrorCode::kUnsupported, "op '{}' is not in ops.def", type);

  Op op;
  op.type = type;
  std::map<std::string, std::vector<Tensor>> params;
  std::map<std::string, Tensor> states;
  std::map<std::string, DType> state_dtypes;
  std::map<std::string, Tensor> streamed;
  for (const HarnessInput& in : inputs) {
    SG_CHECK(!in.values.empty() || in.is_tuple, ErrorCode::kUsage, "input '{}' has no value",
             in.name);
    Argument arg;
    arg.is_tuple = in.is_tuple;
    if (in.is_streamed) {
      // A compile-time weight: stored as given (fp16 stays fp16 in both precisions).
      streamed[in.name] = in.values[0];
      Binding b;
      b.name = in.name;
      arg.bindings.push_back(std::move(b));
    } else if (in.is_state) {
      SG_ASSIGN_OR_RETURN(Tensor s, stored_input(in.values[0], precision));
      states[in.name] = std::move(s);
      state_dtypes[in.name] = in.values[0].dtype();
      Binding b;
      b.name = in.name;
      arg.bindings.push_back(std::move(b));
    } else {
      std::vector<Tensor> stored;
      for (const Tensor& t : in.values) {
        SG_ASSIGN_OR_RETURN(Tensor s, stored_input(t, precision));
        Binding b;
        Value v;
        v.type.dtype = t.dtype();
        v.type.shape = t.shape();
        v.tensor = s;
        b.literal = std::move(v);
        arg.bindings.push_back(std::move(b));
        stored.push_back(std::move(s));
      }
      params[in.name] = std::move(stored);
    }
    op.inputs.emplace_back(in.name, std::move(arg));
  }
  std::sort(op.inputs.begin(), op.inputs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < output_dtypes.size(); ++i) {
    NamedType out;
    out.name = "out" + std::to_string(i);
    out.type.dtype = output_dtypes[i];
    out.type.rank_known = false;
    op.outputs.push_back(std::move(out));
  }

  HarnessContext ctx(std::move(op), precision, threads, std::move(params), &states,
                     std::move(state_dtypes), opset);
  for (auto& [name, t] : streamed) ctx.add_streamed(name, std::move(t));
  SG_TRY(run_kernel(*info, ctx));
  SG_CHECK(ctx.outputs().size() == output_dtypes.size(), ErrorCode::kInternal,
           "op '{}' set {} outputs, {} declared", type, ctx.outputs().size(), output_dtypes.size());
  HarnessRun run;
  for (size_t i = 0; i < output_dtypes.size(); ++i) {
    SG_CHECK(ctx.outputs()[i].defined(), ErrorCode::kInternal, "op '{}' did not set output {}",
             type, i);
    SG_ASSIGN_OR_RETURN(Tensor stored, to_storage(ctx.outputs()[i], output_dtypes[i], precision));
    run.outputs.push_back(std::move(stored));
  }
  run.states = std::move(states);
  return run;
}

Status with_op_context(const std::string& type, const std::vector<HarnessInput>& inputs,
                       const std::function<Status(OpContext&)>& fn, const std::string& opset) {
  Op op;
  op.type = type;
  std::map<std::string, std::vector<Tensor>> params;
  for (const HarnessInput& in : inputs) {
    SG_CHECK(in.values.size() == 1 && !in.is_tuple && !in.is_state && !in.is_streamed,
             ErrorCode::kUsage, "input '{}' must be one plain tensor", in.name);
    Argument arg;
    Binding b;
    Value v;
    v.type.dtype = in.values[0].dtype();
    v.type.shape = in.values[0].shape();
    v.tensor = in.values[0];
    b.literal = std::move(v);
    arg.bindings.push_back(std::move(b));
    params[in.name] = in.values;
    op.inputs.emplace_back(in.name, std::move(arg));
  }
  std::sort(op.inputs.begin(), op.inputs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::map<std::string, Tensor> states;
  HarnessContext ctx(std::move(op), Precision::kFp16, 1, std::move(params), &states, {}, opset);
  return fn(ctx);
}

Result<std::vector<Tensor>> run_op(const std::string& type, const std::vector<HarnessInput>& inputs,
                                   const std::vector<DType>& output_dtypes, Precision precision,
                                   int threads) {
  SG_ASSIGN_OR_RETURN(HarnessRun run, run_op_full(type, inputs, output_dtypes, precision, threads));
  return std::move(run.outputs);
}

std::string compare_tensors(const Tensor& got, const Tensor& expected, double atol, double rtol) {
  if (!got.defined()) return "result is undefined";
  if (got.shape() != expected.shape()) {
    return fmt::format("shape {} differs from expected {}", shape_str(got.shape()),
                       shape_str(expected.shape()));
  }
  const bool exp_float = dtype_is_float(expected.dtype());
  const bool got_float = dtype_is_float(got.dtype());
  const bool exp_bool = expected.dtype() == DType::kBool;
  const bool got_bool = got.dtype() == DType::kBool;
  if (exp_float != got_float || exp_bool != got_bool) {
    return fmt::format("dtype {} does not match expected {}", dtype_name(got.dtype()),
                       dtype_name(expected.dtype()));
  }
  if (got.dtype() == DType::kString) {
    if (got.strings() != expected.strings()) return "string values differ";
    return "";
  }
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = element_as_double(got, i);
    const double e = element_as_double(expected, i);
    bool ok;
    if (!exp_float) {
      ok = g == e;
    } else if (std::isnan(e) || std::isnan(g)) {
      ok = std::isnan(e) && std::isnan(g);
    } else if (std::isinf(e) || std::isinf(g)) {
      ok = g == e;
    } else {
      ok = std::fabs(g - e) <= atol + rtol * std::fabs(e);
    }
    if (!ok) {
      return fmt::format("flat index {}: got {} expected {} (atol {}, rtol {})", i, g, e, atol,
                         rtol);
    }
  }
  return "";
}

}  // namespace sg::testing
