// Fidelity metrics (metrics.h). Every accumulation is in double precision; each function
// states its formula above it.
#include "shardgate/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sg {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ‖c − r‖² = Σ (c_i − r_i)²
double sum_squared_error(std::span<const double> cand, std::span<const double> ref) {
  double s = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = cand[i] - ref[i];
    s += d * d;
  }
  return s;
}

// log softmax(x)_i = x_i − max − log Σ_j exp(x_j − max)
std::vector<double> log_softmax(std::span<const double> x) {
  std::vector<double> out(x.size());
  if (x.empty()) return out;
  const double m = *std::max_element(x.begin(), x.end());
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  const double lse = m + std::log(s);
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - lse;
  return out;
}

}  // namespace

// Σ x_i²
double sum_squares(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v * v;
  return s;
}

bool is_all_zero(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return v == 0.0; });
}

// cos = dot / (‖c‖·‖r‖) from the three sums; one zero vector → 0; both zero → NaN (degenerate).
static double cosine_from_sums(double dot, double cc, double rr) {
  if (cc == 0 && rr == 0) return kNaN;
  if (cc == 0 || rr == 0) return 0.0;
  // One square root of cc·rr where that product is a normal number: for c = r it gives exactly
  // 1 (sqrt of the rounded x² is x), where √cc·√rr read 0.9999999999999998 and identical
  // tensors failed --min-cosine 1. Each norm's own root where cc·rr would underflow or overflow.
  const double prod = cc * rr;
  const double c = std::isnormal(prod) ? dot / std::sqrt(prod) : dot / (std::sqrt(cc) * std::sqrt(rr));
  return std::clamp(c, -1.0, 1.0);
}

// cos = Σ c_i·r_i / (‖c‖·‖r‖); one zero vector → 0; both zero → NaN (degenerate).
double cosine_similarity(std::span<const double> cand, std::span<const double> ref) {
  double dot = 0, cc = 0, rr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    dot += cand[i] * ref[i];
    cc += cand[i] * cand[i];
    rr += ref[i] * ref[i];
  }
  return cosine_from_sums(dot, cc, rr);
}

// norm ratio = ‖c‖ / ‖r‖, from cc = Σ c_i², rr = Σ r_i²
static double norm_ratio_from_sums(double cc, double rr) {
  if (rr == 0) return cc == 0 ? kNaN : kInf;
  return std::sqrt(cc) / std::sqrt(rr);
}

double norm_ratio(std::span<const double> cand, std::span<const double> ref) {
  return norm_ratio_from_sums(sum_squares(cand), sum_squares(ref));
}

// relative L2 = ‖c − r‖ / ‖r‖, from ee = Σ (c_i − r_i)², rr = Σ r_i²
static double relative_l2_from_sums(double ee, double rr) {
  if (rr == 0) return ee == 0 ? 0.0 : kInf;
  return std::sqrt(ee) / std::sqrt(rr);
}

double relative_l2(std::span<const double> cand, std::span<const double> ref) {
  return relative_l2_from_sums(sum_squared_error(cand, ref), sum_squares(ref));
}

// max abs error = max_i |c_i − r_i|
double max_abs_error(std::span<const double> cand, std::span<const double> ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::fabs(cand[i] - ref[i]));
  return m;
}

// SNR dB = 10·log10(Σ r_i² / Σ (r_i − c_i)²), from rr and ee
static double snr_db_from_sums(double rr, double ee) {
  if (ee == 0) return rr == 0 ? kNaN : kInf;
  if (rr == 0) return -kInf;
  return 10.0 * (std::log10(rr) - std::log10(ee));
}

double snr_db(std::span<const double> cand, std::span<const double> ref) {
  return snr_db_from_sums(sum_squares(ref), sum_squared_error(cand, ref));
}

// argmax with ties to the lowest index.
int64_t argmax(std::span<const double> x) {
  if (x.empty()) return -1;
  size_t best = 0;
  for (size_t i = 1; i < x.size(); ++i) {
    if (x[i] > x[best]) best = i;
  }
  return static_cast<int64_t>(best);
}

// The k largest, largest first, ties to the lower index.
std::vector<int64_t> topk_indices(std::span<const double> x, int64_t k) {
  const size_t n = x.size();
  const size_t kk = k <= 0 ? 0 : std::min(n, static_cast<size_t>(k));
  std::vector<int64_t> idx(n);
  std::iota(idx.begin(), idx.end(), int64_t{0});
  auto before = [&](int64_t a, int64_t b) {
    const double va = x[static_cast<size_t>(a)], vb = x[static_cast<size_t>(b)];
    return va > vb || (va == vb && a < b);
  };
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(kk), idx.end(), before);
  idx.resize(kk);
  return idx;
}

// top-k overlap = |topk(c) ∩ topk(r)| / k
double topk_overlap(std::span<const double> cand, std::span<const double> ref, int64_t k) {
  std::vector<int64_t> a = topk_indices(cand, k), b = topk_indices(ref, k);
  if (b.empty()) return kNaN;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<int64_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return static_cast<double>(common.size()) / static_cast<double>(b.size());
}

// KL(p ‖ q) = Σ p_i·(log p_i − log q_i), p = softmax(ref), q = softmax(cand)
double kl_divergence_softmax(std::span<const double> ref_logits,
                             std::span<const double> cand_logits) {
  const std::vector<double> lp = log_softmax(ref_logits), lq = log_softmax(cand_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) {
    const double p = std::exp(lp[i]);
    if (p > 0) kl += p * (lp[i] - lq[i]);
  }
  return std::max(kl, 0.0);  // rounding can leave a tiny negative for equal distributions
}

// numpy.percentile, method "linear": rank = p/100·(n−1), interpolate between neighbours.
double percentile(std::vector<double> values, double p) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  if (frac == 0 || values[lo] == values[hi]) return values[lo];
  return values[lo] + (values[hi] - values[lo]) * frac;
}

RowMetricAccumulator::RowMetricAccumulator(bool logits, int64_t topk, int64_t vocab)
    : logits_(logits), topk_(topk), vocab_(vocab), overlap_(kInf), worst_cosine_(kInf) {}

// The sums of cosine_similarity, sum_squares, sum_squared_error and max_abs_error, each in its
// own accumulator in element order, so a row fed in pieces gets the bits of the whole row.
void RowMetricAccumulator::add(std::span<const double> cand, std::span<const double> ref) {
  for (size_t i = 0; i < ref.size(); ++i) {
    const double c = cand[i], r = ref[i];
    cand_nonzero_ = cand_nonzero_ || c != 0.0;
    ref_nonzero_ = ref_nonzero_ || r != 0.0;
    dot_ += c * r;
    cc_ += c * c;
    rr_ += r * r;
    const double d = c - r;
    ee_ += d * d;
    max_abs_ = std::max(max_abs_, std::fabs(d));
  }
  size_ += ref.size();
  if (!logits_ || ref.empty()) return;
  const size_t v = vocab_ > 0 ? static_cast<size_t>(vocab_) : ref.size();
  vector_size_ = v;
  for (size_t b = 0; b < ref.size() / v; ++b) {
    const auto c = cand.subspan(b * v, v), r = ref.subspan(b * v, v);
    if (argmax(c) == argmax(r)) agree_ += 1;
    overlap_ = std::min(overlap_, topk_overlap(c, r, topk_));
    kl_ = std::max(kl_, kl_divergence_softmax(r, c));
    // Vectors zero on both sides say nothing about the worst cosine (below) and are skipped.
    const double cb = cosine_similarity(c, r);
    if (!std::isnan(cb)) worst_cosine_ = std::min(worst_cosine_, cb);
    ++vectors_;
  }
}

RowMetricValues RowMetricAccumulator::finish() const {
  RowMetricValues m;
  if (!cand_nonzero_ && !ref_nonzero_) {
    m.degenerate = true;
    return m;
  }
  m.cosine = cosine_from_sums(dot_, cc_, rr_);
  m.norm_ratio = norm_ratio_from_sums(cc_, rr_);
  m.rel_l2 = relative_l2_from_sums(ee_, rr_);
  m.max_abs = max_abs_;
  m.snr_db = snr_db_from_sums(rr_, ee_);
  if (logits_ && size_ > 0) {
    m.top1 = agree_ / static_cast<double>(vectors_);
    m.topk_overlap = overlap_;
    m.kl = kl_;
    // Several logits vectors in one row (no position axis, or a batch in front of it): the
    // cosine of their concatenation is dominated by the healthy ones (one token at 0.43 among
    // 64 read 0.987 and passed), so the row takes its worst vector's cosine, as top-k overlap
    // takes its minimum.
    if (vectors_ > 1 && vector_size_ > 1 && worst_cosine_ != kInf) m.cosine = worst_cosine_;
  }
  return m;
}

RowMetricValues compute_row_metrics(std::span<const double> cand, std::span<const double> ref,
                                    bool logits, int64_t topk, int64_t vocab) {
  RowMetricAccumulator acc(logits, topk, vocab);
  acc.add(cand, ref);
  return acc.finish();
}

}  // namespace sg
