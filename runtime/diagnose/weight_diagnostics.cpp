// diagnose_weights(): the static statistics of every compressed weight (weight_diagnostics.h;
// definitions in runtime/diagnose/README.md). Codes are counted per scale group or pooled,
// never decoded to a dense copy, unless a baseline is given (then the weight and its
// reference are decoded one pair at a time).
#include "shardgate/weight_diagnostics.h"
#include "shardgate/blob_refs.h"

#include "shardgate/executor.h"
#include "shardgate/half.h"
#include "shardgate/weight_codes.h"

#include "core/subbyte.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace sg {
namespace {

constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();
// Per-group code histograms up to this many counters; beyond (small blocks of a large weight)
// each run of a group is counted and folded on its own.
constexpr int64_t kMaxHistogramCounters = int64_t{1} << 22;

// A compile-time value some runtime op reads, with the first such use.
struct WeightUse {
  const Op* producer = nullptr;
  std::string value;
  std::string key;
  std::string consumer_type;
};

void collect_uses(const Block& block, const std::map<std::string, const Op*>& producers,
                  std::map<std::string, size_t>& seen, std::vector<WeightUse>& uses) {
  for (const Op& op : block.ops) {
    if (op.is_compile_time()) continue;
    for (const auto& [param, arg] : op.inputs) {
      for (const Binding& b : arg.bindings) {
        if (!b.is_reference()) continue;
        auto p = producers.find(b.name);
        if (p == producers.end() || seen.count(b.name)) continue;
        seen.emplace(b.name, uses.size());
        const std::string out = op.outputs.empty() ? op.name() : op.outputs[0].name;
        uses.push_back({p->second, b.name, out + "." + param, op.type});
      }
    }
    for (const Block& nested : op.blocks) collect_uses(nested, producers, seen, uses);
  }
}

std::vector<WeightUse> weight_uses(const Function& fn) {
  std::map<std::string, const Op*> producers;
  for (const Op& op : fn.block.ops) {
    if (!op.is_compile_time()) continue;
    for (const NamedType& o : op.outputs) producers.emplace(o.name, &op);
  }
  std::map<std::string, size_t> seen;
  std::vector<WeightUse> uses;
  collect_uses(fn.block, producers, seen, uses);
  return uses;
}

// Elements [first, first + n) of a float or 8-bit integer tensor as floats (NaN otherwise).
void read_floats(const Tensor& t, int64_t first, int64_t n, float* out) {
  switch (t.dtype()) {
    case DType::kF16: f16_to_f32_span(t.data<uint16_t>() + first, out, static_cast<size_t>(n)); break;
    case DType::kF32: std::copy_n(t.data<float>() + first, n, out); break;
    case DType::kI8: std::copy_n(t.data<int8_t>() + first, n, out); break;
    case DType::kU8: std::copy_n(t.data<uint8_t>() + first, n, out); break;
    default: std::fill_n(out, n, std::numeric_limits<float>::quiet_NaN()); break;
  }
}

// Calls fn(a, b, n) over the elements of equally sized tensors a and b (b may be null) in
// chunks, so no widened copy of a large weight is ever made.
template <typename Fn>
void for_each_chunk(const Tensor& a, const Tensor* b, Fn&& fn) {
  constexpr int64_t kChunk = 4096;
  std::vector<float> x(kChunk), y(kChunk);
  for (int64_t i = 0; i < a.numel(); i += kChunk) {
    const int64_t n = std::min(kChunk, a.numel() - i);
    read_floats(a, i, n, x.data());
    if (b != nullptr) read_floats(*b, i, n, y.data());
    fn(x.data(), y.data(), n);
  }
}

struct GroupAcc {
  double sumsq = 0;
  double maxabs = 0;
  int64_t n = 0;
};

// Walks the weight in row-major order and calls fn(first, count, group) for each run of
// consecutive elements that share a scale group (a row cut at its column blocks).
template <typename Fn>
void for_each_group_run(const WeightCodes& c, Fn&& fn) {
  const size_t r = c.shape.size();
  const int64_t cols = c.shape[r - 1];
  const int64_t col_block = c.block[r - 1];
  std::vector<int64_t> gstride(r, 1);
  for (size_t d = r - 1; d-- > 0;) gstride[d] = gstride[d + 1] * c.group_shape[d + 1];
  std::vector<int64_t> coord(r, 0);
  const int64_t rows = cols == 0 ? 0 : numel(c.shape) / cols;
  int64_t e = 0;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t base = 0;
    for (size_t d = 0; d + 1 < r; ++d) base += (coord[d] / c.block[d]) * gstride[d];
    for (int64_t col = 0; col < cols; col += col_block, e += col_block) {
      fn(e, col_block, base + col / col_block);
    }
    for (size_t d = r - 1; d-- > 0;) {
      if (++coord[d] < c.shape[d]) break;
      coord[d] = 0;
    }
  }
}

// Adds the codes of elements [first, first + n) to `hist` (2^bits counters), indexed by
// code - smallest code. 8- and 4-bit codes are read straight from the packed bytes.
void count_codes(const WeightCodes& c, int64_t first, int64_t n, uint32_t* hist) {
  const uint32_t flip = c.is_signed ? (1u << (c.bits - 1)) : 0u;  // two's complement -> offset
  if (c.bits == 8) {
    const auto* p = reinterpret_cast<const uint8_t*>(c.codes.raw());
    for (int64_t e = first; e < first + n; ++e) ++hist[p[e] ^ flip];
  } else if (c.bits == 4) {
    for (int64_t e = first; e < first + n; ++e) ++hist[subbyte::nibble(c.codes.raw(), e) ^ flip];
  } else {
    for (int64_t e = first; e < first + n; ++e) ++hist[subbyte::get(c.codes.raw(), c.bits, e) ^ flip];
  }
}

std::string form_of(const WeightCodes& c) {
  std::string grid;
  for (size_t d = 0; d < c.block.size(); ++d) grid += (d ? "x" : "") + std::to_string(c.block[d]);
  const char* what = c.kind == WeightCodes::Kind::kPalette ? "palette" : "linear";
  const char* per = c.kind == WeightCodes::Kind::kPalette ? "table" : "scale";
  if (c.group_count() == 1) return fmt::format("{} {}, 1 {} per tensor", dtype_name(c.code_dtype), what, per);
  return fmt::format("{} {}, {} {}s of {} ({})", dtype_name(c.code_dtype), what, c.group_count(),
                     per, numel(c.block), grid);
}

// Statistics from the codes (no dense copy).
void code_statistics(const WeightCodes& c, WeightDiagnostic& w) {
  const int64_t k = int64_t{1} << c.bits;
  const int64_t groups = c.group_count();
  const int64_t lo = c.is_signed ? -(k / 2) : 0;  // smallest code
  std::vector<int64_t> pooled(static_cast<size_t>(k), 0);
  std::vector<GroupAcc> acc(static_cast<size_t>(groups));
  // Fold a group's code histogram into its magnitudes and the pooled histogram.
  auto fold = [&](int64_t g, const uint32_t* h) {
    GroupAcc& a = acc[static_cast<size_t>(g)];
    for (int64_t i = 0; i < k; ++i) {
      if (h[i] == 0) continue;
      pooled[static_cast<size_t>(i)] += h[i];
      const double v = c.value(g, i + lo);
      a.sumsq += static_cast<double>(h[i]) * v * v;
      a.maxabs = std::max(a.maxabs, std::fabs(v));
      a.n += h[i];
    }
  };
  if (groups * k <= kMaxHistogramCounters) {
    std::vector<uint32_t> hist(static_cast<size_t>(groups * k), 0);
    for_each_group_run(c, [&](int64_t e, int64_t n, int64_t g) { count_codes(c, e, n, &hist[static_cast<size_t>(g * k)]); });
    for (int64_t g = 0; g < groups; ++g) fold(g, &hist[static_cast<size_t>(g * k)]);
  } else {
    // Many small groups: one histogram per run, folded at once (a group may span several
    // runs when its block covers several rows; folding per run adds up the same).
    std::vector<uint32_t> hist(static_cast<size_t>(k));
    for_each_group_run(c, [&](int64_t e, int64_t n, int64_t g) {
      std::fill(hist.begin(), hist.end(), 0u);
      count_codes(c, e, n, hist.data());
      fold(g, hist.data());
    });
  }
  // Pooled code histogram: entropy and the share of codes used.
  const double total = static_cast<double>(w.elements);
  double entropy = 0;
  int64_t used = 0;
  for (int64_t n : pooled) {
    if (n == 0) continue;
    ++used;
    const double p = static_cast<double>(n) / total;
    entropy -= p * std::log2(p);
  }
  w.effective_bits = w.elements > 0 ? entropy : kNoValue;
  w.codes_used = static_cast<double>(used) / static_cast<double>(k);
  // Per-group and whole-tensor magnitudes.
  double sumsq = 0, maxabs = 0, noise = 0;
  w.outlier_ratio = kNoValue;
  for (int64_t g = 0; g < groups; ++g) {
    const GroupAcc& a = acc[static_cast<size_t>(g)];
    sumsq += a.sumsq;
    maxabs = std::max(maxabs, a.maxabs);
    if (!c.step.empty()) noise += static_cast<double>(a.n) * c.step[static_cast<size_t>(g)] * c.step[static_cast<size_t>(g)] / 12.0;
    if (a.n == 0 || a.sumsq <= 0) continue;
    const double ratio = a.maxabs / std::sqrt(a.sumsq / static_cast<double>(a.n));
    if (std::isnan(w.outlier_ratio) || ratio > w.outlier_ratio) {
      w.outlier_ratio = ratio;
      w.outlier_group = g;
    }
  }
  w.rms = w.elements > 0 ? std::sqrt(sumsq / total) : kNoValue;
  w.tensor_outlier_ratio = sumsq > 0 ? maxabs / w.rms : kNoValue;
  if (!c.step.empty()) {
    std::vector<float> s = c.step;
    std::sort(s.begin(), s.end());
    w.step_min = s.front();
    w.step_max = s.back();
    w.step_median = s[s.size() / 2];
    w.est_rel_error = sumsq > 0 ? std::sqrt(noise / sumsq) : kNoValue;
    w.typical_codes = noise > 0 ? std::sqrt(sumsq / (12.0 * noise)) : kNoValue;
  } else {
    w.step_min = w.step_median = w.step_max = kNoValue;
    w.est_rel_error = w.typical_codes = kNoValue;
  }
}

// Statistics of a weight without per-element codes, from its decoded values.
void decoded_statistics(const Tensor& dense, WeightDiagnostic& w) {
  double sumsq = 0, maxabs = 0;
  for_each_chunk(dense, nullptr, [&](const float* x, const float*, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      sumsq += static_cast<double>(x[i]) * x[i];
      maxabs = std::max(maxabs, std::fabs(static_cast<double>(x[i])));
    }
  });
  const int64_t count = dense.numel();
  w.rms = count == 0 ? kNoValue : std::sqrt(sumsq / static_cast<double>(count));
  w.tensor_outlier_ratio = sumsq > 0 ? maxabs / w.rms : kNoValue;
  w.outlier_ratio = w.tensor_outlier_ratio;
  w.effective_bits = w.codes_used = kNoValue;
  w.step_min = w.step_median = w.step_max = w.est_rel_error = w.typical_codes = kNoValue;
}

Status compare_with_baseline(const Shard& shard, const Function& fn, const Shard& baseline,
                             const Function& base_fn, const std::string& base_name,
                             WeightDiagnostic& w) {
  SG_ASSIGN_OR_RETURN(WeightError e, weight_error(shard, fn, w.name, baseline, base_fn, base_name));
  if (e.shape != e.baseline_shape) {
    w.baseline_name = fmt::format("none: the baseline's '{}' is {}, this weight is {}", base_name,
                                  shape_str(e.baseline_shape), shape_str(e.shape));
    return Status::ok();
  }
  w.has_baseline = true;
  w.baseline_name = base_name;
  w.rel_error = e.rel_error;
  w.sqnr_db = e.sqnr_db;
  return Status::ok();
}

}  // namespace

Result<WeightError> weight_error(const Shard& shard, const Function& function,
                                 std::string_view name, const Shard& baseline,
                                 const Function& baseline_function, std::string_view baseline_name) {
  SG_ASSIGN_OR_RETURN(Tensor mine, materialize_weight(shard, function, name));
  SG_ASSIGN_OR_RETURN(Tensor ref, materialize_weight(baseline, baseline_function, baseline_name));
  WeightError e;
  e.shape = mine.shape();
  e.baseline_shape = ref.shape();
  if (e.shape != e.baseline_shape) {
    e.rel_error = e.sqnr_db = kNoValue;
    return e;
  }
  double err = 0, norm = 0;
  for_each_chunk(mine, &ref, [&](const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(a[i]) - b[i];
      err += d * d;
      norm += static_cast<double>(b[i]) * b[i];
    }
  });
  e.rel_error = norm > 0 ? std::sqrt(err / norm) : (err > 0 ? kNoValue : 0.0);
  e.sqnr_db = err > 0 ? 10.0 * std::log10(norm / err) : std::numeric_limits<double>::infinity();
  return e;
}

int64_t WeightDiagnosticsResult::flagged() const {
  return std::count_if(weights.begin(), weights.end(),
                       [](const WeightDiagnostic& w) { return !w.flags.empty(); });
}

Result<WeightDiagnosticsResult> diagnose_weights(const Shard& shard, const Shard* baseline) {
  // Every weight reference is checked, not only the compressed ones read below: a truncated
  // weight.bin is refused here as exec and ane-validator refuse it.
  SG_TRY(verify_blob_refs(shard));
  if (baseline != nullptr) SG_TRY(verify_blob_refs(*baseline));
  WeightDiagnosticsResult r;
  r.shard = shard.path();
  SG_ASSIGN_OR_RETURN(r.fingerprint, shard.fingerprint());
  if (baseline != nullptr) {
    r.baseline = baseline->path();
    SG_ASSIGN_OR_RETURN(r.baseline_fingerprint, baseline->fingerprint());
  }
  for (const Function& fn : shard.program().functions) {
    // The baseline's weights of the same function, by use.
    const Function* base_fn = baseline ? baseline->program().function(fn.name) : nullptr;
    std::map<std::string, std::string> base_by_key;
    if (base_fn != nullptr) {
      for (const WeightUse& u : weight_uses(*base_fn)) base_by_key.emplace(u.key, u.value);
    }
    for (const WeightUse& u : weight_uses(fn)) {
      if (!u.producer->is_constexpr()) continue;  // plain consts are not compressed
      WeightDiagnostic w;
      w.function = fn.name;
      w.name = u.value;
      w.op_type = u.producer->type;
      w.key = u.key;
      w.consumer_type = u.consumer_type;
      SG_ASSIGN_OR_RETURN(std::optional<WeightCodes> codes, weight_codes(shard, fn, u.value));
      if (codes.has_value()) {
        w.shape = codes->shape;
        w.elements = numel(codes->shape);
        w.groups = codes->group_count();
        w.group_elements = numel(codes->block);
        w.code_bits = codes->bits;
        w.form = form_of(*codes);
        code_statistics(*codes, w);
      } else {
        SG_ASSIGN_OR_RETURN(Tensor dense, materialize_weight(shard, fn, u.value));
        w.shape = dense.shape();
        w.elements = dense.numel();
        w.groups = 0;
        w.form = fmt::format("{} (decoded; no per-element codes)", u.producer->type);
        decoded_statistics(dense, w);
      }
      if (baseline != nullptr) {
        auto b = base_by_key.find(u.key);
        if (base_fn == nullptr) {
          w.baseline_name = fmt::format("none: the baseline has no function '{}'", fn.name);
        } else if (b == base_by_key.end()) {
          w.baseline_name = fmt::format("none: no weight of the baseline feeds '{}'", u.key);
        } else {
          SG_TRY(compare_with_baseline(shard, fn, *baseline, *base_fn, b->second, w));
        }
      }
      w.flags = weight_flags_for(w);
      r.weights.push_back(std::move(w));
    }
  }
  return r;
}

}  // namespace sg
