// probe: a quantized shard against its FP16 baseline on seeded random unit-norm inputs, and the
// seeded inputs themselves (probe.h says how they are drawn and why).
#include "shardgate/probe.h"

#include "shardgate/chain.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

namespace sg {
namespace {

// FNV-1a: a stable hash of the input name, so each input has its own stream whatever the
// input order or count.
uint64_t name_hash(std::string_view name) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

// Uniform in (0, 1]: 53 random bits, never 0 (log(0) in Box–Muller).
double uniform_open0(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

// Box–Muller: two independent N(0,1) draws per pair of uniforms. std::normal_distribution is
// not used because its algorithm is implementation-defined (inputs would differ by platform).
void fill_normal(std::mt19937_64& rng, float* out, size_t n) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(uniform_open0(rng)));
    const double theta = kTwoPi * uniform_open0(rng);
    out[i] = static_cast<float>(r * std::cos(theta));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(theta));
  }
}

// Scales every vector along the last axis to unit L2 norm (a zero vector stays zero).
void normalize_last_axis(float* data, size_t n, size_t last) {
  if (last == 0) return;
  for (size_t start = 0; start + last <= n; start += last) {
    double ss = 0;
    for (size_t k = 0; k < last; ++k) ss += static_cast<double>(data[start + k]) * data[start + k];
    if (ss <= 0) continue;
    const double inv = 1.0 / std::sqrt(ss);
    for (size_t k = 0; k < last; ++k) data[start + k] = static_cast<float>(data[start + k] * inv);
  }
}

// The shape of a value of the function: a function input or the output of an op of its block.
const ValueType* value_type(const Function& fn, const std::string& name) {
  for (const NamedType& in : fn.inputs) {
    if (in.name == name) return &in.type;
  }
  for (const Op& op : fn.block.ops) {
    for (const NamedType& out : op.outputs) {
      if (out.name == name) return &out.type;
    }
  }
  return nullptr;
}

std::optional<int64_t> literal_int(const Op& op, std::string_view key) {
  const Argument* arg = op.input(key);
  if (arg == nullptr || arg->bindings.size() != 1) return std::nullopt;
  const Binding& b = arg->bindings[0];
  if (!b.literal || !b.literal->tensor.defined() || b.literal->tensor.numel() != 1) return std::nullopt;
  return static_cast<int64_t>(element_as_double(b.literal->tensor, 0));
}

// [0, R) when `input` (or a value derived from it by casts, reshapes and the negative-index
// wrap converters emit: add / select) is the index operand of a gather on a table of R rows
// along the gathered axis.
std::optional<int64_t> index_range(const Function& fn, const std::string& input) {
  static const std::set<std::string> kCarriers = {"cast", "add", "select", "identity", "reshape",
                                                  "squeeze", "expand_dims"};
  std::set<std::string> derived = {input};
  for (const Op& op : fn.block.ops) {
    if (op.type == "gather") {
      const Argument* idx = op.input("indices");
      const Argument* x = op.input("x");
      if (idx == nullptr || x == nullptr || idx->bindings.size() != 1 || x->bindings.size() != 1) continue;
      if (!idx->bindings[0].is_reference() || !derived.count(idx->bindings[0].name)) continue;
      if (!x->bindings[0].is_reference()) continue;
      const ValueType* table = value_type(fn, x->bindings[0].name);
      if (table == nullptr || !table->is_tensor() || table->shape.empty()) continue;
      int64_t axis = literal_int(op, "axis").value_or(0);
      const int64_t rank = static_cast<int64_t>(table->shape.size());
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) continue;
      const int64_t rows = table->shape[static_cast<size_t>(axis)];
      if (rows > 0) return rows;
      continue;
    }
    if (!kCarriers.count(op.type)) continue;
    bool reads_index = false;
    for (const auto& [key, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) reads_index = reads_index || (b.is_reference() && derived.count(b.name));
    }
    if (!reads_index) continue;
    for (const NamedType& out : op.outputs) {
      if (out.type.is_tensor() && dtype_is_integer(out.type.dtype)) derived.insert(out.name);
    }
  }
  return std::nullopt;
}

Result<Tensor> stack_seeds(const std::vector<Tensor>& per_seed) {
  std::vector<Tensor> parts;
  parts.reserve(per_seed.size());
  for (const Tensor& t : per_seed) {
    Shape s = t.shape();
    s.insert(s.begin(), 1);
    SG_ASSIGN_OR_RETURN(Tensor r, t.reshaped(s));
    parts.push_back(std::move(r));
  }
  return combine_concat(parts, 0);
}

struct SeedRuns {
  std::vector<std::map<std::string, Tensor>> outputs;  // per seed
  std::optional<NonFinite> first_nonfinite;
};

Result<SeedRuns> run_seeds(const std::shared_ptr<const Shard>& shard, const std::string& function,
                           const std::vector<std::map<std::string, Tensor>>& inputs,
                           const ProbeOptions& options) {
  SeedRuns runs;
  Executor exec(shard);
  RunOptions ro;
  ro.precision = options.precision;
  ro.threads = options.threads;
  for (size_t s = 0; s < inputs.size(); ++s) {
    StateStore states;  // every seed starts from zero states
    auto r = exec.run(function, inputs[s], ro, &states);
    if (!r) {
      return std::move(r).take_status().with_context(
          fmt::format("{}: seed {}", shard->path(), options.first_seed + s));
    }
    if (r->first_nonfinite && !runs.first_nonfinite) runs.first_nonfinite = r->first_nonfinite;
    runs.outputs.push_back(std::move(r->outputs));
  }
  return runs;
}

Status same_signature(const Function& candidate, const Function& baseline,
                      const std::string& candidate_path, const std::string& baseline_path) {
  for (const NamedType& b : baseline.inputs) {
    const NamedType* c = candidate.input(b.name);
    SG_CHECK(c != nullptr, ErrorCode::kShape,
             "{}: function '{}' has no input '{}', which the baseline {} has", candidate_path,
             candidate.name, b.name, baseline_path);
    SG_CHECK(c->type == b.type, ErrorCode::kShape,
             "{}: input '{}' is {}, the baseline {} has {}", candidate_path, b.name,
             c->type.to_string(), baseline_path, b.type.to_string());
  }
  SG_CHECK(candidate.inputs.size() == baseline.inputs.size(), ErrorCode::kShape,
           "{}: function '{}' has {} inputs, the baseline {} has {}", candidate_path,
           candidate.name, candidate.inputs.size(), baseline_path, baseline.inputs.size());
  return Status::ok();
}

Result<const Function*> find_function(const Shard& shard, const std::string& name) {
  const Function* fn = shard.program().function(name);
  if (fn == nullptr) {
    std::vector<std::string> names;
    for (const Function& f : shard.program().functions) names.push_back(f.name);
    return make_error(ErrorCode::kUsage, "{}: no function '{}' (functions: {})", shard.path(), name,
                      fmt::join(names, ", "));
  }
  return fn;
}

// The shared half of both probe entry points once the baseline has run.
Result<ProbeResult> compare_seed_runs(const SeedRuns& baseline, const SeedRuns& candidate,
                                      const std::string& candidate_path,
                                      const ProbeOptions& options) {
  ProbeResult result;
  const std::string shard_id = std::filesystem::path(candidate_path).filename().string();
  for (const auto& [name, first] : baseline.outputs.front()) {
    std::vector<Tensor> ref, cand;
    for (size_t s = 0; s < baseline.outputs.size(); ++s) {
      auto c = candidate.outputs[s].find(name);
      SG_CHECK(c != candidate.outputs[s].end(), ErrorCode::kShape,
               "{}: the candidate has no output '{}', which the baseline has", candidate_path,
               name);
      ref.push_back(baseline.outputs[s].at(name));
      cand.push_back(c->second);
    }
    SG_ASSIGN_OR_RETURN(Tensor ref_stack, stack_seeds(ref));
    auto cand_stack = stack_seeds(cand);
    if (!cand_stack) {
      return std::move(cand_stack).take_status().with_context(
          fmt::format("{}: output '{}'", candidate_path, name));
    }
    CheckIdentity id;
    id.checkpoint = name;
    id.kind = name.rfind("logits", 0) == 0 ? "logits" : "output";
    id.shard = shard_id;
    id.labels = options.labels;
    auto check = compare_tensors(id, *cand_stack, ref_stack, 0, options.metrics);
    if (!check) {
      return std::move(check).take_status().with_context(
          fmt::format("{}: output '{}'", candidate_path, name));
    }
    result.checks.push_back(std::move(*check));
  }
  for (const auto& [name, t] : candidate.outputs.front()) {
    if (!baseline.outputs.front().count(name)) {
      result.notes.push_back(fmt::format("{}: output '{}' has no baseline counterpart (not compared)",
                                         shard_id, name));
    }
  }
  result.notes.push_back(fmt::format(
      "{}: rows are seeds: row i is seed {} + i ({} seeds, unit-norm N(0,1) float inputs)", shard_id,
      options.first_seed, options.seeds));
  if (baseline.first_nonfinite) result.first_nonfinite.emplace_back("baseline", *baseline.first_nonfinite);
  if (candidate.first_nonfinite) result.first_nonfinite.emplace_back("candidate", *candidate.first_nonfinite);
  return result;
}

Result<std::vector<std::map<std::string, Tensor>>> all_seed_inputs(const Shard& shard,
                                                                   const ProbeOptions& options,
                                                                   std::vector<std::string>& notes) {
  SG_CHECK(options.seeds >= 1 && options.seeds <= 100000, ErrorCode::kUsage,
           "probe: the number of seeds must be in [1, 100000], got {}", options.seeds);
  std::vector<std::map<std::string, Tensor>> out;
  for (int64_t s = 0; s < options.seeds; ++s) {
    SG_ASSIGN_OR_RETURN(SeededInputs in,
                        make_seeded_inputs(shard, options.function,
                                           options.first_seed + static_cast<uint64_t>(s),
                                           options.given_inputs));
    if (s == 0) notes.insert(notes.end(), in.notes.begin(), in.notes.end());
    out.push_back(std::move(in.inputs));
  }
  return out;
}

// The shape a flexible input takes when nobody gives one: the DefaultShapes entry of the
// function's FlexibleShapeInformation attribute (what Apple's compiler writes into model.mil),
// else the default shape of the model description (ArrayFeatureType.shape / metadata.json
// "shape", which coremltools sets to the RangeDim / EnumeratedShapes default). Only a fully
// known shape the input type accepts counts.
std::optional<std::pair<Shape, std::string>> default_input_shape(const Shard& shard, const Function& fn,
                                                                 const NamedType& in) {
  const auto fits = [&](const Shape& s) {
    if (s.empty() && !in.type.shape.empty()) return false;
    for (int64_t d : s) {
      if (d <= 0) return false;
    }
    return in.type.accepts(s);
  };
  for (const auto& [key, info] : fn.attributes) {
    if (key != "FlexibleShapeInformation") continue;
    for (const Value& entry : info.elements) {
      if (entry.elements.size() != 2 || !entry.elements[0].tensor.defined() ||
          entry.elements[0].tensor.dtype() != DType::kString || entry.elements[0].tensor.numel() != 1 ||
          entry.elements[0].tensor.strings()[0] != "DefaultShapes") {
        continue;
      }
      for (const auto& [k, v] : entry.elements[1].entries) {
        if (!k.tensor.defined() || k.tensor.dtype() != DType::kString || k.tensor.numel() != 1 ||
            k.tensor.strings()[0] != in.name || !v.tensor.defined()) {
          continue;
        }
        auto dims = to_int64_vector(v.tensor);
        if (dims.is_ok() && fits(*dims)) return std::make_pair(Shape(*dims), std::string("FlexibleShapeInformation DefaultShapes"));
      }
    }
  }
  for (const FeatureInfo& f : shard.info().inputs) {
    if (f.name != in.name || (!f.function.empty() && f.function != fn.name)) continue;
    if (fits(f.default_shape)) return std::make_pair(f.default_shape, std::string("the model description's default shape"));
  }
  return std::nullopt;
}

}  // namespace

Result<SeededInputs> make_seeded_inputs(const Shard& shard, std::string_view function,
                                        uint64_t seed, const std::map<std::string, Tensor>& given) {
  SG_ASSIGN_OR_RETURN(const Function* fn, find_function(shard, std::string(function)));
  SeededInputs out;
  for (const auto& [name, t] : given) {
    SG_CHECK(fn->input(name) != nullptr, ErrorCode::kUsage,
             "{}: function '{}' has no input '{}'", shard.path(), fn->name, name);
  }
  for (const NamedType& in : fn->inputs) {
    if (in.type.kind == ValueType::Kind::kState) continue;
    const std::string where = fmt::format("{}: function '{}' input '{}'", shard.path(), fn->name, in.name);
    if (auto g = given.find(in.name); g != given.end()) {
      SG_CHECK(in.type.accepts(g->second.shape()), ErrorCode::kShape,
               "{}: given tensor has shape {}, the input is {}", where,
               shape_str(g->second.shape()), in.type.to_string());
      out.inputs[in.name] = g->second;
      continue;
    }
    SG_CHECK(in.type.is_tensor(), ErrorCode::kUnsupported, "{}: {} inputs cannot be drawn", where,
             in.type.to_string());
    Shape shape = in.type.shape;
    if (!in.type.rank_known || in.type.has_unknown_dims()) {
      const auto fallback = default_input_shape(shard, *fn, in);
      SG_CHECK(fallback.has_value(), ErrorCode::kUsage,
               "{}: flexible shape {} and no default shape declared: give it with --input {}=FILE.npy",
               where, in.type.to_string(), in.name);
      shape = fallback->first;
      out.notes.push_back(fmt::format("{}: flexible input '{}' drawn with shape {} ({})", shard.path(), in.name,
                                      shape_str(shape), fallback->second));
    }
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL ^ name_hash(in.name));
    const DType dt = in.type.dtype;
    if (dtype_is_float(dt)) {
      SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(DType::kF32, shape));
      const size_t n = static_cast<size_t>(t.numel());
      float* p = t.mutable_data<float>();
      fill_normal(rng, p, n);
      normalize_last_axis(p, n, shape.empty() ? 1 : static_cast<size_t>(shape.back()));
      out.inputs[in.name] = std::move(t);
    } else if (dtype_is_integer(dt) || dt == DType::kBool) {
      SG_ASSIGN_OR_RETURN(Tensor t, Tensor::zeros(DType::kI64, shape));
      const std::optional<int64_t> rows = dt == DType::kBool ? std::optional<int64_t>(2)
                                                             : index_range(*fn, in.name);
      if (rows) {
        int64_t* p = t.mutable_data<int64_t>();
        // Modulo of a 64-bit draw: the bias (rows / 2^64) is far below anything measurable.
        for (int64_t k = 0; k < t.numel(); ++k) p[k] = static_cast<int64_t>(rng() % static_cast<uint64_t>(*rows));
      } else {
        out.notes.push_back(fmt::format(
            "{}: int input '{}' set to 0: no valid range known (give it with --input {}=FILE.npy)",
            shard.path(), in.name, in.name));
      }
      SG_ASSIGN_OR_RETURN(Tensor cast, cast_tensor(t, dt));
      out.inputs[in.name] = std::move(cast);
    } else {
      return make_error(ErrorCode::kUnsupported, "{}: {} inputs cannot be drawn; give it with --input",
                        where, in.type.to_string());
    }
  }
  return out;
}

Result<ProbeResult> probe_shards(const std::shared_ptr<const Shard>& candidate,
                                 const std::shared_ptr<const Shard>& baseline,
                                 const ProbeOptions& options) {
  SG_ASSIGN_OR_RETURN(const Function* bfn, find_function(*baseline, options.function));
  SG_ASSIGN_OR_RETURN(const Function* cfn, find_function(*candidate, options.function));
  SG_TRY(same_signature(*cfn, *bfn, candidate->path(), baseline->path()));
  std::vector<std::string> notes;
  SG_ASSIGN_OR_RETURN(auto inputs, all_seed_inputs(*baseline, options, notes));
  SG_ASSIGN_OR_RETURN(SeedRuns base, run_seeds(baseline, options.function, inputs, options));
  SG_ASSIGN_OR_RETURN(SeedRuns cand, run_seeds(candidate, options.function, inputs, options));
  SG_ASSIGN_OR_RETURN(ProbeResult result, compare_seed_runs(base, cand, candidate->path(), options));
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  result.candidate_sha256 = candidate->program_sha256();
  result.baseline_sha256 = baseline->program_sha256();
  return result;
}

Result<ProbeResult> probe_shard(const std::string& candidate_path, const std::string& baseline_path,
                                const ProbeOptions& options) {
  std::vector<std::string> notes;
  std::vector<std::map<std::string, Tensor>> inputs;
  std::vector<NamedType> baseline_inputs;
  SeedRuns base;
  std::string baseline_sha;
  {
    SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> baseline, Shard::open(baseline_path));
    SG_ASSIGN_OR_RETURN(const Function* bfn, find_function(*baseline, options.function));
    baseline_inputs = bfn->inputs;
    baseline_sha = baseline->program_sha256();
    SG_ASSIGN_OR_RETURN(inputs, all_seed_inputs(*baseline, options, notes));
    SG_ASSIGN_OR_RETURN(base, run_seeds(baseline, options.function, inputs, options));
  }  // the baseline shard is released before the candidate is opened
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> candidate, Shard::open(candidate_path));
  SG_ASSIGN_OR_RETURN(const Function* cfn, find_function(*candidate, options.function));
  Function baseline_sig;
  baseline_sig.name = options.function;
  baseline_sig.inputs = std::move(baseline_inputs);
  SG_TRY(same_signature(*cfn, baseline_sig, candidate_path, baseline_path));
  SG_ASSIGN_OR_RETURN(SeedRuns cand, run_seeds(candidate, options.function, inputs, options));
  SG_ASSIGN_OR_RETURN(ProbeResult result, compare_seed_runs(base, cand, candidate_path, options));
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  result.candidate_sha256 = candidate->program_sha256();
  result.baseline_sha256 = std::move(baseline_sha);
  return result;
}

}  // namespace sg
