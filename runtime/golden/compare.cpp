// The comparison engine (fidelity.h): splits a checkpoint tensor into per-position rows and
// measures every row; compare_sources matches two golden sources by tensor name;
// describe_nonfinite words where a run first produced NaN/Inf.
#include "shardgate/fidelity.h"

#include "shardgate/executor.h"
#include "shardgate/golden.h"
#include "shardgate/io.h"
#include "shardgate/memory_budget.h"
#include "shardgate/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <span>

namespace sg {
namespace {


enum class DTypeClass { kFloat, kInteger, kBool, kOther };

DTypeClass dtype_class(DType t) {
  if (dtype_is_float(t)) return DTypeClass::kFloat;
  if (dtype_is_integer(t)) return DTypeClass::kInteger;
  if (t == DType::kBool) return DTypeClass::kBool;
  return DTypeClass::kOther;
}

const char* class_name(DTypeClass c) {
  switch (c) {
    case DTypeClass::kFloat: return "float";
    case DTypeClass::kInteger: return "integer";
    case DTypeClass::kBool: return "bool";
    case DTypeClass::kOther: break;
  }
  return "non-numeric";
}

// The first NaN/Inf of `v`, as an index, or -1.
int64_t first_nonfinite(std::span<const double> v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) return static_cast<int64_t>(i);
  }
  return -1;
}

// Position of a flat index along axis `pa` of `shape` (-1 when pa < 0).
int64_t position_of(const Shape& shape, int64_t pa, int64_t flat) {
  if (pa < 0) return -1;
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(pa) + 1; d < shape.size(); ++d) inner *= shape[d];
  return (flat / inner) % shape[static_cast<size_t>(pa)];
}

// Elements converted to double per tensor at a time: 512 KiB each, so comparing a 51 MB fp16
// logits pair holds about 1 MiB of doubles instead of 16 bytes per element of both tensors.
constexpr int64_t kChunkElements = int64_t{1} << 16;

// Row p of a tensor split along its position axis: `outer` blocks of `inner` consecutive
// elements, block o starting at flat index (o * positions + p) * inner. Element j of the row
// is element j % inner of block j / inner.
struct RowLayout {
  int64_t positions = 1, outer = 1, inner = 1;
  int64_t size() const { return outer * inner; }
  int64_t flat(int64_t p, int64_t j) const { return ((j / inner) * positions + p) * inner + j % inner; }
};

// Converts elements [j0, j0 + out.size()) of row p of `t` to double.
void read_row(const Tensor& t, const RowLayout& row, int64_t p, int64_t j0, std::span<double> out) {
  const int64_t end = j0 + static_cast<int64_t>(out.size());
  for (int64_t j = j0; j < end;) {
    const int64_t base = row.flat(p, j);
    const int64_t take = std::min(row.inner - j % row.inner, end - j);
    for (int64_t i = 0; i < take; ++i) out[static_cast<size_t>(j - j0 + i)] = element_as_double(t, base + i);
    j += take;
  }
}

}  // namespace

const std::array<MetricInfo, kMetricCount>& metric_table() {
  static constexpr double SG_METRIC_INF = std::numeric_limits<double>::infinity();
  static const std::array<MetricInfo, kMetricCount> table = {{
#define SG_METRIC(id, name, key, flag, higher, lo, hi, range, help) \
  {Metric::id, name, key, flag, higher, lo, hi, range, help},
#include "shardgate/metrics.def"
#undef SG_METRIC
  }};
  return table;
}

const MetricInfo& metric_info(Metric m) { return metric_table()[static_cast<size_t>(m)]; }

const char* metric_name(Metric m) { return metric_info(m).name; }

std::optional<Metric> metric_from_name(std::string_view name) {
  for (const MetricInfo& info : metric_table()) {
    if (name == info.name) return info.metric;
  }
  return std::nullopt;
}

bool metric_higher_is_better(Metric m) { return metric_info(m).higher_is_better; }

std::string CheckIdentity::id() const {
  if (labels.empty()) return checkpoint;
  std::string s = checkpoint + "[";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += labels[i].first + "=" + labels[i].second;
  }
  return s + "]";
}

Result<CheckResult> compare_tensors(const CheckIdentity& identity, const Tensor& candidate,
                                    const Tensor& reference, std::optional<int64_t> position_axis,
                                    const MetricOptions& options) {
  const std::string where = "checkpoint '" + identity.id() + "'";
  SG_CHECK(options.topk >= 1, ErrorCode::kUsage, "{}: top-k must be at least 1, got {}", where,
           options.topk);
  const DTypeClass cc = dtype_class(candidate.dtype()), rc = dtype_class(reference.dtype());
  SG_CHECK(cc != DTypeClass::kOther && rc != DTypeClass::kOther, ErrorCode::kShape,
           "{}: cannot compare {} candidate with {} reference (numeric tensors only)", where,
           dtype_name(candidate.dtype()), dtype_name(reference.dtype()));
  SG_CHECK(cc == rc, ErrorCode::kShape,
           "{}: dtype mismatch: candidate is {} ({}), reference is {} ({})", where,
           dtype_name(candidate.dtype()), class_name(cc), dtype_name(reference.dtype()),
           class_name(rc));
  SG_CHECK(candidate.shape() == reference.shape(), ErrorCode::kShape,
           "{}: shape mismatch: candidate {} vs reference {} (no reshape is attempted)", where,
           shape_str(candidate.shape()), shape_str(reference.shape()));

  const Shape& shape = reference.shape();
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t pa = -1;
  if (position_axis) {
    pa = *position_axis < 0 ? *position_axis + rank : *position_axis;
    SG_CHECK(pa >= 0 && pa < rank, ErrorCode::kShape,
             "{}: position axis {} is outside a tensor of rank {} (shape {})", where,
             *position_axis, rank, shape_str(shape));
  }

  CheckResult check;
  check.identity = identity;
  check.shape = shape;
  check.candidate_dtype = std::string(dtype_name(candidate.dtype()));
  check.reference_dtype = std::string(dtype_name(reference.dtype()));
  check.position_axis = pa;

  const int64_t positions = pa >= 0 ? shape[static_cast<size_t>(pa)] : 1;
  RowLayout layout;
  layout.positions = positions;
  if (pa >= 0) {
    for (int64_t d = 0; d < pa; ++d) layout.outer *= shape[static_cast<size_t>(d)];
    for (int64_t d = pa + 1; d < rank; ++d) layout.inner *= shape[static_cast<size_t>(d)];
  } else {
    layout.inner = reference.numel();
  }
  const bool logits = identity.kind == "logits";
  // One logits vector is the last axis, unless the position axis is the last axis itself.
  const int64_t vocab = (rank > 0 && pa != rank - 1) ? shape.back() : 0;

  // Rows are converted to double one bounded chunk at a time and dropped once measured; only
  // the per-row results stay. A chunk holds whole logits vectors (top-k and KL need a whole
  // vector); with vocab = 0 (position axis last) the row is one vector and one chunk.
  const int64_t row_size = layout.size();
  int64_t chunk = std::min(row_size, kChunkElements);
  if (logits) {
    const int64_t v = vocab > 0 ? vocab : row_size;
    chunk = v > 0 ? std::max<int64_t>(1, kChunkElements / v) * v : 0;
    chunk = std::min(chunk, row_size);
  }
  // The conversion buffers count against the memory budget like any value, so a comparison
  // that converted whole tensors again would be refused under a budget a row fits in
  // (tests/golden/compare_test.cpp CompareMemory).
  SG_TRY(check_memory_budget(
      static_cast<uint64_t>(chunk) * 2 * sizeof(double),
      fmt::format("{}: comparing rows of {} elements, {} at a time", where, row_size, chunk)));
  std::vector<double> crow(static_cast<size_t>(chunk)), rrow(static_cast<size_t>(chunk));

  // The first NaN/Inf of each tensor in flat order: a row's blocks are in flat order, so the
  // first one a row finds is that row's smallest flat index, and the smallest over the rows
  // is the tensor's first.
  int64_t bad_c = -1, bad_r = -1;
  double bad_c_value = 0, bad_r_value = 0;
  auto note_bad = [](int64_t flat, double value, int64_t& bad, double& bad_value) {
    if (bad < 0 || flat < bad) {
      bad = flat;
      bad_value = value;
    }
  };

  check.rows.reserve(static_cast<size_t>(positions));
  for (int64_t p = 0; p < positions; ++p) {
    RowResult row;
    row.position = pa >= 0 ? p : -1;
    RowMetricAccumulator acc(logits, options.topk, vocab);
    bool row_bad_c = false, row_bad_r = false;
    for (int64_t j0 = 0; j0 < row_size; j0 += chunk) {
      const size_t n = static_cast<size_t>(std::min(chunk, row_size - j0));
      const std::span<double> c(crow.data(), n), r(rrow.data(), n);
      read_row(candidate, layout, p, j0, c);
      read_row(reference, layout, p, j0, r);
      if (!row_bad_c) {
        if (const int64_t i = first_nonfinite(c); i >= 0) {
          row_bad_c = true;
          note_bad(layout.flat(p, j0 + i), c[static_cast<size_t>(i)], bad_c, bad_c_value);
        }
      }
      if (!row_bad_r) {
        if (const int64_t i = first_nonfinite(r); i >= 0) {
          row_bad_r = true;
          note_bad(layout.flat(p, j0 + i), r[static_cast<size_t>(i)], bad_r, bad_r_value);
        }
      }
      if (!row_bad_c && !row_bad_r) acc.add(c, r);
    }
    if (row_bad_c || row_bad_r) {
      row.nonfinite = true;
      check.rows.push_back(std::move(row));
      continue;
    }
    const RowMetricValues m = acc.finish();
    row.degenerate = m.degenerate;
    if (m.degenerate && rc != DTypeClass::kFloat) {
      // Ids or flags zero on both sides (token 0 everywhere, an all-false mask) match exactly:
      // that is the evidence the exact-match rule asks for (max_abs 0), not a row with nothing
      // to measure; such a check failed "every row degenerate: no evidence".
      row.degenerate = false;
      row.value(Metric::kMaxAbs) = 0.0;
    }
    if (!m.degenerate) {
      // The cosine of two one-element vectors is their signs' product (±1): +1 cannot judge
      // fidelity (a speech probability 3% off still has cosine 1), so such rows have none and
      // the norm ratio and the errors judge them (make_golden_report notes it). -1 is a value
      // of the wrong sign, which the norm ratio cannot see (a negated output has ratio 1 and
      // passed): it is kept, and fails any min_cosine above -1.
      if (row_size > 1 || m.cosine < 0) row.value(Metric::kCosine) = m.cosine;
      row.value(Metric::kNormRatio) = m.norm_ratio;
      row.value(Metric::kRelL2) = m.rel_l2;
      row.value(Metric::kMaxAbs) = m.max_abs;
      row.value(Metric::kSnrDb) = m.snr_db;
      row.value(Metric::kTop1) = m.top1;
      row.value(Metric::kTopkOverlap) = m.topk_overlap;
      row.value(Metric::kKl) = m.kl;
    }
    check.rows.push_back(std::move(row));
  }
  if (bad_c >= 0 || bad_r >= 0) {
    NonfiniteLocation loc;
    loc.tensor = bad_c >= 0 ? "candidate" : "reference";
    loc.flat_index = bad_c >= 0 ? bad_c : bad_r;
    loc.value = bad_c >= 0 ? bad_c_value : bad_r_value;
    loc.position = position_of(shape, pa, loc.flat_index);
    check.nonfinite = loc;
  }
  return check;
}

Result<FidelityRun> compare_sources(const GoldenSource& candidate, const GoldenSource& reference,
                                    const MetricOptions& options) {
  FidelityRun run;
  run.command = "compare";
  run.options = options;
  for (const auto* src : {&candidate, &reference}) {
    ReportInput in;
    in.role = src == &candidate ? "candidate" : "reference";
    in.path = src->path();
    SG_ASSIGN_OR_RETURN(in.sha256, sha256_file(src->identity_file()));
    run.inputs.push_back(std::move(in));
  }

  std::set<std::string> reference_names;
  for (const GoldenEntry& ref : reference.entries()) {
    reference_names.insert(ref.name);
    const GoldenEntry* cand = candidate.find(ref.name);
    if (!cand) {
      run.reference_only.push_back(ref.name);
      continue;
    }
    SG_ASSIGN_OR_RETURN(Tensor rt, reference.load(ref.name));
    SG_ASSIGN_OR_RETURN(Tensor ct, candidate.load(ref.name));
    if (ref.kind == "input") {
      // Inputs are not scored: dumps taken on different prompts cannot be compared at all.
      const std::string where =
          fmt::format("{} vs {}: input '{}'", candidate.path(), reference.path(), ref.name);
      SG_CHECK(ct.shape() == rt.shape(), ErrorCode::kShape,
               "{}: candidate shape {} differs from reference {}: the dumps were taken on "
               "different inputs", where, shape_str(ct.shape()), shape_str(rt.shape()));
      SG_CHECK(ct.dtype() != DType::kString && rt.dtype() != DType::kString, ErrorCode::kShape,
               "{}: string inputs cannot be compared", where);
      // Element by element: no whole-tensor copy of an input (bounded memory).
      for (int64_t i = 0; i < rt.numel(); ++i) {
        const double cv = element_as_double(ct, i), rv = element_as_double(rt, i);
        SG_CHECK(cv == rv || (std::isnan(cv) && std::isnan(rv)), ErrorCode::kShape,
                 "{}: candidate and reference differ at flat index {} ({} vs {}): the dumps "
                 "were taken on different inputs", where, i, cv, rv);
      }
      run.notes.push_back("input '" + ref.name + "' is identical in both dumps");
      continue;
    }
    SG_TRY(require_position_axis(reference, ref));
    CheckIdentity id;
    id.checkpoint = ref.name;
    id.kind = ref.kind;
    id.layer = ref.layer;
    auto check = compare_tensors(id, ct, rt, ref.position_axis, options);
    if (!check) {
      return std::move(check).take_status().with_context(
          fmt::format("{} vs {}", candidate.path(), reference.path()));
    }
    run.checks.push_back(std::move(*check));
  }
  for (const GoldenEntry& cand : candidate.entries()) {
    if (!reference_names.count(cand.name)) run.candidate_only.push_back(cand.name);
  }
  SG_CHECK(!run.checks.empty(), ErrorCode::kUsage,
           "no tensor of '{}' matches a scored tensor of '{}' by name (candidate has {} "
           "tensors, reference {}): nothing to compare", candidate.path(), reference.path(),
           candidate.entries().size(), reference.entries().size());
  return run;
}

std::string nonfinite_reach(const RunResult& run) {
  if (!run.first_nonfinite) return "";
  std::vector<std::string> reached, finite;
  for (const auto& [name, t] : run.outputs) {
    int64_t bad = 0;
    for (int64_t k = 0; k < t.numel(); ++k) bad += std::isfinite(element_as_double(t, k)) ? 0 : 1;
    if (bad > 0) {
      reached.push_back(fmt::format("'{}' ({} of {} values non-finite)", name, bad, t.numel()));
    } else {
      finite.push_back(fmt::format("'{}'", name));
    }
  }
  const NonFinite& last = run.last_nonfinite ? *run.last_nonfinite : *run.first_nonfinite;
  const std::string travel =
      run.nonfinite_ops <= 1
          ? std::string("no op after it produced NaN/Inf")
          : fmt::format("NaN/Inf in {} op outputs, the last op #{} '{}' output '{}'",
                        run.nonfinite_ops, last.op_index, last.op_type, last.output);
  if (run.outputs.empty()) return fmt::format("the run stopped there; {}", travel);
  if (reached.empty()) {
    return fmt::format("every output is finite: later ops washed it out ({})", travel);
  }
  std::string out = fmt::format("it reaches output{} {}", reached.size() == 1 ? "" : "s",
                                fmt::join(reached, ", "));
  if (!finite.empty()) {
    out += fmt::format("; output{} {} {} finite: later ops washed it out there",
                       finite.size() == 1 ? "" : "s", fmt::join(finite, ", "),
                       finite.size() == 1 ? "is" : "are");
  }
  return out + "; " + travel;
}

std::string describe_nonfinite(const NonFinite& nf) {
  return fmt::format("function '{}', op #{} '{}' output '{}' flat index {} = {}", nf.function,
                     nf.op_index, nf.op_type, nf.output, nf.flat_index, nf.value);
}

}  // namespace sg
