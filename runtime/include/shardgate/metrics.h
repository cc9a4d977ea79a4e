// Fidelity metrics between a candidate vector and a reference vector.
//
// Pure functions over spans of doubles (callers convert fp16/fp32 tensors first); every sum is
// accumulated in double precision. The caller guarantees equal lengths and finite values
// (fidelity.h checks shapes and scans for NaN/Inf before calling). Zero-vector rules follow
// README.md (Metrics): both vectors zero is "degenerate" (cosine undefined, reported, not gated);
// exactly one zero gives cosine 0. Non-finite results (+inf SNR for identical vectors, +inf norm
// ratio against a zero reference) are returned as IEEE infinities; reports spell them "inf".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace sg {

// Σ x_i²
double sum_squares(std::span<const double> x);
// True when every element is exactly zero.
bool is_all_zero(std::span<const double> x);

// cos = Σ c_i·r_i / (‖c‖·‖r‖). Exactly one zero vector → 0. Both zero → NaN (degenerate; the
// caller classifies the row before gating). Clamped to [-1, 1] against rounding.
double cosine_similarity(std::span<const double> cand, std::span<const double> ref);

// norm ratio = ‖c‖ / ‖r‖. ‖r‖ = 0 and ‖c‖ > 0 → +inf; both zero → NaN.
double norm_ratio(std::span<const double> cand, std::span<const double> ref);

// relative L2 = ‖c − r‖ / ‖r‖. ‖r‖ = 0: 0 when c is zero too, else +inf.
double relative_l2(std::span<const double> cand, std::span<const double> ref);

// max abs error = max_i |c_i − r_i| (0 for empty vectors).
double max_abs_error(std::span<const double> cand, std::span<const double> ref);

// SNR in dB = 10·log10(Σ r_i² / Σ (r_i − c_i)²). Identical vectors → +inf; a zero reference
// with a non-zero error → −inf; both sums zero → NaN.
double snr_db(std::span<const double> cand, std::span<const double> ref);

// Index of the largest element; ties go to the lowest index (numpy.argmax). −1 when empty.
int64_t argmax(std::span<const double> x);

// Indices of the k largest elements, largest first; ties go to the lower index (the order of
// numpy.argsort(-x, kind="stable")). k is clamped to the length.
std::vector<int64_t> topk_indices(std::span<const double> x, int64_t k);

// top-k overlap = |topk(c) ∩ topk(r)| / k, with k clamped to the length (0 < k).
double topk_overlap(std::span<const double> cand, std::span<const double> ref, int64_t k);

// KL(softmax(r) ‖ softmax(c)) = Σ p_i·(log p_i − log q_i), p = softmax(r), q = softmax(c),
// computed with max-subtracted log-softmax so large logits do not overflow. In nats.
double kl_divergence_softmax(std::span<const double> ref_logits,
                             std::span<const double> cand_logits);

// Percentile p (0..100) of `values` with linear interpolation between closest ranks, the
// definition of numpy.percentile's default method: rank = p/100·(n−1). NaN when empty.
double percentile(std::vector<double> values, double p);

// Every metric of one row (one position). Logits metrics only when `logits` is set.
struct RowMetricValues {
  bool degenerate = false;  // both vectors all zero: no metric is meaningful
  double cosine = 0;
  double norm_ratio = 0;
  double rel_l2 = 0;
  double max_abs = 0;
  double snr_db = 0;
  std::optional<double> top1;          // 1 when argmax agrees, else 0
  std::optional<double> topk_overlap;  // |topk ∩ topk| / k
  std::optional<double> kl;            // KL(softmax(ref) ‖ softmax(cand))
};

// The row metrics of one row given in pieces, so a caller converts a bounded chunk of a large
// row to double at a time (fidelity.h compares 100000-wide logits rows and whole tensors this
// way) instead of the whole tensor. Every sum is accumulated element by element in row order,
// exactly as compute_row_metrics does over the whole row, so the numbers are the same bits.
// With `logits`, each piece must hold whole logits vectors (a multiple of `vocab`; with
// vocab = 0 the whole row is one vector and must be one piece). Values must be finite.
class RowMetricAccumulator {
 public:
  RowMetricAccumulator(bool logits, int64_t topk, int64_t vocab);
  void add(std::span<const double> cand, std::span<const double> ref);
  RowMetricValues finish() const;

 private:
  bool logits_;
  int64_t topk_;
  int64_t vocab_;
  size_t size_ = 0;
  bool cand_nonzero_ = false, ref_nonzero_ = false;
  double dot_ = 0, cc_ = 0, rr_ = 0, ee_ = 0, max_abs_ = 0;
  size_t vectors_ = 0, vector_size_ = 0;
  double agree_ = 0, overlap_, kl_ = 0, worst_cosine_;
};

// Computes the row metrics. For logits rows made of several vectors (a batch dimension in
// front of the position axis, or no position axis), `vocab` is the length of one logits
// vector: top-1 becomes the fraction of vectors whose argmax agrees, top-k overlap and cosine
// the minimum and KL the maximum over the vectors. vocab = 0 means the whole row is one vector.
RowMetricValues compute_row_metrics(std::span<const double> cand, std::span<const double> ref,
                                    bool logits, int64_t topk, int64_t vocab = 0);

}  // namespace sg
