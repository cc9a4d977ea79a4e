// Running a chain: one shard at a time, chain tensors released after their last consumer,
// state buffers carried across steps by chain state key, and the teacher-forced variant that
// feeds every layer the golden of the layer before.
#include "shardgate/chain.h"
#include "shardgate/ops.h"

#include "golden/shard_prefetch.h"
#include "shardgate/golden.h"
#include "shardgate/half.h"
#include "shardgate/npy.h"
#include "shardgate/shard.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <set>

namespace sg {
namespace {

std::string step_place(const ChainManifest& chain, size_t i) {
  return fmt::format("{}: steps[{}] '{}'", chain.path, i, chain.steps[i].id);
}

// The golden of layer `layer` (the residual stream after it): a hidden checkpoint of that layer,
// else a hidden entry of the dump with that layer.
std::optional<std::string> golden_of_layer(const ChainManifest& chain, const GoldenSource& goldens,
                                           int64_t layer) {
  for (const ChainCheckpoint& c : chain.checkpoints) {
    if (c.kind == "hidden" && c.layer == layer) return c.golden;
  }
  for (const GoldenEntry& e : goldens.entries()) {
    if (e.kind == "hidden" && e.layer == layer) return e.name;
  }
  return std::nullopt;
}

uint64_t bytes_of(const std::map<std::string, Tensor>& values) {
  std::set<const std::byte*> seen;
  uint64_t total = 0;
  for (const auto& [name, t] : values) {
    if (t.is_view() || !seen.insert(t.raw()).second) continue;
    total += t.nbytes();
  }
  return total;
}

Result<Tensor> zeros_state(const ChainStateInit& init) { return Tensor::zeros(init.dtype, init.shape); }

// SG_PREFETCH=0 turns prefetch off for every chain run of the process (benchmarks compare).
bool prefetch_allowed_by_environment() {
  const char* v = std::getenv("SG_PREFETCH");
  return v == nullptr || std::string_view(v) != "0";
}

// The index of the shard step after step i that this run will execute (a slice skips steps);
// the number of steps when there is none.
size_t next_shard_step(const ChainManifest& chain, size_t i,
                       const std::optional<std::set<std::string>>& only_steps) {
  for (size_t j = i + 1; j < chain.steps.size(); ++j) {
    const ChainStep& s = chain.steps[j];
    if (s.is_combine || (only_steps && !only_steps->count(s.id))) continue;
    return j;
  }
  return chain.steps.size();
}

// How many shard steps ahead of the running one the helper opens. Two: a 3 ms attention step
// leaves too little time to read ahead, map and fault in the 151 MB MoE shard after it, so
// that shard is asked for while the MoE before the attention still computes (on the loaded
// 2-core VM, depth 1 and 2 measured alike warm: bench/README.md). At most this many shards
// wait, opened and mapped, besides the running one.
constexpr size_t kPrefetchDepth = 2;

}  // namespace

Result<Tensor> combine_sum(const std::vector<Tensor>& inputs, Precision precision) {
  SG_CHECK(!inputs.empty(), ErrorCode::kShape, "sum: no inputs");
  bool all_f16 = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    SG_CHECK(dtype_is_float(t.dtype()), ErrorCode::kShape,
             "sum: input {} has dtype {} (sum takes float tensors)", i, dtype_name(t.dtype()));
    SG_CHECK(t.shape() == inputs[0].shape(), ErrorCode::kShape,
             "sum: input {} has shape {}, input 0 has {} (no broadcasting)", i,
             shape_str(t.shape()), shape_str(inputs[0].shape()));
    all_f16 = all_f16 && t.dtype() == DType::kF16;
  }
  const bool round16 = all_f16 && stores_fp16(precision);
  SG_ASSIGN_OR_RETURN(Tensor first, to_f32(inputs[0]));
  SG_ASSIGN_OR_RETURN(Tensor acc, Tensor::zeros(DType::kF32, inputs[0].shape()));
  float* a = acc.mutable_data<float>();
  const size_t n = static_cast<size_t>(acc.numel());
  if (n > 0) std::memcpy(a, first.data<float>(), n * sizeof(float));
  for (size_t i = 1; i < inputs.size(); ++i) {
    SG_ASSIGN_OR_RETURN(Tensor x, to_f32(inputs[i]));
    const float* b = x.data<float>();
    for (size_t k = 0; k < n; ++k) a[k] += b[k];
    // Each add of a chain of fp16 MIL add ops stores its result in fp16.
    if (round16) round_to_f16_span(a, n);
    if (round16 && precision == Precision::kFp16Ftz) {
      for (size_t k = 0; k < n; ++k) {
        if (std::fabs(a[k]) < 0x1p-14f) a[k] = std::copysign(0.0f, a[k]);
      }
    }
  }
  if (round16) {
    // Intermediate adds round like fp16 adds; the stored sum also flushes in fp16-ftz mode.
    SG_ASSIGN_OR_RETURN(Tensor sum16, cast_tensor(acc, DType::kF16));
    return to_storage(sum16, DType::kF16, precision);
  }
  return acc;
}

Result<Tensor> combine_concat(const std::vector<Tensor>& inputs, int64_t axis) {
  SG_CHECK(!inputs.empty(), ErrorCode::kShape, "concat: no inputs");
  const int64_t rank = inputs[0].rank();
  SG_CHECK(rank > 0, ErrorCode::kShape, "concat: input 0 is a scalar");
  SG_CHECK(axis >= -rank && axis < rank, ErrorCode::kShape,
           "concat: axis {} is out of range for rank {}", axis, rank);
  const int64_t ax = axis < 0 ? axis + rank : axis;
  DType dtype = inputs[0].dtype();
  bool mixed_float = false;
  Shape out_shape = inputs[0].shape();
  out_shape[static_cast<size_t>(ax)] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    SG_CHECK(t.rank() == rank, ErrorCode::kShape, "concat: input {} has rank {}, input 0 has {}", i,
             t.rank(), rank);
    for (int64_t d = 0; d < rank; ++d) {
      if (d == ax) continue;
      SG_CHECK(t.dim(d) == inputs[0].dim(d), ErrorCode::kShape,
               "concat: input {} has shape {}, input 0 has {} (only axis {} may differ)", i,
               shape_str(t.shape()), shape_str(inputs[0].shape()), ax);
    }
    SG_CHECK(t.dtype() != DType::kString && !dtype_is_subbyte(t.dtype()), ErrorCode::kUnsupported,
             "concat: input {} has dtype {}", i, dtype_name(t.dtype()));
    if (t.dtype() != dtype) {
      SG_CHECK(dtype_is_float(t.dtype()) && dtype_is_float(dtype), ErrorCode::kShape,
               "concat: input {} has dtype {}, input 0 has {}", i, dtype_name(t.dtype()),
               dtype_name(inputs[0].dtype()));
      mixed_float = true;
    }
    out_shape[static_cast<size_t>(ax)] += t.dim(ax);
  }
  std::vector<Tensor> parts;
  parts.reserve(inputs.size());
  if (mixed_float) {
    dtype = DType::kF32;
    for (const Tensor& t : inputs) {
      SG_ASSIGN_OR_RETURN(Tensor f, to_f32(t));
      parts.push_back(std::move(f));
    }
  } else {
    parts = inputs;
  }
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(dtype, out_shape));
  const size_t elem = static_cast<size_t>(dtype_bits(dtype) / 8);
  int64_t outer = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= out_shape[static_cast<size_t>(d)];
  int64_t inner = 1;
  for (int64_t d = ax + 1; d < rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
  std::byte* dst = out.mutable_raw();
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : parts) {
      const size_t chunk = static_cast<size_t>(t.dim(ax) * inner) * elem;
      if (chunk == 0) continue;
      std::memcpy(dst, t.raw() + static_cast<size_t>(o) * chunk, chunk);
      dst += chunk;
    }
  }
  return out;
}

Result<std::vector<std::pair<std::string, std::string>>> teacher_forced_inputs(
    const ChainManifest& chain, const ChainStep& step, const GoldenSource& goldens) {
  std::vector<std::pair<std::string, std::string>> out;
  if (step.is_combine) return out;
  for (const auto& [input, tensor] : step.inputs) {
    std::optional<std::string> golden;
    if (step.residual_input && *step.residual_input == input) {
      golden = golden_of_layer(chain, goldens, *step.layer - 1);
      SG_CHECK(golden.has_value(), ErrorCode::kUsage,
               "{}: step '{}' (layer {}): teacher-forced mode needs the golden of layer {} for "
               "its residual input '{}', but neither a hidden checkpoint nor the golden dump "
               "has one",
               chain.path, step.id, *step.layer, *step.layer - 1, input);
    } else if (const ChainCheckpoint* cp = chain.find_checkpoint(tensor);
               cp && cp->kind == "hidden" && cp->layer && (!step.layer || *cp->layer < *step.layer)) {
      golden = cp->golden;
    }
    if (!golden) continue;
    SG_CHECK(goldens.find(*golden) != nullptr, ErrorCode::kUsage,
             "{}: step '{}': teacher-forced input '{}' needs golden '{}', which {} does not hold",
             chain.path, step.id, input, *golden, goldens.path());
    out.emplace_back(input, *golden);
  }
  return out;
}

Result<ChainRunResult> run_chain(const ChainManifest& chain, const ChainRunOptions& options) {
  using Clock = std::chrono::steady_clock;
  ChainRunResult result;
  SG_CHECK(options.mode != ChainMode::kTeacherForced || options.goldens != nullptr,
           ErrorCode::kUsage, "{}: teacher-forced mode needs a golden dump", chain.path);

  // What to keep past the last consumer, and when every other tensor may go.
  std::set<std::string> keep;
  for (const ChainCheckpoint& c : chain.checkpoints) keep.insert(c.tensor);
  for (const std::string& k : options.keep) {
    bool known = chain.producer(k) != nullptr;
    for (const ChainInput& in : chain.inputs) known = known || in.tensor == k;
    SG_CHECK(known, ErrorCode::kUsage, "{}: no chain tensor named '{}'", chain.path, k);
    keep.insert(k);
  }
  std::map<std::string, size_t> last_use;
  for (size_t i = 0; i < chain.steps.size(); ++i) {
    for (const std::string& t : chain.steps[i].consumed()) last_use[t] = i;
  }

  std::map<std::string, Tensor> live;  // chain tensors waiting for a consumer
  auto publish = [&](const std::string& name, Tensor t) {
    if (keep.count(name)) result.tensors[name] = t;
    if (last_use.count(name)) live[name] = std::move(t);
  };
  auto track_peak = [&] {
    std::map<std::string, Tensor> all = live;
    for (const auto& [name, t] : result.tensors) all.emplace("kept:" + name, t);
    result.peak_chain_bytes = std::max(result.peak_chain_bytes, bytes_of(all));
  };

  for (const ChainInput& in : chain.inputs) {
    SG_CHECK(in.source != ChainInput::Source::kGolden || options.goldens != nullptr,
             ErrorCode::kUsage,
             "{}: inputs.{}: comes from the golden dump ('{}'), but no golden dump was given",
             chain.path, in.tensor, in.written);
    Result<Tensor> t = in.source == ChainInput::Source::kGolden ? options.goldens->load(in.ref)
                                                                : read_npy(in.ref);
    if (!t) return std::move(t).take_status().with_context(fmt::format("{}: inputs.{}", chain.path, in.tensor));
    result.inputs[in.tensor] = *t;
    publish(in.tensor, std::move(*t));
  }

  std::map<std::string, Tensor> state_buffers;  // by chain state key
  for (const ChainStateInit& init : chain.states) {
    Result<Tensor> t = init.npy.empty() ? zeros_state(init) : read_npy(init.npy);
    if (!t) return std::move(t).take_status().with_context(fmt::format("{}: states.{}", chain.path, init.key));
    state_buffers[init.key] = std::move(*t);
  }
  track_peak();

  SG_CHECK(!options.only_steps || options.mode == ChainMode::kTeacherForced, ErrorCode::kUsage,
           "{}: only teacher-forced steps can run apart from the steps before them", chain.path);
  std::unique_ptr<ShardPrefetcher> prefetcher;
  if (options.prefetch && prefetch_allowed_by_environment()) {
    prefetcher = std::make_unique<ShardPrefetcher>();
  }
  std::deque<size_t> asked;  // shard steps the helper was asked to open, not yet taken
  for (size_t i = 0; i < chain.steps.size(); ++i) {
    const ChainStep& step = chain.steps[i];
    if (options.only_steps && !options.only_steps->count(step.id)) continue;
    const auto t0 = Clock::now();
    ChainStepRecord record;
    record.id = step.id;
    record.is_combine = step.is_combine;

    if (step.is_combine) {
      std::vector<Tensor> parts;
      for (const std::string& name : step.combine_inputs) parts.push_back(live.at(name));
      Result<Tensor> out = step.combine == CombineKind::kSum ? combine_sum(parts, options.precision)
                                                             : combine_concat(parts, step.axis);
      if (!out) return std::move(out).take_status().with_context(step_place(chain, i));
      for (const std::string& name : step.combine_inputs) {
        auto t = result.nonreproducible.find(name);
        if (t == result.nonreproducible.end()) continue;
        result.nonreproducible.emplace(
            step.output, fmt::format("step '{}' combines '{}' ({})", step.id, name, t->second));
        break;
      }
      publish(step.output, std::move(*out));
    } else {
      std::map<std::string, Tensor> inputs;
      if (options.mode == ChainMode::kTeacherForced) {
        SG_ASSIGN_OR_RETURN(record.teacher_forced,
                            teacher_forced_inputs(chain, step, *options.goldens));
      }
      std::set<std::string> forced;  // shard inputs fed a golden instead of their chain tensor
      for (const auto& [name, golden] : record.teacher_forced) forced.insert(name);
      for (const auto& [name, tensor] : step.inputs) {
        // A replaced input is not read from the chain: in a CI slice its producer did not run.
        if (!forced.count(name)) inputs[name] = live.at(tensor);
      }
      for (const auto& [name, golden] : record.teacher_forced) {
        std::string replaced;
        for (const auto& [in_name, tensor] : step.inputs) {
          if (in_name == name) replaced = tensor;
        }
        Result<Tensor> g = options.goldens->load(golden);
        if (!g) return std::move(g).take_status().with_context(step_place(chain, i));
        if (auto made = live.find(replaced); made != live.end()) {
          SG_CHECK(g->shape() == made->second.shape(), ErrorCode::kShape,
                   "{}: teacher-forced input '{}': golden '{}' has shape {}, the chain tensor "
                   "'{}' it replaces has {}",
                   step_place(chain, i), name, golden, shape_str(g->shape()), replaced,
                   shape_str(made->second.shape()));
        }
        inputs[name] = std::move(*g);
      }
      // The shard lives only for this step: its mapping and decoded weights go with it. With
      // prefetch a helper opened it while a step before computed (the same Shard, or the same
      // error, handed over only now), and a helper unmaps it while the next step computes.
      RunResult run;
      {
        auto opened = prefetcher ? prefetcher->take(step.shard) : Shard::open(step.shard);
        if (!opened) return std::move(opened).take_status().with_context(step_place(chain, i));
        std::shared_ptr<Shard> shard = std::move(*opened);
        // While this step runs, the helper opens the next ones (parse, fingerprint when the
        // report needs one it has not got, weight pages faulted in).
        if (prefetcher) {
          if (!asked.empty() && asked.front() == i) asked.pop_front();
          while (asked.size() < kPrefetchDepth) {
            const size_t j = next_shard_step(chain, asked.empty() ? i : asked.back(),
                                             options.only_steps);
            if (j == chain.steps.size()) break;
            const ChainStep& next = chain.steps[j];
            // A shard path already running or asked for gets its fingerprint from that step.
            bool fingerprint = options.fingerprints != nullptr &&
                               options.fingerprints->count(next.shard) == 0 &&
                               next.shard != step.shard;
            for (size_t k : asked) fingerprint = fingerprint && chain.steps[k].shard != next.shard;
            prefetcher->open_ahead(next.shard, next.function, fingerprint);
            result.prefetched.push_back(next.shard);
            asked.push_back(j);
          }
        }
        if (options.fingerprints) {
          auto known = options.fingerprints->find(step.shard);
          if (known == options.fingerprints->end()) {
            auto fp = shard->fingerprint();
            if (!fp) return std::move(fp).take_status().with_context(step_place(chain, i));
            known = options.fingerprints->emplace(step.shard, std::move(*fp)).first;
          }
          record.shard_fingerprint = known->second;
        }
        auto exec = std::make_shared<Executor>(shard);
        StateStore states;
        for (const auto& [name, key] : step.state) {
          auto it = state_buffers.find(key);
          if (it != state_buffers.end()) states.values[name] = it->second;
        }
        RunOptions ro;
        ro.precision = options.precision;
        ro.threads = options.threads;
        if (options.weight_overrides != nullptr) {
          auto o = options.weight_overrides->find(step.shard);
          if (o != options.weight_overrides->end()) ro.weight_overrides = &o->second;
        }
        auto r = exec->run(step.function, inputs, ro, &states);
        if (!r) return std::move(r).take_status().with_context(step_place(chain, i));
        if (const Function* fn = shard->program().function(step.function)) {
          // What the device would not reproduce: this shard's own random ops, and what it
          // computes from chain tensors that already depend on one (not from a golden fed in
          // their place).
          std::map<std::string, std::string> tainted_inputs;
          for (const auto& [name, tensor] : step.inputs) {
            auto t = result.nonreproducible.find(tensor);
            if (t != result.nonreproducible.end() && !forced.count(name)) {
              tainted_inputs.emplace(name, fmt::format("its input '{}' = chain tensor '{}' ({})",
                                                       name, tensor, t->second));
            }
          }
          const auto taint = nonreproducible_values(*fn, tainted_inputs);
          for (const auto& [name, tensor] : step.outputs) {
            auto t = taint.find(name);
            if (t == taint.end()) continue;
            result.nonreproducible.emplace(
                tensor, fmt::format("step '{}' output '{}' depends on {}", step.id, name, t->second));
          }
        }
        run = std::move(*r);
        for (const auto& [name, key] : step.state) {
          auto it = states.values.find(name);
          SG_CHECK(it != states.values.end(), ErrorCode::kShape,
                   "{}: state '{}' (chain key '{}') is not a state of function '{}'",
                   step_place(chain, i), name, key, step.function);
          state_buffers[key] = it->second;
        }
        // The executor goes here, on this thread, as without prefetch: the weights it keeps
        // decoded are owned tensors counted in the memory budget's live bytes, and the next
        // step's allocations must see them gone. The shard's mappings (views, not counted) are
        // unmapped on a helper.
        exec.reset();
        if (prefetcher) prefetcher->dispose(std::move(shard));
      }
      record.stats = run.stats;
      result.peak_step_bytes = std::max(result.peak_step_bytes, run.stats.peak_value_bytes);
      if (run.first_nonfinite && !result.first_nonfinite) {
        result.first_nonfinite = ChainNonFinite{step.id, *run.first_nonfinite};
      }
      for (const auto& [name, tensor] : step.outputs) {
        auto it = run.outputs.find(name);
        if (it == run.outputs.end()) {
          std::vector<std::string> have;
          for (const auto& [n, t] : run.outputs) have.push_back(n);
          return make_error(ErrorCode::kShape, "{}: shard '{}' function '{}' has no output '{}' (outputs: {})",
                            step_place(chain, i), step.shard_written, step.function, name,
                            fmt::join(have, ", "));
        }
        publish(tensor, std::move(it->second));
      }
    }
    track_peak();
    for (const std::string& t : step.consumed()) {
      auto lu = last_use.find(t);
      if (lu != last_use.end() && lu->second == i) live.erase(t);
    }
    record.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (options.on_step) options.on_step(record);
    result.steps.push_back(std::move(record));
  }
  return result;
}

}  // namespace sg
