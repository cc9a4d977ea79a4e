// Executor: runs one function of a shard on the CPU, op by op, in program order.
//
// Memory policy: a value lives in the table from the op that produces it until its last use
// (use counts are computed once per run from the program). How each compile-time value
// (const, constexpr_*) is read is decided once when the run is prepared (weight_plan.h): a
// dense const is viewed in place; a compressed weight read once by a kernel that consumes
// weights block by block (linear, gather, transpose_y matmul) is streamed: the kernel gets a
// StreamedWeight and decodes one cache-sized block at a time, so not even one dense layer
// weight exists; any other weight (read by a conv, by several ops, in a loop body) is decoded
// whole when the first op that reads it asks for it, kept while it still has unconsumed uses
// and released after its last one. A shard is never expanded as a whole and no weight is
// decoded twice in a run (RunStats::weight_reads counts it). Function outputs and captured
// values are kept.
//
// Precision: each compute-op output goes through to_storage (fp16-declared values become
// fp16 after every op in fp16 mode, stay fp32 in fp32 mode). Compile-time values are stored
// in their declared dtype in both modes (an fp16 weight is the same number either way; a
// memory-mapped fp16 weight stays a zero-copy view).
#include "shardgate/executor.h"

#include "shardgate/declared_ranges.h"
#include "exec/exec_util.h"
#include "exec/shard_op_context.h"
#include "exec/weight_plan.h"
#include "ops/constexpr_stream.h"
#include "shardgate/half.h"
#include "shardgate/memory_budget.h"
#include "shardgate/ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace sg {
namespace {

constexpr int kMaxConstexprDepth = 64;

// Where a value comes from and how often ops read it; built once per run.
struct Plan {
  const Function* fn = nullptr;
  std::unordered_map<std::string, size_t> producer;  // value -> index in fn->block.ops
  std::unordered_map<std::string, int64_t> uses;     // reference bindings naming the value
  std::unordered_set<std::string> state_params;
  std::vector<const OpInfo*> infos;                  // per op
  // Per op: the names its nested blocks (cond, while_loop) read from the function's scope,
  // once per reference. They count as uses of the op, so they stay alive until it is done.
  std::vector<std::vector<std::string>> outer_refs;
  // How each constexpr value is read (weight_plan.h): decided once per function, stream
  // option and kept set, and shared by every run of the Executor that has them.
  std::shared_ptr<const std::map<std::string, WeightReadDecision>> weights;
};

// Names that `block` (and blocks nested in it) reads from enclosing scopes: everything it
// references that is neither one of its inputs nor made inside it.
void collect_outer_refs(const Block& block, std::unordered_set<std::string> local,
                        std::vector<std::string>& out) {
  for (const NamedType& in : block.inputs) local.insert(in.name);
  for (const Op& op : block.ops) {
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.is_reference() && !local.count(b.name)) out.push_back(b.name);
      }
    }
    for (const Block& nested : op.blocks) collect_outer_refs(nested, local, out);
    for (const NamedType& o : op.outputs) local.insert(o.name);
  }
  for (const std::string& o : block.outputs) {
    if (!local.count(o)) out.push_back(o);
  }
}

Plan make_plan(const Function& fn) {
  Plan p;
  p.fn = &fn;
  for (const NamedType& in : fn.inputs) {
    if (in.type.kind == ValueType::Kind::kState) p.state_params.insert(in.name);
  }
  const auto& ops = fn.block.ops;
  p.infos.resize(ops.size());
  p.outer_refs.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    p.infos[i] = find_op(op.type);
    for (const NamedType& out : op.outputs) p.producer.emplace(out.name, i);
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.is_reference()) ++p.uses[b.name];
      }
    }
    for (const Block& nested : op.blocks) collect_outer_refs(nested, {}, p.outer_refs[i]);
    for (const std::string& name : p.outer_refs[i]) ++p.uses[name];
  }
  return p;
}

// Weights decoded whole by earlier runs of one Executor (RunOptions::reuse_decoded_weights),
// by function, value and precision: the same bits a decode would produce again.
struct WeightCache {
  std::mutex mu;
  std::map<std::string, Tensor> values;
  uint64_t bytes = 0;

  static std::string key(const Function& fn, const std::string& value, Precision p) {
    return fn.name + '\n' + value + '\n' + precision_name(p);
  }
  std::optional<Tensor> find(const std::string& k) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = values.find(k);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  // Keeps `t` while everything kept stays within a quarter of the memory budget: what is
  // kept counts against the budget of every later allocation.
  void offer(const std::string& k, const Tensor& t) {
    if (t.is_view() || t.nbytes() == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    if (values.count(k) || bytes + t.nbytes() > memory_budget() / 4) return;
    values.emplace(k, t);
    bytes += t.nbytes();
  }
  uint64_t total() {
    std::lock_guard<std::mutex> lock(mu);
    return bytes;
  }
};

class Run;

class ExecContext final : public ShardOpContext {
 public:
  ExecContext(Run& run, const Op& op, int depth);

  const Function& function() const override;
  Precision precision() const override;
  int threads() const override;
  Result<Tensor> read_state(std::string_view name) override;
  Status write_state(std::string_view name, Tensor value) override;
  Result<std::vector<Tensor>> run_block(size_t index, const std::vector<Tensor>& inputs) override;

 private:
  Result<std::optional<StreamedWeight>> streamed_param(std::string_view name,
                                                       StreamRanks ranks) override;
  Result<Tensor> reference_value(const std::string& ref) override;
  Result<const NamedType*> state_param(std::string_view name);

  Run& run_;
  int depth_;
};

class Run {
 public:
  Run(const Shard& shard, const Plan& plan, const RunOptions& options, StateStore* states,
      WeightCache* cache = nullptr)
      : shard_(shard), plan_(plan), fn_(*plan.fn), options_(options), states_(states),
        cache_(options.reuse_decoded_weights && options.weight_overrides == nullptr ? cache
                                                                                   : nullptr) {
    remaining_ = plan.uses;
  }

  uint64_t cached_bytes() const { return cache_ == nullptr ? 0 : cache_->total(); }

  const Shard& shard() const { return shard_; }
  const Function& function() const { return fn_; }
  const RunOptions& options() const { return options_; }
  RunResult& result() { return result_; }

  bool is_state(const std::string& name) const { return plan_.state_params.count(name) > 0; }

  // Keeps `name` alive past its last use (function outputs, captures).
  void pin(const std::string& name) { pinned_.insert(name); }

  // The current value of `name`; compile-time values are decoded on first request.
  Result<Tensor> value(const std::string& name, int depth) {
    auto it = values_.find(name);
    if (it != values_.end()) return it->second;
    auto p = plan_.producer.find(name);
    if (p != plan_.producer.end()) {
      const Op& op = fn_.block.ops[p->second];
      if (op.is_compile_time() && overridden(name)) return take_override(op, name);
      if (op.is_constexpr() && cache_ != nullptr) {
        if (std::optional<Tensor> kept = cache_->find(WeightCache::key(fn_, name, options_.precision))) {
          WeightReadStat& stat = weight_stat(name);
          ++stat.reused;
          stat.elements = kept->numel();
          ++result_.stats.weights_reused;
          if (capture_.count(name)) result_.captured[name] = *kept;
          put(name, *kept);
          return std::move(*kept);
        }
      }
      if (op.is_compile_time()) {
        SG_TRY(run_compile_time(op, depth));
        auto done = values_.find(name);
        if (done != values_.end()) {
          if (op.is_constexpr() && cache_ != nullptr) {
            cache_->offer(WeightCache::key(fn_, name, options_.precision), done->second);
          }
          return done->second;
        }
      }
      return make_error(ErrorCode::kInternal,
                        "function '{}': value '{}' of op #{} '{}' is not available (not yet "
                        "computed or already released)",
                        fn_.name, name, op.index, op.type);
    }
    if (is_state(name)) {
      return make_error(ErrorCode::kInvalidProgram,
                        "function '{}': '{}' is a state; only read_state/write_state take it",
                        fn_.name, name);
    }
    return make_error(ErrorCode::kInvalidProgram, "function '{}': no value named '{}'", fn_.name,
                      name);
  }

  // A stream for the compressed weight `name` when the run's plan says to stream it (read
  // once, by a kernel that takes streams, in a format with a range decoder: weight_plan.h) and
  // the stream has the declared type and a rank the kernel takes; nullopt otherwise, and the
  // kernel reads the value, decoded once.
  Result<std::optional<StreamedWeight>> streamed(const std::string& name, int depth,
                                                 StreamRanks ranks) {
    const std::optional<StreamedWeight> none;
    auto d = plan_.weights->find(name);
    if (d == plan_.weights->end() || d->second.read != WeightRead::kStream) return none;
    if (values_.count(name) || overridden(name) || depth >= kMaxConstexprDepth) return none;
    const Op& op = fn_.block.ops[plan_.producer.at(name)];
    const ValueType& declared = op.outputs[0].type;
    const auto rank = static_cast<int>(declared.shape.size());
    if (!declared.rank_known || rank < ranks.min || rank > ranks.max) return none;
    ExecContext ctx(*this, op, depth);
    SG_ASSIGN_OR_RETURN(std::optional<StreamedWeight> s, d->second.format->stream(ctx));
    if (!s.has_value() || (s->dtype != DType::kF16 && s->dtype != DType::kF32)) return none;
    if (declared.dtype != s->dtype || !declared.accepts(s->shape)) return none;
    ++result_.stats.weights_streamed;
    WeightReadStat& stat = weight_stat(name);
    ++stat.streams;
    stat.elements = numel(s->shape);
    // Counts what the kernel decodes (from any of its threads): the test that no weight is
    // decoded twice reads it.
    auto counter = std::make_shared<std::atomic<int64_t>>(0);
    stream_counters_.emplace_back(name, counter);
    s->decode = [inner = std::move(s->decode), counter](int64_t first, int64_t count, void* dst) {
      counter->fetch_add(count, std::memory_order_relaxed);
      inner(first, count, dst);
    };
    // The last read of a weight that was never materialised: its producer's inputs are done
    // (not inside a loop body, which may read it again).
    auto left = remaining_.find(name);
    if (left != remaining_.end() && left->second <= 1 && block_depth_ == 0) consume_inputs(op);
    return s;
  }

  bool overridden(const std::string& name) const {
    return options_.weight_overrides != nullptr && options_.weight_overrides->count(name) > 0;
  }

  // RunOptions::weight_overrides: the given tensor stands in for compile-time value `name` of
  // `op`; the op itself (and the constexpr chain behind it) never runs.
  Result<Tensor> take_override(const Op& op, const std::string& name) {
    ExecContext ctx(*this, op, 0);
    const NamedType* out = nullptr;
    for (const NamedType& o : op.outputs) {
      if (o.name == name) out = &o;
    }
    SG_CHECK(out != nullptr, ErrorCode::kInternal, "'{}' is no output of op #{}", name, op.index);
    const Tensor& given = options_.weight_overrides->at(name);
    if (!out->type.is_tensor() || !out->type.accepts(given.shape())) {
      return ctx.error(ErrorCode::kShape,
                       fmt::format("override of {}: shape {}, but the program declares {}", name,
                                   shape_str(given.shape()), out->type.to_string()));
    }
    auto stored = to_storage(given, out->type.dtype, Precision::kFp16);
    if (!stored.is_ok()) {
      return ctx.error(stored.status().code(),
                       fmt::format("override of {}: {}", name, stored.status().message()));
    }
    ++result_.stats.weights_overridden;
    if (capture_.count(name)) result_.captured[name] = *stored;
    put(name, *stored);
    return std::move(stored).value();
  }

  // The stats entry of compile-time value `name`, made with the plan's decision.
  WeightReadStat& weight_stat(const std::string& name) {
    auto [it, fresh] = weight_stats_.try_emplace(name);
    if (fresh) {
      it->second.value = name;
      auto d = plan_.weights->find(name);
      if (d != plan_.weights->end()) {
        it->second.format = d->second.format != nullptr ? d->second.format->name : "";
        it->second.read = d->second.read;
        it->second.reason = d->second.reason;
      } else {
        it->second.reason = "read by no op of the function's block";
      }
    }
    return it->second;
  }

  // RunStats::weight_reads, with what the streams decoded.
  void finish_weight_stats() {
    for (const auto& [name, counter] : stream_counters_) {
      weight_stat(name).decoded_elements += counter->load(std::memory_order_relaxed);
    }
    for (auto& [name, stat] : weight_stats_) result_.stats.weight_reads.push_back(stat);
  }

  void put(const std::string& name, Tensor t) {
    if (!t.is_view() && t.nbytes() > 0) {
      auto& ref = storage_[t.raw()];
      if (ref.first++ == 0) {
        ref.second = t.nbytes();
        live_ += t.nbytes();
        peak_ = std::max(peak_, live_);
      }
    }
    values_[name] = std::move(t);
  }

  void release(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) return;
    const Tensor& t = it->second;
    if (!t.is_view() && t.nbytes() > 0) {
      auto s = storage_.find(t.raw());
      if (s != storage_.end() && --s->second.first == 0) {
        live_ -= s->second.second;
        storage_.erase(s);
      }
    }
    values_.erase(it);
  }

  // Drops a value nobody reads and nobody keeps (e.g. an unused function input).
  void release_if_unused(const std::string& name) {
    auto it = remaining_.find(name);
    if ((it == remaining_.end() || it->second <= 0) && !pinned_.count(name)) release(name);
  }

  // One use of `name` is done; the value goes when no use is left.
  void consume(const std::string& name) {
    auto it = remaining_.find(name);
    if (it == remaining_.end()) return;
    if (--it->second <= 0 && !pinned_.count(name)) release(name);
  }

  // `op` is an op of the function's own block (nested ops never consume: their reads are
  // counted as uses of the control-flow op that holds them).
  void consume_inputs(const Op& op) {
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.is_reference() && !is_state(b.name)) consume(b.name);
      }
    }
    if (op.blocks.empty()) return;
    const auto i = static_cast<size_t>(&op - fn_.block.ops.data());
    for (const std::string& name : plan_.outer_refs[i]) {
      if (!is_state(name)) consume(name);
    }
  }

  // Runs nested block `index` of control-flow op `op` (OpContext::run_block). Its inputs and
  // every value it makes are released when it returns; its outputs are returned.
  Result<std::vector<Tensor>> run_block(const Op& op, size_t index,
                                        const std::vector<Tensor>& inputs) {
    SG_CHECK(index < op.blocks.size(), ErrorCode::kInternal, "op '{}' has no block {}", op.type,
             index);
    const Block& block = op.blocks[index];
    SG_CHECK(inputs.size() == block.inputs.size(), ErrorCode::kShape,
             "function '{}': block {} of op '{}' takes {} inputs, {} given", fn_.name, index,
             op.type, block.inputs.size(), inputs.size());
    std::vector<std::string> made;
    ++block_depth_;
    auto done = [&] {
      for (const std::string& name : made) release(name);
      --block_depth_;
    };
    for (size_t k = 0; k < inputs.size(); ++k) {
      put(block.inputs[k].name, inputs[k]);
      made.push_back(block.inputs[k].name);
    }
    for (const Op& inner : block.ops) {
      Status st = run_nested(inner);
      for (const NamedType& out : inner.outputs) made.push_back(out.name);
      if (!st.is_ok()) {
        done();
        return st;
      }
    }
    std::vector<Tensor> outs;
    for (const std::string& name : block.outputs) {
      auto v = value(name, 0);
      if (!v.is_ok()) {
        done();
        return v.status();
      }
      outs.push_back(std::move(v).value());
    }
    done();
    return outs;
  }

  // Stores the kernel outputs of `op` under their names (checked against the declared types).
  Status store_outputs(ExecContext& ctx, const Op& op, bool compile_time) {
    if (ctx.outputs().size() > op.outputs.size()) {
      return ctx.error(ErrorCode::kInternal, fmt::format("kernel set {} outputs, the op declares {}",
                                                         ctx.outputs().size(), op.outputs.size()));
    }
    for (size_t i = 0; i < op.outputs.size(); ++i) {
      const NamedType& out = op.outputs[i];
      if (i >= ctx.outputs().size() || !ctx.outputs()[i].defined()) {
        return ctx.error(ErrorCode::kInternal, fmt::format("kernel set no output #{} ({})", i, out.name));
      }
      // A list value is one tensor stacking its elements (runtime/ops/list.cpp), stored in
      // the element dtype; its length is not part of the declared type's shape check.
      // A dict output (classify's class -> probability) is kept as the tensor of its values in
      // key order (runtime/ops/classify.cpp).
      const bool is_list = out.type.kind == ValueType::Kind::kList && out.type.members.size() == 1 &&
                           out.type.members[0].is_tensor();
      const bool is_dict = out.type.kind == ValueType::Kind::kDict && out.type.members.size() == 2 &&
                           out.type.members[1].is_tensor();
      if (!out.type.is_tensor() && !is_list && !is_dict) {
        return ctx.error(ErrorCode::kUnsupported,
                         fmt::format("output {} has type {}; only tensor, list and dict outputs are supported",
                                     out.name, out.type.to_string()));
      }
      // Compile-time values keep their declared dtype in both modes (see the file comment).
      const Precision p = compile_time ? Precision::kFp16 : options_.precision;
      const DType declared = is_list ? out.type.members[0].dtype : is_dict ? out.type.members[1].dtype : out.type.dtype;
      auto stored = to_storage(ctx.outputs()[i], declared, p);
      if (!stored.is_ok()) {
        return ctx.error(stored.status().code(),
                         fmt::format("output {}: {}", out.name, stored.status().message()));
      }
      if (!is_list && !is_dict && !out.type.accepts(stored->shape())) {
        return ctx.error(ErrorCode::kShape,
                         fmt::format("output {} has shape {}, but the program declares {}",
                                     out.name, shape_str(stored->shape()), out.type.to_string()));
      }
      if (!compile_time) {
        check_finite(op, out.name, *stored);
        if (options_.capture_all || capture_.count(out.name)) result_.captured[out.name] = *stored;
      } else if (capture_.count(out.name)) {
        result_.captured[out.name] = *stored;
      }
      put(out.name, std::move(stored).value());
    }
    return Status::ok();
  }

  Status run_compile_time(const Op& op, int depth) {
    ExecContext ctx(*this, op, depth);
    if (depth >= kMaxConstexprDepth) {
      return ctx.error(ErrorCode::kInvalidProgram,
                       fmt::format("constexpr chain deeper than {} ops (a cycle?)", kMaxConstexprDepth));
    }
    if (!running_.insert(&op).second) {
      return ctx.error(ErrorCode::kInvalidProgram, "compile-time op depends on its own output");
    }
    const OpInfo* info = plan_.infos[static_cast<size_t>(&op - fn_.block.ops.data())];
    Status st = run_op(ctx, op, info);
    running_.erase(&op);
    SG_TRY(st);
    consume_inputs(op);
    // Outputs nobody reads (and nobody keeps) go right away.
    for (const NamedType& out : op.outputs) release_if_unused(out.name);
    return Status::ok();
  }

  // Runs compute op `i`. Returns false in `stop` when the run must end early.
  Status run_compute(size_t i, bool& stop) {
    const Op& op = fn_.block.ops[i];
    ExecContext ctx(*this, op, 0);
    SG_TRY(run_op(ctx, op, plan_.infos[i]));
    consume_inputs(op);
    for (const NamedType& out : op.outputs) release_if_unused(out.name);
    stop = options_.stop_on_nonfinite && result_.first_nonfinite.has_value();
    return Status::ok();
  }

  // An op inside a nested block: run in order (compile-time ones too), outputs kept until the
  // block returns.
  Status run_nested(const Op& op) {
    ExecContext ctx(*this, op, 0);
    return run_op(ctx, op, find_op(op.type));
  }

  // What every op run shares: the kernel, the counters, the stored (checked, captured)
  // outputs and, for compute ops under RunOptions::profile, the time.
  Status run_op(ExecContext& ctx, const Op& op, const OpInfo* info) {
    if (info == nullptr) return ctx.error(ErrorCode::kUnsupported, "op type is not supported");
    const bool compile_time = op.is_compile_time();
    const auto t0 = std::chrono::steady_clock::now();
    SG_TRY(guarded_kernel(ctx, op, *info));
    ++(compile_time ? result_.stats.weights_decoded : result_.stats.ops_run);
    SG_TRY(store_outputs(ctx, op, compile_time));
    if (op.is_constexpr()) {  // a const is a view: nothing decoded, nothing to count
      for (const NamedType& o : op.outputs) {
        WeightReadStat& stat = weight_stat(o.name);
        ++stat.decodes;
        auto v = values_.find(o.name);
        if (v != values_.end()) {
          stat.elements = v->second.numel();
          stat.decoded_elements += v->second.numel();
        }
      }
    }
    if (!compile_time) record_time(op, t0);
    return Status::ok();
  }

  // The kernel of `op` (through run_kernel, which installs the run's threads), with what its
  // size causes turned into input errors naming the op and the output: a refusal of the memory
  // budget (memory_budget.h) and std::bad_alloc / std::length_error from a kernel's own buffers
  // never reach the caller as exceptions.
  Status guarded_kernel(ExecContext& ctx, const Op& op, const OpInfo& info) {
    const std::string out = op.outputs.empty() ? std::string("(none)") : op.outputs[0].name;
    try {
      Status st = run_kernel(info, ctx);
      if (!st.is_ok() && st.message().starts_with("memory budget:")) {
        return ctx.error(st.code(), st.message());  // as kern::new_tensor words it
      }
      return st;
    } catch (const std::bad_alloc&) {
      return ctx.error(ErrorCode::kIO, fmt::format("output {}: out of memory", out));
    } catch (const std::length_error&) {
      return ctx.error(ErrorCode::kShape, fmt::format("output {}: a buffer too large to allocate", out));
    }
  }

  // RunOptions::profile: adds the time since t0 to op's entry.
  void record_time(const Op& op, std::chrono::steady_clock::time_point t0) {
    if (!options_.profile) return;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto [it, fresh] = time_slot_.emplace(&op, result_.stats.op_times.size());
    if (fresh) {
      OpTime t;
      t.op_index = op.index;
      t.depth = block_depth_;
      t.op_type = op.type;
      t.output = op.outputs.empty() ? std::string() : op.outputs[0].name;
      result_.stats.op_times.push_back(std::move(t));
    }
    OpTime& t = result_.stats.op_times[it->second];
    ++t.calls;
    t.seconds += secs;
  }

  void set_capture(std::set<std::string> names) { capture_ = std::move(names); }
  uint64_t peak() const { return peak_; }
  StateStore* states() { return states_; }

 private:
  // Index of the first element whose exponent bits are all set (inf or NaN), or n. Blocks of
  // 256 are OR-reduced without an early exit, so the compiler vectorises the scan: the
  // element-at-a-time loop with a break was 6% of a 512-token MoE layer (every op's output is
  // checked).
  template <typename U>
  static int64_t first_all_ones_exponent(const U* d, int64_t n, U mask) {
    constexpr int64_t kBlock = 256;
    int64_t k = 0;
    for (; k + kBlock <= n; k += kBlock) {
      U any = 0;
      for (int64_t i = 0; i < kBlock; ++i) any |= static_cast<U>((d[k + i] & mask) == mask);
      if (any != 0) break;
    }
    for (; k < n; ++k) {
      if ((d[k] & mask) == mask) return k;
    }
    return n;
  }

  void check_finite(const Op& op, const std::string& name, const Tensor& t) {
    int64_t at = -1;
    double v = 0;
    if (t.dtype() == DType::kF16) {
      const uint16_t* d = t.data<uint16_t>();
      const int64_t k0 = first_all_ones_exponent<uint16_t>(d, t.numel(), 0x7c00u);
      if (k0 < t.numel()) {
        at = k0;
        v = f16_to_f32(d[k0]);
      }
    } else if (t.dtype() == DType::kF32) {
      const float* d = t.data<float>();
      const int64_t k0 = first_all_ones_exponent<uint32_t>(reinterpret_cast<const uint32_t*>(d), t.numel(), 0x7f800000u);
      if (k0 < t.numel()) {
        at = k0;
        v = d[k0];
      }
    }
    if (at < 0) return;
    NonFinite nf;
    nf.function = fn_.name;
    nf.op_index = op.index;
    nf.op_type = op.type;
    nf.output = name;
    nf.flat_index = at;
    nf.value = v;
    ++result_.nonfinite_ops;
    if (!result_.first_nonfinite) result_.first_nonfinite = nf;
    result_.last_nonfinite = nf;
  }

  const Shard& shard_;
  const Plan& plan_;
  const Function& fn_;
  const RunOptions& options_;
  StateStore* states_;
  std::unordered_map<std::string, Tensor> values_;
  std::unordered_map<std::string, int64_t> remaining_;
  std::unordered_set<std::string> pinned_;
  std::set<std::string> capture_;
  std::set<const Op*> running_;
  int block_depth_ = 0;  // > 0 while a nested block runs
  std::unordered_map<const Op*, size_t> time_slot_;  // op -> index in stats.op_times
  std::map<std::string, WeightReadStat> weight_stats_;
  WeightCache* cache_;  // null: every run decodes its own weights
  std::vector<std::pair<std::string, std::shared_ptr<std::atomic<int64_t>>>> stream_counters_;
  std::unordered_map<const std::byte*, std::pair<int64_t, size_t>> storage_;  // refs, bytes
  uint64_t live_ = 0;
  uint64_t peak_ = 0;
  RunResult result_;
};

ExecContext::ExecContext(Run& run, const Op& op, int depth)
    : ShardOpContext(run.shard(), op), run_(run), depth_(depth) {}

const Function& ExecContext::function() const { return run_.function(); }
Precision ExecContext::precision() const { return run_.options().precision; }
int ExecContext::threads() const { return std::max(1, run_.options().threads); }

Result<std::optional<StreamedWeight>> ExecContext::streamed_param(std::string_view name,
                                                                  StreamRanks ranks) {
  const Argument* arg = op().input(name);
  if (arg == nullptr || arg->bindings.size() != 1 || !arg->bindings[0].is_reference()) {
    return std::optional<StreamedWeight>();
  }
  auto r = run_.streamed(arg->bindings[0].name, depth_ + 1, ranks);
  if (!r.is_ok()) {
    return error(r.status().code(), fmt::format("parameter '{}': {}", name, r.status().message()));
  }
  return r;
}

Result<std::vector<Tensor>> ExecContext::run_block(size_t index, const std::vector<Tensor>& inputs) {
  auto r = run_.run_block(op(), index, inputs);
  if (!r.is_ok()) {
    // Errors of the block's own ops name those ops; say which control-flow op ran them.
    return Status(r.status().code(),
                  fmt::format("{}: block {}: {}", where(), index, r.status().message()));
  }
  return r;
}

Result<Tensor> ExecContext::reference_value(const std::string& ref) {
  return run_.value(ref, depth_ + 1);
}

Result<const NamedType*> ExecContext::state_param(std::string_view name) {
  const Argument* arg = op().input(name);
  if (arg == nullptr || arg->bindings.size() != 1 || !arg->bindings[0].is_reference()) {
    return error(ErrorCode::kInvalidProgram,
                 fmt::format("parameter '{}' must name one state", name));
  }
  const std::string& ref = arg->bindings[0].name;
  const NamedType* in = run_.function().input(ref);
  if (in == nullptr || in->type.kind != ValueType::Kind::kState || in->type.members.empty()) {
    return error(ErrorCode::kInvalidProgram,
                 fmt::format("parameter '{}' refers to '{}', which is not a state input", name, ref));
  }
  return in;
}

Result<Tensor> ExecContext::read_state(std::string_view name) {
  SG_ASSIGN_OR_RETURN(const NamedType* in, state_param(name));
  const ValueType& wrapped = in->type.members[0];
  StateStore* store = run_.states();
  auto it = store->values.find(in->name);
  if (it == store->values.end()) {
    // MLState semantics: a state starts as zeros.
    if (!wrapped.rank_known || wrapped.has_unknown_dims()) {
      return error(ErrorCode::kShape, fmt::format("state '{}' has type {}; a state needs a fully "
                                                  "known shape", in->name, in->type.to_string()));
    }
    auto z = Tensor::zeros(wrapped.dtype, wrapped.shape);
    if (!z.is_ok()) return error(z.status().code(), z.status().message());
    it = store->values.emplace(in->name, std::move(z).value()).first;
  }
  auto stored = to_storage(it->second, wrapped.dtype, run_.options().precision);
  if (!stored.is_ok()) return error(stored.status().code(), stored.status().message());
  return stored;
}

Status ExecContext::write_state(std::string_view name, Tensor value) {
  SG_ASSIGN_OR_RETURN(const NamedType* in, state_param(name));
  const ValueType& wrapped = in->type.members[0];
  if (!wrapped.accepts(value.shape())) {
    return error(ErrorCode::kShape, fmt::format("write_state: value of shape {} for state '{}' "
                                                "of type {}", shape_str(value.shape()), in->name,
                                                in->type.to_string()));
  }
  auto stored = to_storage(value, wrapped.dtype, run_.options().precision);
  if (!stored.is_ok()) return error(stored.status().code(), stored.status().message());
  run_.states()->values[in->name] = std::move(stored).value();
  return Status::ok();
}

const Function* find_function(const Program& program, std::string_view name) {
  return program.function(name);
}

std::string function_list(const Program& program) {
  std::string s;
  for (const Function& f : program.functions) s += (s.empty() ? "" : ", ") + ("'" + f.name + "'");
  return s.empty() ? "none" : s;
}

// Converts one provided function input to its declared type.
Result<Tensor> convert_input(const NamedType& in, const Tensor& given, Precision precision) {
  const ValueType& t = in.type;
  SG_CHECK(t.is_tensor(), ErrorCode::kUnsupported, "input '{}' has type {}, not a tensor", in.name,
           t.to_string());
  const bool want_float = dtype_is_float(t.dtype);
  const bool given_float = dtype_is_float(given.dtype());
  SG_CHECK(given.dtype() != DType::kString && (want_float || !given_float), ErrorCode::kShape,
           "input '{}': a {} tensor cannot be given for {}", in.name, dtype_name(given.dtype()),
           t.to_string());
  SG_CHECK(t.accepts(given.shape()), ErrorCode::kShape,
           "input '{}' has shape {}, but the function declares {}", in.name,
           shape_str(given.shape()), t.to_string());
  auto r = to_storage(given, t.dtype, precision);
  if (!r.is_ok()) return Status(r.status()).with_context("input '" + in.name + "'");
  return r;
}

}  // namespace

// The weight-read plans an Executor has made (Plan::weights), by function, stream option and
// kept values: a sequence of calls prepares its function once.
struct Executor::WeightPlans {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const std::map<std::string, WeightReadDecision>>> by_key;

  std::shared_ptr<const std::map<std::string, WeightReadDecision>> get(const Function& fn,
                                                                       const WeightReadOptions& o) {
    std::string key = fn.name + (o.stream ? "\n1" : "\n0");
    for (const std::string& k : o.kept) key += "\n" + k;  // a std::set: sorted
    std::lock_guard<std::mutex> lock(mu);
    auto& slot = by_key[key];
    if (slot == nullptr) {
      slot = std::make_shared<const std::map<std::string, WeightReadDecision>>(plan_weight_reads(fn, o));
    }
    return slot;
  }
};

struct Executor::DecodedWeights : WeightCache {};

Executor::Executor(std::shared_ptr<const Shard> shard)
    : shard_(std::move(shard)),
      plans_(std::make_shared<WeightPlans>()),
      decoded_(std::make_shared<DecodedWeights>()) {}

const char* weight_read_name(WeightRead r) {
  switch (r) {
    case WeightRead::kView: return "view";
    case WeightRead::kDecodeOnce: return "decode-once";
    case WeightRead::kStream: return "stream";
  }
  return "?";
}

namespace {

// Every op of `block` (and of blocks nested in it) is known to the interpreter and reads only
// names defined before it: function inputs, block inputs, earlier outputs of this block or of
// an enclosing one. `block_path` is "" for the function's block, else e.g. " (in block 1 of
// statement #4)".
Status validate_block(const Shard& shard, const Function& fn, const Block& block,
                      std::unordered_set<std::string> defined, const std::string& block_path) {
  for (const NamedType& in : block.inputs) defined.insert(in.name);
  for (const Op& op : block.ops) {
    // Formatted only for an error: validation runs before every run.
    auto where = [&] {
      return (op.line > 0 ? fmt::format("statement #{} (model.mil:{})", op.index, op.line)
                          : fmt::format("statement #{}", op.index)) +
             block_path;
    };
    if (find_op(op.type) == nullptr) {
      return make_error(ErrorCode::kUnsupported,
                        "{}: function '{}', {}: op '{}' is not supported by the CPU interpreter",
                        shard.path(), fn.name, where(), op.type);
    }
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (b.is_reference() && !defined.count(b.name)) {
          return make_error(ErrorCode::kInvalidProgram,
                            "{}: function '{}', {}: op '{}' parameter '{}' refers to '{}', which "
                            "is not defined before it",
                            shard.path(), fn.name, where(), op.type, key, b.name);
        }
      }
    }
    for (size_t i = 0; i < op.blocks.size(); ++i) {
      SG_TRY(validate_block(shard, fn, op.blocks[i], defined,
                            fmt::format(" (in block {} of statement #{}{})", i, op.index, block_path)));
    }
    for (const NamedType& out : op.outputs) defined.insert(out.name);
  }
  for (const std::string& out : block.outputs) {
    SG_CHECK(defined.count(out), ErrorCode::kInvalidProgram,
             "{}: function '{}'{}: block returns '{}', "
             "which is never defined", shard.path(), fn.name, block_path, out);
  }
  return Status::ok();
}

// Every value name a run can capture: tensor inputs and op outputs, nested blocks included.
void capturable_names(const Block& block, std::vector<std::string>& out) {
  for (const Op& op : block.ops) {
    for (const NamedType& o : op.outputs) out.push_back(o.name);
    for (const Block& nested : op.blocks) capturable_names(nested, out);
  }
}

}  // namespace

Status Executor::validate(std::string_view function) const {
  const Program& program = shard_->program();
  const Function* fn = find_function(program, function);
  SG_CHECK(fn != nullptr, ErrorCode::kUsage, "{}: no function '{}' (functions: {})",
           shard_->path(), function, function_list(program));
  std::unordered_set<std::string> defined;
  for (const NamedType& in : fn->inputs) defined.insert(in.name);
  return validate_block(*shard_, *fn, fn->block, std::move(defined), "");
}

namespace {

// The compile-time op that computes `name`, or why `name` is not a weight.
Result<const Op*> compile_time_producer(const Plan& plan, const Function& fn, std::string_view name) {
  auto p = plan.producer.find(std::string(name));
  if (p == plan.producer.end()) {
    if (fn.input(name) != nullptr) {
      return make_error(ErrorCode::kInvalidProgram,
                        "function '{}': '{}' is a function input, not a compile-time value",
                        fn.name, name);
    }
    return make_error(ErrorCode::kInvalidProgram, "function '{}': no value named '{}'", fn.name, name);
  }
  const Op& op = fn.block.ops[p->second];
  SG_CHECK(op.is_compile_time(), ErrorCode::kInvalidProgram,
           "function '{}': '{}' is produced by op #{} '{}', which is not a const or constexpr op",
           fn.name, name, op.index, op.type);
  return &op;
}

// One compile-time value of a function, read by the same Run a shard run uses (the kernels,
// op contexts, fp16 storage, chain-depth and cycle guards, the weight-format table), with
// nothing else run: materialize_weight, stream_weight and weight_codes. The value is decoded
// whole (the plan streams nothing: there is no kernel to stream into).
class WeightReader {
 public:
  WeightReader(const Shard& shard, const Function& fn, std::string_view name)
      : plan_(make_plan(fn)), name_(name) {
    WeightReadOptions reads;
    reads.stream = false;
    reads.kept = {name_};
    plan_.weights = std::make_shared<const std::map<std::string, WeightReadDecision>>(
        plan_weight_reads(fn, reads));
    run_ = std::make_unique<Run>(shard, plan_, options_, &states_);
    run_->pin(name_);
  }

  Result<Tensor> value() {
    SG_TRY(producer().status());
    return run_->value(name_, 0);
  }

  // The context of the producing op, for the table's range decoder and code reader.
  template <typename F>
  auto with_producer(F&& f) -> decltype(f(std::declval<OpContext&>())) {
    SG_ASSIGN_OR_RETURN(const Op* op, producer());
    ExecContext ctx(*run_, *op, 1);
    return f(ctx);
  }

 private:
  Result<const Op*> producer() const { return compile_time_producer(plan_, *plan_.fn, name_); }

  Plan plan_;
  std::string name_;
  RunOptions options_;
  StateStore states_;
  std::unique_ptr<Run> run_;
};

}  // namespace

Result<Tensor> materialize_weight(const Shard& shard, const Function& function,
                                  std::string_view value_name) {
  return WeightReader(shard, function, value_name).value();
}

Result<std::optional<StreamedWeight>> stream_weight(const Shard& shard, const Function& function,
                                                    std::string_view value_name) {
  return WeightReader(shard, function, value_name).with_producer(stream_constexpr);
}

Result<std::optional<WeightCodes>> weight_codes(const Shard& shard, const Function& function,
                                                std::string_view value_name) {
  return WeightReader(shard, function, value_name).with_producer(codes_constexpr);
}

Result<RunResult> Executor::run(std::string_view function,
                                const std::map<std::string, Tensor>& inputs,
                                const RunOptions& options, StateStore* states) const {
  const auto start = std::chrono::steady_clock::now();
  SG_TRY(validate(function));
  const Function& fn = *shard_->program().function(function);
  Plan plan = make_plan(fn);
  StateStore local_states;

  // Every name a run may capture: tensor inputs and op outputs (states live in the StateStore).
  std::vector<std::string> known;
  for (const NamedType& in : fn.inputs) {
    if (in.type.kind != ValueType::Kind::kState) known.push_back(in.name);
  }
  capturable_names(fn.block, known);
  std::set<std::string> capture;
  for (const std::string& name : options.capture) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return make_error(ErrorCode::kUsage, "{}: function '{}' has no value '{}' to capture{}",
                        shard_->path(), fn.name, name, exec::near_matches(name, known));
    }
    capture.insert(name);
  }
  WeightReadOptions reads;
  reads.stream = options.stream_weights;
  reads.kept = capture;
  reads.kept.insert(fn.block.outputs.begin(), fn.block.outputs.end());
  plan.weights = plans_->get(fn, reads);
  Run run(*shard_, plan, options, states ? states : &local_states, decoded_.get());
  run.set_capture(capture);
  for (const std::string& out : fn.block.outputs) run.pin(out);
  if (options.weight_overrides != nullptr) {
    for (const auto& [name, t] : *options.weight_overrides) {
      auto p = plan.producer.find(name);
      SG_CHECK(p != plan.producer.end() && fn.block.ops[p->second].is_compile_time(),
               ErrorCode::kUsage, "{}: function '{}' has no compile-time value '{}' to override",
               shard_->path(), fn.name, name);
    }
  }

  // Inputs: each declared non-state input must be given, nothing else may be.
  for (const auto& [name, t] : inputs) {
    const NamedType* in = fn.input(name);
    if (in == nullptr || in->type.kind == ValueType::Kind::kState) {
      std::vector<std::string> names;
      for (const NamedType& i : fn.inputs) {
        if (i.type.kind != ValueType::Kind::kState) names.push_back(i.name);
      }
      return make_error(ErrorCode::kUsage, "{}: function '{}' has no input '{}'{}", shard_->path(),
                        fn.name, name, exec::near_matches(name, names));
    }
  }
  for (const NamedType& in : fn.inputs) {
    if (in.type.kind == ValueType::Kind::kState) continue;
    auto it = inputs.find(in.name);
    SG_CHECK(it != inputs.end(), ErrorCode::kUsage, "{}: function '{}': missing input '{}' ({})",
             shard_->path(), fn.name, in.name, in.type.to_string());
    if (Status r = check_declared_ranges(fn, in.name, it->second.shape()); !r.is_ok()) {
      return r.with_context(shard_->path() + ": function '" + fn.name + "'");
    }
    auto converted = convert_input(in, it->second, options.precision);
    if (!converted.is_ok()) {
      return Status(converted.status()).with_context(shard_->path() + ": function '" + fn.name + "'");
    }
    if (capture.count(in.name)) run.result().captured[in.name] = *converted;
    run.put(in.name, std::move(converted).value());
    run.release_if_unused(in.name);
  }

  const auto& ops = fn.block.ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].is_compile_time()) continue;  // decoded when a consumer asks
    bool stop = false;
    SG_TRY(run.run_compute(i, stop));
    if (stop) break;
  }

  RunResult& result = run.result();
  const bool stopped = options.stop_on_nonfinite && result.first_nonfinite.has_value();
  if (!stopped) {
    for (const std::string& out : fn.block.outputs) {
      SG_ASSIGN_OR_RETURN(Tensor t, run.value(out, 0));
      result.outputs[out] = std::move(t);
    }
    // Captured weights nobody consumed are decoded now.
    for (const std::string& name : capture) {
      if (result.captured.count(name)) continue;
      auto t = run.value(name, 0);
      if (t.is_ok()) result.captured[name] = std::move(t).value();
    }
  }
  run.finish_weight_stats();
  result.stats.reused_weight_bytes = run.cached_bytes();
  result.stats.peak_value_bytes = run.peak();
  result.stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::move(result);
}

}  // namespace sg
