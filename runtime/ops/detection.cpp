// non_maximum_suppression (coremltools 9.0 iOS15 and iOS17 tensor_operation.py), with the
// selection rules of coremltools' own reference (tests/iOS14/test_tensor_operation.py, which
// is TensorFlow's non_max_suppression):
//   - boxes are (center x, center y, width, height); a box's score is its best class score;
//   - candidates have score > score_threshold (iOS15 only; iOS17 has no threshold), taken in
//     descending score (ties: lower index first); a candidate is dropped when its IoU with an
//     already selected box is > iou_threshold (IoU 0 when the union has no area);
//   - per_class_suppression: each box belongs to its argmax class and competes only within it;
//     the survivors of all classes are listed in descending score order;
//   - nothing selected (every score at or below the threshold): the best-scoring box is
//     returned alone; more than max_boxes: the first max_boxes;
//   - padding: boxes and scores 0, indices -1.
// iOS15 layout: boxes [n, B, 4], scores [n, B, K] -> [n, M, 4], [n, M, K], [n, M], count [n].
// iOS17 layout: boxes [n, 4, B], scores [n, K, B] -> [n, 4, M], [n, K, M], [n, M].
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sg {
namespace {

double iou(const double* a, const double* b) {
  const double ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
  const double bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  const double iw = std::max(0.0, std::min(ax1, bx1) - std::max(ax0, bx0));
  const double ih = std::max(0.0, std::min(ay1, by1) - std::max(ay0, by0));
  const double inter = iw * ih;
  const double uni = a[2] * a[3] + b[2] * b[3] - inter;
  return uni > 0 ? inter / uni : 0.0;
}

}  // namespace

Status op_non_maximum_suppression(OpContext& ctx) {
  const bool ios17 = kern::opset_version(ctx) >= 17;
  SG_ASSIGN_OR_RETURN(Tensor boxes_t, ctx.get_f32("boxes"));
  SG_ASSIGN_OR_RETURN(Tensor scores_t, ctx.get_f32("scores"));
  SG_ASSIGN_OR_RETURN(double iou_threshold, ctx.get_float("iou_threshold"));
  double score_threshold = -std::numeric_limits<double>::infinity();
  if (!ios17) {
    SG_ASSIGN_OR_RETURN(score_threshold, ctx.get_float("score_threshold"));
  }
  SG_ASSIGN_OR_RETURN(int64_t max_boxes, ctx.get_int("max_boxes"));
  SG_ASSIGN_OR_RETURN(bool per_class, ctx.get_bool_or("per_class_suppression", false));
  SG_OP_CHECK(ctx, boxes_t.rank() == 3 && scores_t.rank() == 3, ErrorCode::kShape,
              "boxes {} and scores {} must be rank 3", shape_str(boxes_t.shape()), shape_str(scores_t.shape()));
  const int64_t N = boxes_t.dim(0);
  const int64_t B = ios17 ? boxes_t.dim(2) : boxes_t.dim(1);
  const int64_t K = ios17 ? scores_t.dim(1) : scores_t.dim(2);
  const Shape want_boxes = ios17 ? Shape{N, 4, B} : Shape{N, B, 4};
  const Shape want_scores = ios17 ? Shape{N, K, B} : Shape{N, B, K};
  SG_OP_CHECK(ctx, boxes_t.shape() == want_boxes && scores_t.shape() == want_scores && K >= 1, ErrorCode::kShape,
              "boxes {} and scores {} must be {} and {} ({} layout)", shape_str(boxes_t.shape()),
              shape_str(scores_t.shape()), ios17 ? "[n, 4, B]" : "[n, B, 4]", ios17 ? "[n, K, B]" : "[n, B, K]",
              ios17 ? "iOS17" : "iOS15");
  SG_OP_CHECK(ctx, max_boxes >= 1 && max_boxes <= (int64_t{1} << 24), ErrorCode::kShape,
              "max_boxes {} must be in [1, 2^24]", max_boxes);
  const float* bx = boxes_t.data<float>();
  const float* sc = scores_t.data<float>();
  auto box_at = [&](int64_t n, int64_t b, int64_t c) {
    return ios17 ? bx[(n * 4 + c) * B + b] : bx[(n * B + b) * 4 + c];
  };
  auto score_at = [&](int64_t n, int64_t b, int64_t k) {
    return ios17 ? sc[(n * K + k) * B + b] : sc[(n * B + b) * K + k];
  };
  const int64_t M = max_boxes;
  // Rows past the kept boxes stay zero.
  SG_ASSIGN_OR_RETURN(Tensor out_boxes, kern::zeros_tensor(ctx, DType::kF32, ios17 ? Shape{N, 4, M} : Shape{N, M, 4}));
  SG_ASSIGN_OR_RETURN(Tensor out_scores, kern::zeros_tensor(ctx, DType::kF32, ios17 ? Shape{N, K, M} : Shape{N, M, K}));
  std::vector<int64_t> indices(static_cast<size_t>(N * M), -1), counts(static_cast<size_t>(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> best(static_cast<size_t>(B));
    std::vector<int64_t> cls(static_cast<size_t>(B));
    std::vector<double> coords(static_cast<size_t>(B * 4));
    for (int64_t b = 0; b < B; ++b) {
      int64_t arg = 0;
      for (int64_t k = 1; k < K; ++k) {
        if (score_at(n, b, k) > score_at(n, b, arg)) arg = k;
      }
      // NaN never wins and sorts last (a NaN score would break the ordering).
      const double v = score_at(n, b, arg);
      best[static_cast<size_t>(b)] = std::isnan(v) ? -std::numeric_limits<double>::infinity() : v;
      cls[static_cast<size_t>(b)] = arg;
      for (int64_t c = 0; c < 4; ++c) coords[static_cast<size_t>(b * 4 + c)] = box_at(n, b, c);
    }
    std::vector<int64_t> order(static_cast<size_t>(B));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return best[static_cast<size_t>(a)] > best[static_cast<size_t>(b)];
    });
    std::vector<int64_t> kept;
    for (int64_t b : order) {
      if (!(best[static_cast<size_t>(b)] > score_threshold)) continue;
      bool suppressed = false;
      for (int64_t s : kept) {
        if (per_class && cls[static_cast<size_t>(s)] != cls[static_cast<size_t>(b)]) continue;
        if (iou(&coords[static_cast<size_t>(s * 4)], &coords[static_cast<size_t>(b * 4)]) > iou_threshold) {
          suppressed = true;
          break;
        }
      }
      if (!suppressed) kept.push_back(b);
    }
    if (kept.empty() && B > 0) kept.push_back(order.front());
    if (static_cast<int64_t>(kept.size()) > M) kept.resize(static_cast<size_t>(M));
    counts[static_cast<size_t>(n)] = static_cast<int64_t>(kept.size());
    float* ob = out_boxes.mutable_data<float>();
    float* os = out_scores.mutable_data<float>();
    for (size_t j = 0; j < kept.size(); ++j) {
      const int64_t b = kept[j], m = static_cast<int64_t>(j);
      indices[static_cast<size_t>(n * M + m)] = b;
      for (int64_t c = 0; c < 4; ++c) (ios17 ? ob[(n * 4 + c) * M + m] : ob[(n * M + m) * 4 + c]) = box_at(n, b, c);
      for (int64_t k = 0; k < K; ++k) (ios17 ? os[(n * K + k) * M + m] : os[(n * M + m) * K + k]) = score_at(n, b, k);
    }
  }
  SG_ASSIGN_OR_RETURN(Tensor idx, kern::int32_tensor(ctx, {N, M}, indices));
  ctx.set_output(0, std::move(out_boxes));
  ctx.set_output(1, std::move(out_scores));
  ctx.set_output(2, std::move(idx));
  if (!ios17) {
    SG_ASSIGN_OR_RETURN(Tensor count, kern::int32_tensor(ctx, {N}, counts));
    ctx.set_output(3, std::move(count));
  }
  return Status::ok();
}

}  // namespace sg
