// materialize_weight: decodes one compile-time value of a function without running the
// program, following iOS18 constexpr chains (a LUT produced by a blockwise_shift_scale, a
// mask produced by lut_to_sparse). Used by tests, contract checks and the weight listing.
// stream_weight: the same value as the executor streams it to a weight-consuming kernel.
// weight_codes: the integer codes behind it, for the weight diagnostics.
#include "shardgate/executor.h"
#include "shardgate/ops.h"

#include "core/subbyte.h"
#include "exec/shard_op_context.h"
#include "ops/constexpr_stream.h"

#include <map>
#include <set>
#include <string>

namespace sg {
namespace {

constexpr int kMaxChainDepth = 64;

class Materializer;

// The OpContext a compile-time kernel sees here: parameters come from literals (resolved
// through the shard) or from other compile-time values, materialised on demand.
class MaterializeContext final : public ShardOpContext {
 public:
  MaterializeContext(Materializer& m, const Function& fn, const Op& op, int depth);

  const Function& function() const override { return fn_; }
  Precision precision() const override { return Precision::kFp16; }
  Result<Tensor> read_state(std::string_view name) override {
    return error(ErrorCode::kInvalidProgram,
                 fmt::format("state parameter '{}' in a compile-time op", name));
  }
  Status write_state(std::string_view name, Tensor) override {
    return error(ErrorCode::kInvalidProgram,
                 fmt::format("state parameter '{}' in a compile-time op", name));
  }

 private:
  Result<Tensor> reference_value(const std::string& ref) override;

  Materializer& m_;
  const Function& fn_;
  int depth_;
};

class Materializer {
 public:
  Materializer(const Shard& shard, const Function& fn) : shard_(shard), fn_(fn) {
    for (const Op& op : fn.block.ops) {
      for (size_t i = 0; i < op.outputs.size(); ++i) producers_.emplace(op.outputs[i].name, &op);
    }
  }

  const Shard& shard() const { return shard_; }

  Result<std::optional<StreamedWeight>> stream(std::string_view name) {
    SG_ASSIGN_OR_RETURN(const Op* op, producer(name));
    MaterializeContext ctx(*this, fn_, *op, 1);
    return stream_constexpr(ctx);
  }

  Result<std::optional<WeightCodes>> codes(std::string_view name) {
    SG_ASSIGN_OR_RETURN(const Op* op, producer(name));
    MaterializeContext ctx(*this, fn_, *op, 1);
    return codes_constexpr(ctx);
  }

  Result<Tensor> value(std::string_view name, int depth) {
    const std::string key(name);
    auto done = values_.find(key);
    if (done != values_.end()) return done->second;
    SG_ASSIGN_OR_RETURN(const Op* producer_op, producer(name));
    const Op& op = *producer_op;
    SG_CHECK(depth < kMaxChainDepth, ErrorCode::kInvalidProgram,
             "function '{}': constexpr chain for '{}' is deeper than {} ops (a cycle?)",
             fn_.name, name, kMaxChainDepth);
    SG_CHECK(running_.insert(&op).second, ErrorCode::kInvalidProgram,
             "function '{}': constexpr op #{} '{}' depends on its own output", fn_.name, op.index,
             op.type);
    Status st = run(op, depth);
    running_.erase(&op);
    SG_TRY(st);
    return values_.at(key);
  }

 private:
  // The compile-time op that computes `name`.
  Result<const Op*> producer(std::string_view name) const {
    auto it = producers_.find(name);
    if (it == producers_.end()) {
      if (fn_.input(name) != nullptr) {
        return make_error(ErrorCode::kInvalidProgram,
                          "function '{}': '{}' is a function input, not a compile-time value",
                          fn_.name, name);
      }
      return make_error(ErrorCode::kInvalidProgram, "function '{}': no value named '{}'",
                        fn_.name, name);
    }
    const Op& op = *it->second;
    SG_CHECK(op.is_compile_time(), ErrorCode::kInvalidProgram,
             "function '{}': '{}' is produced by op #{} '{}', which is not a const or constexpr "
             "op",
             fn_.name, name, op.index, op.type);
    return &op;
  }

  Status run(const Op& op, int depth) {
    const OpInfo* info = find_op(op.type);
    MaterializeContext ctx(*this, fn_, op, depth);
    if (info == nullptr || info->kernel == nullptr) {
      return ctx.error(ErrorCode::kUnsupported, "unknown compile-time op");
    }
    SG_TRY(run_kernel(*info, ctx));
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const NamedType& out = op.outputs[i];
      if (i >= ctx.outputs().size() || !ctx.outputs()[i].defined()) {
        return ctx.error(ErrorCode::kInternal, fmt::format("kernel set no output #{}", i));
      }
      auto stored = to_storage(ctx.outputs()[i], out.type.dtype, Precision::kFp16);
      if (!stored.is_ok()) return ctx.error(stored.status().code(), stored.status().message());
      const ValueType& t = out.type;
      if (t.is_tensor() && !t.accepts(stored->shape())) {
        return ctx.error(ErrorCode::kShape,
                         fmt::format("decoded {} has shape {}, but the program declares {}",
                                     out.name, shape_str(stored->shape()), t.to_string()));
      }
      values_[out.name] = std::move(stored).value();
    }
    return Status::ok();
  }

  const Shard& shard_;
  const Function& fn_;
  std::map<std::string, const Op*, std::less<>> producers_;
  std::map<std::string, Tensor, std::less<>> values_;
  std::set<const Op*> running_;
};

Result<Tensor> MaterializeContext::reference_value(const std::string& ref) {
  return m_.value(ref, depth_ + 1);
}

}  // namespace

MaterializeContext::MaterializeContext(Materializer& m, const Function& fn, const Op& op, int depth)
    : ShardOpContext(m.shard(), op), m_(m), fn_(fn), depth_(depth) {}

Result<Tensor> materialize_weight(const Shard& shard, const Function& function,
                                  std::string_view value_name) {
  Materializer m(shard, function);
  return m.value(value_name, 0);
}

Result<std::optional<StreamedWeight>> stream_weight(const Shard& shard, const Function& function,
                                                    std::string_view value_name) {
  Materializer m(shard, function);
  return m.stream(value_name);
}

Result<std::optional<WeightCodes>> weight_codes(const Shard& shard, const Function& function,
                                                std::string_view value_name) {
  Materializer m(shard, function);
  return m.codes(value_name);
}

int64_t WeightCodes::group_count() const {
  int64_t n = 1;
  for (int64_t g : group_shape) n *= g;
  return n;
}

int64_t WeightCodes::code_at(int64_t e) const {
  if (bits == 8) {
    const auto byte = static_cast<uint8_t>(codes.raw()[e]);
    return is_signed ? static_cast<int8_t>(byte) : byte;
  }
  const uint32_t v = subbyte::get(codes.raw(), bits, e);
  if (is_signed && (v >> (bits - 1)) != 0) return static_cast<int64_t>(v) - (int64_t{1} << bits);
  return v;
}

}  // namespace sg
