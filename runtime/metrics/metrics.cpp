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

// cos = Σ c_i·r_i / (‖c‖·‖r‖); one zero vector → 0; both zero → NaN (degenerate).
double cosine_similarity(std::span<const double> cand, std::span<const double> ref) {
  double dot = 0, cc = 0, rr = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    dot += cand[i] * ref[i];
    cc += cand[i] * cand[i];
    rr += ref[i] * ref[i];
  }
  if (cc == 0 && rr == 0) return kNaN;
  if (cc == 0 || rr == 0) return 0.0;
  // One square root of cc·rr where that product is a normal number: for c = r it gives exactly
  // 1 (sqrt of the rounded x² is x), where √cc·√rr read 0.9999999999999998 and identical
  // tensors failed --min-cosine 1. Each norm's own root where cc·rr would underflow or overflow.
  const double prod = cc * rr;
  const double c = std::isnormal(prod) ? dot / std::sqrt(prod) : dot / (std::sqrt(cc) * std::sqrt(rr));
  return std::clamp(c, -1.0, 1.0);
}

// norm ratio = ‖c‖ / ‖r‖
double norm_ratio(std::span<const double> cand, std::span<const double> ref) {
  const double cc = sum_squares(cand), rr = sum_squares(ref);
  if (rr == 0) return cc == 0 ? kNaN : kInf;
  return std::sqrt(cc) / std::sqrt(rr);
}

// relative L2 = ‖c − r‖ / ‖r‖
double relative_l2(std::span<const double> cand, std::span<const double> ref) {
  const double ee = sum_squared_error(cand, ref), rr = sum_squares(ref);
  if (rr == 0) return ee == 0 ? 0.0 : kInf;
  return std::sqrt(ee) / std::sqrt(rr);
}

// max abs error = max_i |c_i − r_i|
double max_abs_error(std::span<const double> cand, std::span<const double> ref) {
  double m = 0;
  for (size_t i = 0; i < ref.size(); ++i) m = std::max(m, std::fabs(cand[i] - ref[i]));
  return m;
}

// SNR dB = 10·log10(Σ r_i² / Σ (r_i − c_i)²)
double snr_db(std::span<const double> cand, std::span<const double> ref) {
  const double rr = sum_squares(ref), ee = sum_squared_error(cand, ref);
  if (ee == 0) return rr == 0 ? kNaN : kInf;
  if (rr == 0) return -kInf;
  return 10.0 * (std::log10(rr) - std::log10(ee));
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

RowMetricValues compute_row_metrics(std::span<const double> cand, std::span<const double> ref,
                                    bool logits, int64_t topk, int64_t vocab) {
  RowMetricValues m;
  if (is_all_zero(cand) && is_all_zero(ref)) {
    m.degenerate = true;
    return m;
  }
  m.cosine = cosine_similarity(cand, ref);
  m.norm_ratio = norm_ratio(cand, ref);
  m.rel_l2 = relative_l2(cand, ref);
  m.max_abs = max_abs_error(cand, ref);
  m.snr_db = snr_db(cand, ref);
  if (logits && !ref.empty()) {
    const size_t v = vocab > 0 ? static_cast<size_t>(vocab) : ref.size();
    const size_t count = ref.size() / v;
    double agree = 0, overlap = kInf, kl = 0;
    for (size_t b = 0; b < count; ++b) {
      const auto c = cand.subspan(b * v, v), r = ref.subspan(b * v, v);
      if (argmax(c) == argmax(r)) agree += 1;
      overlap = std::min(overlap, topk_overlap(c, r, topk));
      kl = std::max(kl, kl_divergence_softmax(r, c));
    }
    m.top1 = agree / static_cast<double>(count);
    m.topk_overlap = overlap;
    m.kl = kl;
    // Several logits vectors in one row (no position axis, or a batch in front of it): the
    // cosine of their concatenation is dominated by the healthy ones (one token at 0.43 among
    // 64 read 0.987 and passed), so the row takes its worst vector's cosine, as top-k overlap
    // takes its minimum. Vectors zero on both sides say nothing and are skipped.
    if (count > 1 && v > 1) {
      double worst = kInf;
      for (size_t b = 0; b < count; ++b) {
        const double cb = cosine_similarity(cand.subspan(b * v, v), ref.subspan(b * v, v));
        if (!std::isnan(cb)) worst = std::min(worst, cb);
      }
      if (worst != kInf) m.cosine = worst;
    }
  }
  return m;
}

}  // namespace sg
