// probe: a quantized shard against its FP16 baseline on realistic or seeded random inputs, the
// input-stability check, and the seeded inputs themselves (probe.h says how they are drawn and
// why).
#include "shardgate/probe.h"
#include "shardgate/declared_ranges.h"

#include "shardgate/ops.h"

#include "shardgate/chain.h"
#include "shardgate/metrics.h"

#include <algorithm>
#include <array>
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

// Multiplies every element by `factor`.
void scale_all(float* data, size_t n, double factor) {
  for (size_t k = 0; k < n; ++k) data[k] = static_cast<float>(data[k] * factor);
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
      const ValueType* table = fn.value_type(x->bindings[0].name);
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

struct SeedRuns {
  std::vector<std::map<std::string, Tensor>> outputs;  // per seed
  // Baseline only: the outputs on each seed's input plus and minus the stability perturbation.
  std::vector<std::array<std::map<std::string, Tensor>, 2>> stability_outputs;
  std::optional<NonFinite> first_nonfinite;
};

constexpr uint64_t kSeedPerturbationSalt = 0x5EED5EED5EED5EEDULL;
constexpr uint64_t kStabilitySalt = 0x57AB1E57AB1E57ABULL;

// x ± the stability perturbation. Both signs: a tie within the perturbation's reach is on
// the other side for one of them, whichever way the draw points.
Result<std::map<std::string, Tensor>> stability_inputs(const std::map<std::string, Tensor>& in,
                                                       uint64_t seed, double relative) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : in) {
    SG_ASSIGN_OR_RETURN(out[name], perturbed(t, relative, seed, name, kStabilitySalt));
  }
  return out;
}

bool has_float_input(const std::map<std::string, Tensor>& in) {
  for (const auto& [name, t] : in) {
    if (dtype_is_float(t.dtype())) return true;
  }
  return false;
}

// Runs every seed's input (and, with `stability`, its stability twin) from zero states.
Result<SeedRuns> run_seeds(const std::shared_ptr<const Shard>& shard, const std::string& function,
                           const std::vector<std::map<std::string, Tensor>>& inputs,
                           const ProbeOptions& options, bool stability) {
  SeedRuns runs;
  Executor exec(shard);
  RunOptions ro;
  ro.precision = options.precision;
  ro.threads = options.threads;
  for (size_t s = 0; s < inputs.size(); ++s) {
    const uint64_t seed = options.first_seed + s;
    auto run_one = [&](const std::map<std::string, Tensor>& in, const char* what)
        -> Result<std::map<std::string, Tensor>> {
      StateStore states;  // every seed starts from zero states
      auto r = exec.run(function, in, ro, &states);
      if (!r) {
        return std::move(r).take_status().with_context(
            fmt::format("{}: seed {}{}", shard->path(), seed, what));
      }
      if (r->first_nonfinite && !runs.first_nonfinite) runs.first_nonfinite = r->first_nonfinite;
      return std::move(r->outputs);
    };
    SG_ASSIGN_OR_RETURN(auto out, run_one(inputs[s], ""));
    runs.outputs.push_back(std::move(out));
    if (stability) {
      std::array<std::map<std::string, Tensor>, 2> twins;
      for (int sign = 0; sign < 2; ++sign) {
        SG_ASSIGN_OR_RETURN(auto twin, stability_inputs(inputs[s], seed,
                                                        sign == 0 ? options.stability_rms
                                                                  : -options.stability_rms));
        SG_ASSIGN_OR_RETURN(twins[static_cast<size_t>(sign)],
                            run_one(twin, sign == 0 ? " (stability perturbation +)"
                                                    : " (stability perturbation -)"));
      }
      runs.stability_outputs.push_back(std::move(twins));
    }
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

std::string output_kind(const ProbeOptions& options, const std::string& name) {
  if (auto it = options.output_kinds.find(name); it != options.output_kinds.end()) return it->second;
  return name.rfind("logits", 0) == 0 ? "logits" : "output";
}

// Outputs laid out [batch, position, features...] (rank >= 3) are split per position; anything
// else is one vector per seed.
std::optional<int64_t> probe_position_axis(const Tensor& t) {
  return t.rank() >= 3 ? std::optional<int64_t>(1) : std::nullopt;
}

// x + y elementwise in fp32 (the residual frame of a partial sum); shapes must agree.
Result<Tensor> add_f32(const Tensor& x, const Tensor& y, const std::string& what) {
  SG_CHECK(x.shape() == y.shape(), ErrorCode::kShape,
           "{}: the residual input has shape {}, the partial sum {}", what, shape_str(x.shape()),
           shape_str(y.shape()));
  SG_ASSIGN_OR_RETURN(Tensor a, to_f32(x));
  SG_ASSIGN_OR_RETURN(Tensor b, to_f32(y));
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::kF32, x.shape()));
  float* o = out.mutable_data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a.data<float>()[i] + b.data<float>()[i];
  return out;
}

// One check over every seed: rows of seed s are compare_tensors' rows of that seed's tensors
// (per position when the output has a position axis), tagged with the seed. `stability[s]`
// holds the baseline's outputs on the seed's twin inputs, compared per row the same way.
Result<CheckResult> seed_check(const CheckIdentity& id, const std::string& output,
                               const std::vector<Tensor>& cand, const std::vector<Tensor>& ref,
                               const std::vector<std::vector<Tensor>>& stability,
                               const ProbeOptions& options, const std::string& where) {
  CheckResult out;
  const auto given_axis = options.position_axes.find(output);
  for (size_t s = 0; s < ref.size(); ++s) {
    const int64_t seed = static_cast<int64_t>(options.first_seed + s);
    const std::optional<int64_t> axis = given_axis != options.position_axes.end()
                                            ? given_axis->second
                                            : probe_position_axis(ref[s]);
    auto c = compare_tensors(id, cand[s], ref[s], axis, options.metrics);
    if (!c) return std::move(c).take_status().with_context(fmt::format("{}: seed {}", where, seed));
    if (s == 0) {
      out = *c;
      out.rows.clear();
      out.nonfinite.reset();
      out.shape.insert(out.shape.begin(), static_cast<int64_t>(ref.size()));
      out.row_axis = "seed";
    }
    if (c->nonfinite && !out.nonfinite) {
      out.nonfinite = c->nonfinite;
      // The flat index is within seed s's tensor: the stacked tensor's index.
      out.nonfinite->flat_index += static_cast<int64_t>(s) * ref[s].numel();
      out.nonfinite->position = -1;
    }
    std::vector<std::optional<double>> stable(c->rows.size());
    if (s < stability.size()) {
      for (const Tensor& twin : stability[s]) {
        MetricOptions plain;
        CheckIdentity tid = id;
        tid.kind = "output";  // cosine only matters here
        auto t = compare_tensors(tid, twin, ref[s], axis, plain);
        if (!t) return std::move(t).take_status().with_context(fmt::format("{}: seed {} (stability)", where, seed));
        for (size_t r = 0; r < t->rows.size() && r < stable.size(); ++r) {
          const RowResult& tr = t->rows[r];
          // Both all-zero (a pack that got no token either way) is stable; NaN is not. A
          // one-element row has a cosine only where its sign flips (compare_tensors): a
          // baseline whose sign the noise flips sits on a tie; otherwise no stability measure.
          if (!tr.degenerate && !tr.nonfinite && !tr.value(Metric::kCosine)) continue;
          const double v = tr.degenerate ? 1.0 : tr.value(Metric::kCosine).value_or(0.0);
          stable[r] = stable[r] ? std::min(*stable[r], v) : v;
        }
      }
    }
    for (size_t r = 0; r < c->rows.size(); ++r) {
      RowResult row = c->rows[r];
      row.seed = seed;
      row.stability_cosine = stable[r];
      out.rows.push_back(std::move(row));
    }
  }
  return out;
}

// The shared half of both probe entry points once the baseline has run.
Result<ProbeResult> compare_seed_runs(const SeedRuns& baseline, const SeedRuns& candidate,
                                      const std::vector<std::map<std::string, Tensor>>& inputs,
                                      const std::string& candidate_path,
                                      const ProbeOptions& options,
                                      const std::map<std::string, std::string>& nonreproducible) {
  ProbeResult result;
  int64_t excluded_checks = 0;
  const std::string shard_id = !options.shard_id.empty()
                                   ? options.shard_id
                                   : std::filesystem::path(candidate_path).filename().string();
  for (const auto& [name, axis] : options.position_axes) {
    // A misspelt output must not leave the guessed axis in place unnoticed.
    if (baseline.outputs.front().count(name)) continue;
    std::vector<std::string> outputs;
    for (const auto& [out, t] : baseline.outputs.front()) outputs.push_back(out);
    return make_error(ErrorCode::kUsage, "--output-position-axis {}: {} has no output '{}' (its "
                      "outputs: {})", name, candidate_path, name, fmt::join(outputs, ", "));
  }
  for (const auto& [name, first] : baseline.outputs.front()) {
    std::vector<Tensor> ref, cand;
    std::vector<std::vector<Tensor>> stability(baseline.stability_outputs.size());
    for (size_t s = 0; s < baseline.outputs.size(); ++s) {
      auto c = candidate.outputs[s].find(name);
      SG_CHECK(c != candidate.outputs[s].end(), ErrorCode::kShape,
               "{}: the candidate has no output '{}', which the baseline has", candidate_path,
               name);
      ref.push_back(baseline.outputs[s].at(name));
      cand.push_back(c->second);
      if (s < baseline.stability_outputs.size()) {
        for (const auto& outs : baseline.stability_outputs[s]) {
          if (auto t = outs.find(name); t != outs.end()) stability[s].push_back(t->second);
        }
      }
    }
    CheckIdentity id;
    id.checkpoint = name;
    id.kind = output_kind(options, name);
    id.layer = options.layer;
    id.shard = shard_id;
    id.labels = options.labels;
    const std::string where = fmt::format("{}: output '{}'", candidate_path, name);
    // An output a random op makes (in either shard) is measured but proves nothing: excluded,
    // and so is its residual frame below.
    std::string excluded;
    if (auto t = nonreproducible.find(name); t != nonreproducible.end()) {
      excluded = fmt::format("output '{}' depends on {}", name, t->second);
    }
    SG_ASSIGN_OR_RETURN(CheckResult check, seed_check(id, name, cand, ref, stability, options, where));
    if (!options.position_axes.count(name) && probe_position_axis(first)) {
      // Say that the row axis is a guess: on a channels-first output the "positions" are channels.
      result.notes.push_back(fmt::format(
          "{}: output '{}' {}: rows along axis 1, guessed as [batch, position, ...]; a "
          "channels-first output (ANE layout [1, C, 1, S]) needs --output-position-axis {}=N",
          shard_id, name, shape_str(first.shape()), name));
    }
    check.excluded = excluded;
    excluded_checks += excluded.empty() ? 0 : 1;
    result.checks.push_back(std::move(check));

    // A partial sum in the residual frame: the stream it is added to (the shard's residual
    // input) plus the candidate's share against the same stream plus the baseline's.
    auto frame = options.frames.find(name);
    if (frame == options.frames.end()) continue;
    std::vector<Tensor> fref, fcand;
    std::vector<std::vector<Tensor>> fstab(stability.size());
    for (size_t s = 0; s < ref.size(); ++s) {
      auto x = inputs[s].find(frame->second);
      SG_CHECK(x != inputs[s].end(), ErrorCode::kUsage, "{}: no input '{}' for the residual frame",
               where, frame->second);
      SG_ASSIGN_OR_RETURN(Tensor r, add_f32(x->second, ref[s], where));
      SG_ASSIGN_OR_RETURN(Tensor c, add_f32(x->second, cand[s], where));
      fref.push_back(std::move(r));
      fcand.push_back(std::move(c));
      if (s < stability.size()) {
        for (const Tensor& t : stability[s]) {
          SG_ASSIGN_OR_RETURN(Tensor ft, add_f32(x->second, t, where));
          fstab[s].push_back(std::move(ft));
        }
      }
    }
    CheckIdentity fid = id;
    fid.checkpoint = frame->second + "+" + name;
    fid.kind = "hidden";
    SG_ASSIGN_OR_RETURN(CheckResult fcheck, seed_check(fid, name, fcand, fref, fstab, options, where));
    fcheck.excluded = excluded;
    excluded_checks += excluded.empty() ? 0 : 1;
    result.checks.push_back(std::move(fcheck));
    result.notes.push_back(fmt::format(
        "{}: '{}' is a partial sum (kind partial_sum: reported, gated as gates/fidelity.json "
        "says); '{}+{}' is what it does to the residual stream: its input '{}' plus the "
        "candidate's share against the same plus the baseline's, gated like a hidden state",
        shard_id, name, frame->second, name, frame->second));
  }
  for (const auto& [name, t] : candidate.outputs.front()) {
    if (!baseline.outputs.front().count(name)) {
      result.notes.push_back(fmt::format("{}: output '{}' has no baseline counterpart (not compared)",
                                         shard_id, name));
    }
  }
  if (excluded_checks > 0) {
    result.notes.push_back(fmt::format(
        "{} check{} excluded from the gate: {} on random ops, whose numbers a device draws "
        "differently (this tool's generator is seeded SplitMix64, not Apple's)",
        excluded_checks, excluded_checks == 1 ? "" : "s",
        excluded_checks == 1 ? "it depends" : "they depend"));
  }
  std::string source =
      options.base_inputs.empty()
          ? fmt::format("random inputs: float N(0,1) with every last-axis vector scaled to {}",
                        options.input_scale.describe())
          : fmt::format("inputs from {}: seed {} as recorded, later seeds plus a seeded "
                        "perturbation of {:g} x its RMS",
                        options.base_inputs_origin, options.first_seed, options.perturbation);
  if (!options.given_inputs.empty()) {
    // Given inputs are the same for every seed; the note said "random inputs" for them.
    std::vector<std::string> names;
    for (const auto& [name, t] : options.given_inputs) names.push_back("'" + name + "'");
    const bool all_given = !inputs.empty() && inputs.front().size() == options.given_inputs.size();
    source = fmt::format("input{} {} given with --input, the same for every seed{}",
                         names.size() == 1 ? "" : "s", fmt::join(names, ", "),
                         all_given ? std::string() : "; the others: " + source);
  }
  result.notes.push_back(fmt::format("{}: rows are seeds {}..{}, per position for [batch, "
                                     "position, ...] outputs ({})",
                                     shard_id, options.first_seed,
                                     options.first_seed + static_cast<uint64_t>(options.seeds) - 1,
                                     source));
  if (!baseline.stability_outputs.empty()) {
    result.notes.push_back(fmt::format(
        "{}: input-stability check: the baseline also ran on every seed's input plus and minus a "
        "perturbation of {:g} x its RMS; a row where its output moves below the gate's "
        "min_cosine is unstable (excluded, reported with its margin)",
        shard_id, options.stability_rms));
  } else if (options.stability_rms > 0) {
    result.notes.push_back(fmt::format(
        "{}: input-stability check not run: the shard has no float input to perturb", shard_id));
  }
  if (baseline.first_nonfinite) result.first_nonfinite.emplace_back("baseline", *baseline.first_nonfinite);
  if (candidate.first_nonfinite) result.first_nonfinite.emplace_back("candidate", *candidate.first_nonfinite);
  return result;
}

Result<std::vector<std::map<std::string, Tensor>>> all_seed_inputs(const Shard& shard,
                                                                   const ProbeOptions& options,
                                                                   std::vector<std::string>& notes) {
  SG_CHECK(options.seeds >= 1 && options.seeds <= 100000, ErrorCode::kUsage,
           "probe: the number of seeds must be in [1, 100000], got {}", options.seeds);
  SG_CHECK(options.perturbation >= 0 && options.perturbation <= 10, ErrorCode::kUsage,
           "probe: the perturbation must be in [0, 10] (a multiple of the input's RMS), got {}",
           options.perturbation);
  SG_CHECK(options.stability_rms >= 0 && options.stability_rms <= 1, ErrorCode::kUsage,
           "probe: the stability perturbation must be in [0, 1] (a multiple of the input's RMS), "
           "got {}", options.stability_rms);
  std::map<std::string, Tensor> given = options.given_inputs;
  for (const auto& [name, t] : options.base_inputs) {
    SG_CHECK(!given.count(name), ErrorCode::kUsage,
             "probe: input '{}' is given with --input and also comes from {}", name,
             options.base_inputs_origin);
  }
  std::vector<std::map<std::string, Tensor>> out;
  for (int64_t s = 0; s < options.seeds; ++s) {
    const uint64_t seed = options.first_seed + static_cast<uint64_t>(s);
    std::map<std::string, Tensor> fixed = given;
    for (const auto& [name, base] : options.base_inputs) {
      if (s == 0) {
        fixed[name] = base;
      } else {
        SG_ASSIGN_OR_RETURN(fixed[name], perturbed(base, options.perturbation, seed, name,
                                                   kSeedPerturbationSalt));
      }
    }
    SG_ASSIGN_OR_RETURN(SeededInputs in, make_seeded_inputs(shard, options.function, seed, fixed,
                                                            options.input_scale));
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
  if (const Value* v = flexible_shape_entry(fn, "DefaultShapes", in.name); v != nullptr && v->tensor.defined()) {
    auto dims = to_int64_vector(v->tensor);
    if (dims.is_ok() && fits(*dims)) return std::make_pair(Shape(*dims), std::string("FlexibleShapeInformation DefaultShapes"));
  }
  for (const FeatureInfo& f : shard.info().inputs) {
    if (f.name != in.name || (!f.function.empty() && f.function != fn.name)) continue;
    if (fits(f.default_shape)) return std::make_pair(f.default_shape, std::string("the model description's default shape"));
  }
  return std::nullopt;
}

}  // namespace

std::string InputScale::describe() const {
  std::string out = rms ? fmt::format("RMS {:g}", *rms) : std::string("unit L2 norm");
  if (scale != 1.0) out += fmt::format(" x {:g}", scale);
  return out;
}

Result<Tensor> perturbed(const Tensor& x, double relative, uint64_t seed, std::string_view name,
                         uint64_t salt) {
  if (!dtype_is_float(x.dtype()) || relative == 0 || x.numel() == 0) return x;
  SG_ASSIGN_OR_RETURN(Tensor f, to_f32(x));
  SG_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(DType::kF32, x.shape()));
  const size_t n = static_cast<size_t>(x.numel());
  const size_t last = x.shape().empty() ? 1 : static_cast<size_t>(x.shape().back());
  std::vector<float> noise(n);
  std::mt19937_64 rng((seed * 0x9E3779B97F4A7C15ULL) ^ name_hash(name) ^ salt);
  fill_normal(rng, noise.data(), n);
  const float* src = f.data<float>();
  float* dst = out.mutable_data<float>();
  for (size_t start = 0; last > 0 && start + last <= n; start += last) {
    double ss = 0, nn = 0;
    for (size_t k = 0; k < last; ++k) {
      ss += static_cast<double>(src[start + k]) * src[start + k];
      nn += static_cast<double>(noise[start + k]) * noise[start + k];
    }
    // The noise vector gets RMS relative × the vector's RMS (a zero vector stays unperturbed).
    const double factor = nn > 0 ? relative * std::sqrt(ss / nn) : 0.0;
    for (size_t k = 0; k < last; ++k) {
      dst[start + k] = static_cast<float>(src[start + k] + factor * noise[start + k]);
    }
  }
  return cast_tensor(out, x.dtype());
}

Result<SeededInputs> make_seeded_inputs(const Shard& shard, std::string_view function,
                                        uint64_t seed, const std::map<std::string, Tensor>& given,
                                        const InputScale& scale) {
  SG_CHECK(!scale.rms || (*scale.rms > 0 && std::isfinite(*scale.rms)), ErrorCode::kUsage,
           "--input-rms must be a positive number, got {}", scale.rms.value_or(0));
  SG_CHECK(scale.scale > 0 && std::isfinite(scale.scale), ErrorCode::kUsage,
           "--input-scale must be a positive number, got {}", scale.scale);
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
    // The memory budget may refuse a drawn input: its message then names the input.
    const auto drawn = [&](DType type) -> Result<Tensor> {
      Result<Tensor> t = Tensor::zeros(type, shape);
      if (!t) return std::move(t).take_status().with_context(where + " (seeded)");
      return t;
    };
    if (dtype_is_float(dt)) {
      SG_ASSIGN_OR_RETURN(Tensor t, drawn(DType::kF32));
      const size_t n = static_cast<size_t>(t.numel());
      float* p = t.mutable_data<float>();
      fill_normal(rng, p, n);
      const size_t last = shape.empty() ? 1 : static_cast<size_t>(shape.back());
      normalize_last_axis(p, n, last);
      // Unit norm → RMS r per element: multiply by r·sqrt(last).
      const double factor =
          (scale.rms ? *scale.rms * std::sqrt(static_cast<double>(last)) : 1.0) * scale.scale;
      if (factor != 1.0) scale_all(p, n, factor);
      if (dt == DType::kF32) {
        out.inputs[in.name] = std::move(t);
      } else {
        Result<Tensor> cast = cast_tensor(t, dt);
        if (!cast) return std::move(cast).take_status().with_context(where + " (seeded)");
        out.inputs[in.name] = std::move(cast).value();
      }
    } else if (dtype_is_integer(dt) || dt == DType::kBool) {
      SG_ASSIGN_OR_RETURN(Tensor t, drawn(DType::kI64));
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
      Result<Tensor> cast = cast_tensor(t, dt);
      if (!cast) return std::move(cast).take_status().with_context(where + " (seeded)");
      out.inputs[in.name] = std::move(cast).value();
    } else {
      return make_error(ErrorCode::kUnsupported, "{}: {} inputs cannot be drawn; give it with --input",
                        where, in.type.to_string());
    }
  }
  return out;
}

namespace {

// Both shards' non-reproducible values (the candidate's first).
std::map<std::string, std::string> union_taint(const Function& candidate,
                                               std::map<std::string, std::string> baseline) {
  std::map<std::string, std::string> taint = nonreproducible_values(candidate);
  for (auto& [name, why] : baseline) taint.emplace(name, std::move(why));
  return taint;
}
std::map<std::string, std::string> union_taint(const Function& candidate, const Function& baseline) {
  return union_taint(candidate, nonreproducible_values(baseline));
}

}  // namespace

Result<ProbeResult> probe_shards(const std::shared_ptr<const Shard>& candidate,
                                 const std::shared_ptr<const Shard>& baseline,
                                 const ProbeOptions& options) {
  SG_ASSIGN_OR_RETURN(const Function* bfn, find_function(*baseline, options.function));
  SG_ASSIGN_OR_RETURN(const Function* cfn, find_function(*candidate, options.function));
  SG_TRY(same_signature(*cfn, *bfn, candidate->path(), baseline->path()));
  std::vector<std::string> notes;
  SG_ASSIGN_OR_RETURN(auto inputs, all_seed_inputs(*baseline, options, notes));
  const bool stability = options.stability_rms > 0 && has_float_input(inputs.front());
  SG_ASSIGN_OR_RETURN(SeedRuns base,
                      run_seeds(baseline, options.function, inputs, options, stability));
  SG_ASSIGN_OR_RETURN(SeedRuns cand, run_seeds(candidate, options.function, inputs, options, false));
  SG_ASSIGN_OR_RETURN(ProbeResult result,
                      compare_seed_runs(base, cand, inputs, candidate->path(), options,
                                        union_taint(*cfn, *bfn)));
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  result.candidate_sha256 = candidate->program_sha256();
  result.baseline_sha256 = baseline->program_sha256();
  // Shards built in memory have no files to fingerprint: left empty.
  if (auto fp = candidate->fingerprint()) result.candidate_fingerprint = *fp;
  if (auto fp = baseline->fingerprint()) result.baseline_fingerprint = *fp;
  return result;
}

Result<ProbeResult> probe_shard(const std::string& candidate_path, const std::string& baseline_path,
                                const ProbeOptions& options) {
  std::vector<std::string> notes;
  std::vector<std::map<std::string, Tensor>> inputs;
  std::vector<NamedType> baseline_inputs;
  SeedRuns base;
  std::string baseline_sha, baseline_fp;
  std::map<std::string, std::string> baseline_taint;  // the baseline shard is closed below
  {
    SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> baseline, Shard::open(baseline_path));
    SG_ASSIGN_OR_RETURN(const Function* bfn, find_function(*baseline, options.function));
    baseline_inputs = bfn->inputs;
    baseline_taint = nonreproducible_values(*bfn);
    baseline_sha = baseline->program_sha256();
    SG_ASSIGN_OR_RETURN(baseline_fp, baseline->fingerprint());
    SG_ASSIGN_OR_RETURN(inputs, all_seed_inputs(*baseline, options, notes));
    const bool stability = options.stability_rms > 0 && has_float_input(inputs.front());
    SG_ASSIGN_OR_RETURN(base, run_seeds(baseline, options.function, inputs, options, stability));
  }  // the baseline shard is released before the candidate is opened
  SG_ASSIGN_OR_RETURN(std::shared_ptr<Shard> candidate, Shard::open(candidate_path));
  SG_ASSIGN_OR_RETURN(const Function* cfn, find_function(*candidate, options.function));
  Function baseline_sig;
  baseline_sig.name = options.function;
  baseline_sig.inputs = std::move(baseline_inputs);
  SG_TRY(same_signature(*cfn, baseline_sig, candidate_path, baseline_path));
  SG_ASSIGN_OR_RETURN(SeedRuns cand, run_seeds(candidate, options.function, inputs, options, false));
  SG_ASSIGN_OR_RETURN(ProbeResult result,
                      compare_seed_runs(base, cand, inputs, candidate_path, options,
                                        union_taint(*cfn, baseline_taint)));
  result.notes.insert(result.notes.begin(), notes.begin(), notes.end());
  result.candidate_sha256 = candidate->program_sha256();
  result.baseline_sha256 = std::move(baseline_sha);
  SG_ASSIGN_OR_RETURN(result.candidate_fingerprint, candidate->fingerprint());
  result.baseline_fingerprint = std::move(baseline_fp);
  return result;
}

}  // namespace sg
