// Image resizing of the last two dims (coremltools 9.0 iOS15/iOS16/iOS17 image_resizing.py):
// upsample_nearest_neighbor, upsample_bilinear, resize_nearest_neighbor, resize_bilinear,
// resize (iOS17), crop, crop_resize, resample and affine. Bilinear output pixel i of a dim reads the grid point g(i) of the
// op's sampling mode (the formulas of resize_bilinear's docstring, clamped to [0, in - 1]) and
// interpolates between floor(g) and floor(g) + 1:
//   STRICT_ALIGN_CORNERS  i * (in - 1) / (out - 1)   (0 when out == 1)
//   ALIGN_CORNERS         the same, but (in - 1) / 2 when out == 1
//   DEFAULT               i * in / out
//   OFFSET_CORNERS        delta / 2 + i * delta, delta = max(1, in - 1) / out
//   UNALIGN_CORNERS       (i + 0.5) * in / out - 0.5
// upsample_bilinear uses STRICT_ALIGN_CORNERS when align_corners (default true), else
// UNALIGN_CORNERS, or DEFAULT when iOS16's half_pixel_centers is given false; its sizes are
// floor(in * scale) and the grid uses those sizes (coremltools: recompute_scale_factor=True).
// Nearest neighbour reads floor(i / scale) for upsample (PyTorch's nearest with a scale) and
// floor(i * in / out) for resize (TensorFlow's resize_nearest_neighbor without half pixels);
// iOS17 resize with NEAREST_NEIGHBOR supports only sampling_mode DEFAULT, whose rule that is.
// iOS17 resize samples only its last resized_dims dims; a dim left out is copied, not run
// through the grid (OFFSET_CORNERS' grid is not the identity even at the same size).
//
// crop_resize samples each box like resize_bilinear samples an image whose grid [0, in - 1] is
// the box [start, end] (in pixels: normalized coordinates times (H - 1) / (W - 1), times
// spatial_scale): position = start + g(i) with in - 1 = end - start, kept inside the box (an
// inverted box, end < start, samples backwards); a position outside the image reads pad_value
// (iOS16; 0 before), like TensorFlow's crop_and_resize extrapolation. These rules reproduce
// every expected value of coremltools' crop_resize tests (iOS14 test_image_resizing.py).
//
// resample and affine follow PyTorch's grid_sample / affine_grid (the ops coremltools maps them
// from): a coordinate c maps to pixel (c + 1) / 2 * (n - 1) with align_corners, else
// ((c + 1) * n - 1) / 2 (normalized_minus_one_to_one; normalized_zero_to_one is 2c - 1 first;
// unnormalized is the pixel itself); bilinear reads four taps, nearest rounds half to even;
// padding "constant" makes each tap outside the image padding_value, "border" clamps the
// coordinate, "reflection" reflects it about the edge pixels (|1 2 3| -> 2 3 2 1 2 3 2 1) and
// "symmetric" about the image borders (|1 2 3| -> 3 2 1 1 2 3 3 2 1). affine evaluates
// x' = a0 x + a1 y + a2, y' = b0 x + b1 y + b2 on the output grid linspace(-1, 1) (its only
// coordinates_mode, align_corners true) and resamples bilinearly with constant padding.
#include "ops/kernel_util.h"
#include "ops/kernels.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace sg {
namespace {

enum class Sampling { kStrictAlign, kAlign, kDefault, kOffset, kUnalign };

Result<Sampling> sampling_mode(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(std::string m, ctx.get_string_or("sampling_mode", "DEFAULT"));
  if (m == "STRICT_ALIGN_CORNERS") return Sampling::kStrictAlign;
  if (m == "ALIGN_CORNERS") return Sampling::kAlign;
  if (m == "DEFAULT") return Sampling::kDefault;
  if (m == "OFFSET_CORNERS") return Sampling::kOffset;
  if (m == "UNALIGN_CORNERS") return Sampling::kUnalign;
  return ctx.error(ErrorCode::kShape,
                   fmt::format("sampling_mode '{}' is not one of STRICT_ALIGN_CORNERS, ALIGN_CORNERS, "
                               "DEFAULT, OFFSET_CORNERS, UNALIGN_CORNERS", m));
}

double grid_point(Sampling s, int64_t i, int64_t in, int64_t out) {
  const double di = static_cast<double>(i), n = static_cast<double>(in), m = static_cast<double>(out);
  double g = 0;
  switch (s) {
    case Sampling::kStrictAlign: g = out == 1 ? 0.0 : di * (n - 1) / (m - 1); break;
    case Sampling::kAlign: g = out == 1 ? (n - 1) / 2 : di * (n - 1) / (m - 1); break;
    case Sampling::kDefault: g = di * n / m; break;
    case Sampling::kOffset: {
      const double delta = std::max(1.0, n - 1) / m;
      g = 0.5 * delta + di * delta;
      break;
    }
    case Sampling::kUnalign: g = (di + 0.5) * n / m - 0.5; break;
  }
  return std::min(n - 1, std::max(0.0, g));
}

Result<Tensor> image_input(OpContext& ctx, int64_t min_rank = 3) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() >= min_rank, ErrorCode::kShape, "x has shape {}: needs rank >= {}",
              shape_str(x.shape()), min_rank);
  return x;
}

Status check_size(OpContext& ctx, int64_t h, int64_t w) {
  SG_OP_CHECK(ctx, h >= 1 && w >= 1 && h <= (int64_t{1} << 20) && w <= (int64_t{1} << 20),
              ErrorCode::kShape, "output size {}x{} must be in [1, 2^20] per dim", h, w);
  return Status::ok();
}

// One output row/column map per dim: source index pairs and weights.
struct Taps {
  std::vector<int64_t> lo, hi;
  std::vector<double> frac;
};

Taps bilinear_taps(Sampling s, int64_t in, int64_t out) {
  Taps t;
  for (int64_t i = 0; i < out; ++i) {
    const double g = grid_point(s, i, in, out);
    const auto l = static_cast<int64_t>(std::floor(g));
    t.lo.push_back(l);
    t.hi.push_back(std::min(l + 1, in - 1));
    t.frac.push_back(g - static_cast<double>(l));
  }
  return t;
}

// x [..., H, W] -> [..., oh, ow]; each output = bilinear mix of the taps (nearest: frac 0).
Status resample_2d(OpContext& ctx, const Tensor& x, const Taps& th, const Taps& tw) {
  const int64_t H = x.dim(x.rank() - 2), W = x.dim(x.rank() - 1);
  const auto oh = static_cast<int64_t>(th.lo.size()), ow = static_cast<int64_t>(tw.lo.size());
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 2] = oh;
  out_shape[out_shape.size() - 1] = ow;
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  const int64_t planes = H * W == 0 ? 0 : x.numel() / (H * W);
  float* dst = out.mutable_data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* img = x.data<float>() + p * H * W;
    for (int64_t i = 0; i < oh; ++i) {
      const float* r0 = img + th.lo[i] * W;
      const float* r1 = img + th.hi[i] * W;
      const double fy = th.frac[i];
      for (int64_t j = 0; j < ow; ++j) {
        const double fx = tw.frac[j];
        const double top = r0[tw.lo[j]] * (1 - fx) + r0[tw.hi[j]] * fx;
        const double bottom = r1[tw.lo[j]] * (1 - fx) + r1[tw.hi[j]] * fx;
        *dst++ = static_cast<float>(fy == 0 ? top : top * (1 - fy) + bottom * fy);
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Taps nearest_taps_scale(int64_t in, int64_t out, double scale) {
  Taps t;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t k = std::min(in - 1, static_cast<int64_t>(std::floor(static_cast<double>(i) / scale)));
    t.lo.push_back(k);
    t.hi.push_back(k);
    t.frac.push_back(0);
  }
  return t;
}

// A dim the op does not resize is copied: no grid applies to it (OFFSET_CORNERS' grid is not the
// identity even when out == in).
Taps identity_taps(int64_t n) {
  Taps t;
  for (int64_t i = 0; i < n; ++i) {
    t.lo.push_back(i);
    t.hi.push_back(i);
    t.frac.push_back(0);
  }
  return t;
}

Taps nearest_taps_size(int64_t in, int64_t out) {
  Taps t;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t k = std::min(in - 1, (i * in) / out);
    t.lo.push_back(k);
    t.hi.push_back(k);
    t.frac.push_back(0);
  }
  return t;
}

Status scales(OpContext& ctx, const Tensor& x, double& sh, double& sw, int64_t& oh, int64_t& ow) {
  SG_ASSIGN_OR_RETURN(sh, ctx.get_float_or("scale_factor_height", 1.0));
  SG_ASSIGN_OR_RETURN(sw, ctx.get_float_or("scale_factor_width", 1.0));
  SG_OP_CHECK(ctx, sh > 0 && sw > 0 && sh <= 65536 && sw <= 65536, ErrorCode::kShape,
              "scale factors {} x {} must be in (0, 65536]", sh, sw);
  const double fh = std::floor(static_cast<double>(x.dim(x.rank() - 2)) * sh);
  const double fw = std::floor(static_cast<double>(x.dim(x.rank() - 1)) * sw);
  SG_OP_CHECK(ctx, fh >= 1 && fw >= 1 && fh <= 1048576 && fw <= 1048576, ErrorCode::kShape,
              "output size {}x{} must be in [1, 2^20] per dim", fh, fw);
  oh = static_cast<int64_t>(fh);
  ow = static_cast<int64_t>(fw);
  return check_size(ctx, oh, ow);
}

}  // namespace

Status op_upsample_nearest_neighbor(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, image_input(ctx));
  double sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;
  SG_TRY(scales(ctx, x, sh, sw, oh, ow));
  return resample_2d(ctx, x, nearest_taps_scale(x.dim(x.rank() - 2), oh, sh),
                     nearest_taps_scale(x.dim(x.rank() - 1), ow, sw));
}

Status op_upsample_bilinear(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, image_input(ctx));
  double sh = 1, sw = 1;
  int64_t oh = 0, ow = 0;
  SG_TRY(scales(ctx, x, sh, sw, oh, ow));
  SG_ASSIGN_OR_RETURN(bool align, ctx.get_bool_or("align_corners", true));
  SG_ASSIGN_OR_RETURN(bool half_pixel, ctx.get_bool_or("half_pixel_centers", !align));
  SG_OP_CHECK(ctx, !(align && half_pixel), ErrorCode::kShape,
              "align_corners and half_pixel_centers cannot both be true");
  const Sampling s = align ? Sampling::kStrictAlign : half_pixel ? Sampling::kUnalign : Sampling::kDefault;
  return resample_2d(ctx, x, bilinear_taps(s, x.dim(x.rank() - 2), oh), bilinear_taps(s, x.dim(x.rank() - 1), ow));
}

Status op_resize_nearest_neighbor(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, image_input(ctx));
  SG_ASSIGN_OR_RETURN(int64_t oh, ctx.get_int("target_size_height"));
  SG_ASSIGN_OR_RETURN(int64_t ow, ctx.get_int("target_size_width"));
  SG_TRY(check_size(ctx, oh, ow));
  return resample_2d(ctx, x, nearest_taps_size(x.dim(x.rank() - 2), oh), nearest_taps_size(x.dim(x.rank() - 1), ow));
}

Status op_resize_bilinear(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, image_input(ctx));
  SG_ASSIGN_OR_RETURN(int64_t oh, ctx.get_int_or("target_size_height", 1));
  SG_ASSIGN_OR_RETURN(int64_t ow, ctx.get_int_or("target_size_width", 1));
  SG_TRY(check_size(ctx, oh, ow));
  SG_ASSIGN_OR_RETURN(Sampling s, sampling_mode(ctx));
  return resample_2d(ctx, x, bilinear_taps(s, x.dim(x.rank() - 2), oh), bilinear_taps(s, x.dim(x.rank() - 1), ow));
}

// iOS17 resize: the last `resized_dims` dims take their size from the end of `shape` (0 keeps
// x's size). Only the last two dims can be resized (the others must keep their size).
Status op_resize(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx.get_ints("shape"));
  SG_ASSIGN_OR_RETURN(int64_t resized, ctx.get_int("resized_dims"));
  SG_ASSIGN_OR_RETURN(std::string interp, ctx.get_string_or("interpolation_mode", "LINEAR"));
  SG_ASSIGN_OR_RETURN(Sampling s, sampling_mode(ctx));
  SG_OP_CHECK(ctx, interp == "LINEAR" || interp == "NEAREST_NEIGHBOR", ErrorCode::kShape,
              "interpolation_mode '{}' is not LINEAR or NEAREST_NEIGHBOR", interp);
  const auto k = static_cast<int64_t>(shape.size());
  SG_OP_CHECK(ctx, resized >= 0 && resized <= k && k <= x.rank(), ErrorCode::kShape,
              "resized_dims {} must be <= the size of shape {} and that <= the rank of x {}", resized,
              kern::ints_str(shape), shape_str(x.shape()));
  Shape out_shape = x.shape();
  for (int64_t i = 0; i < resized; ++i) {
    const int64_t d = x.rank() - 1 - i, v = shape[static_cast<size_t>(k - 1 - i)];
    SG_OP_CHECK(ctx, v >= 0, ErrorCode::kShape, "shape {} holds a negative size", kern::ints_str(shape));
    if (v != 0) out_shape[static_cast<size_t>(d)] = v;
  }
  for (int64_t d = 0; d + 2 < x.rank(); ++d) {
    SG_OP_CHECK(ctx, out_shape[static_cast<size_t>(d)] == x.dim(d), ErrorCode::kUnsupported,
                "resizing dim {} ({} -> {}): only the last two dims can be resized", d, x.dim(d),
                out_shape[static_cast<size_t>(d)]);
  }
  SG_OP_CHECK(ctx, interp == "LINEAR" || s == Sampling::kDefault, ErrorCode::kUnsupported,
              "NEAREST_NEIGHBOR with a sampling_mode other than DEFAULT is not defined by coremltools; "
              "refusing to guess");
  const bool is_vector = x.rank() == 1;
  if (is_vector) {  // one resized dim: view it as [1, W]
    SG_ASSIGN_OR_RETURN(x, x.reshaped({1, x.dim(0)}));
    out_shape.insert(out_shape.begin(), 1);
  }
  const int64_t H = x.dim(x.rank() - 2), W = x.dim(x.rank() - 1);
  const int64_t oh = out_shape[out_shape.size() - 2], ow = out_shape.back();
  SG_TRY(check_size(ctx, oh, ow));
  SG_OP_CHECK(ctx, H >= 1 && W >= 1, ErrorCode::kShape, "x has shape {}: nothing to resize from",
              shape_str(x.shape()));
  const bool nearest = interp == "NEAREST_NEIGHBOR";
  // resized_dims < 2 leaves the height (and with 0 the width) out of the resize.
  const auto taps = [&](int64_t in, int64_t out, bool is_resized) {
    if (!is_resized) return identity_taps(in);
    return nearest ? nearest_taps_size(in, out) : bilinear_taps(s, in, out);
  };
  SG_TRY(resample_2d(ctx, x, taps(H, oh, resized >= 2), taps(W, ow, resized >= 1)));
  if (is_vector) {  // undo the [1, W] view
    SG_ASSIGN_OR_RETURN(Tensor flat, ctx.outputs()[0].reshaped({ow}));
    ctx.set_output(0, std::move(flat));
  }
  return Status::ok();
}

Status op_crop(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get("x"));
  SG_OP_CHECK(ctx, x.rank() >= 3, ErrorCode::kShape, "x has shape {}: needs rank >= 3", shape_str(x.shape()));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> ch, ctx.get_ints("crop_height"));
  SG_ASSIGN_OR_RETURN(std::vector<int64_t> cw, ctx.get_ints("crop_width"));
  SG_OP_CHECK(ctx, ch.size() == 2 && cw.size() == 2, ErrorCode::kShape,
              "crop_height {} and crop_width {} need 2 entries each", kern::ints_str(ch), kern::ints_str(cw));
  const int64_t H = x.dim(x.rank() - 2), W = x.dim(x.rank() - 1);
  SG_OP_CHECK(ctx, ch[0] >= 0 && ch[1] >= 0 && cw[0] >= 0 && cw[1] >= 0 && ch[0] + ch[1] <= H &&
                       cw[0] + cw[1] <= W,
              ErrorCode::kShape, "crop_height {} / crop_width {} must be non-negative and fit {}x{}",
              kern::ints_str(ch), kern::ints_str(cw), H, W);
  Shape out_shape = x.shape();
  out_shape[out_shape.size() - 2] = H - ch[0] - ch[1];
  out_shape[out_shape.size() - 1] = W - cw[0] - cw[1];
  const std::vector<int64_t> st = kern::strides_of(x.shape());
  std::vector<std::vector<int64_t>> offsets(out_shape.size());
  for (size_t d = 0; d < out_shape.size(); ++d) {
    const int64_t start = d == out_shape.size() - 2 ? ch[0] : d == out_shape.size() - 1 ? cw[0] : 0;
    for (int64_t i = 0; i < out_shape[d]; ++i) offsets[d].push_back((start + i) * st[d]);
  }
  SG_ASSIGN_OR_RETURN(Tensor out, kern::remap(ctx, x, out_shape, offsets));
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

namespace {

struct Box {
  double h0, w0, h1, w1;
};

Result<Box> read_box(OpContext& ctx, const double* c, const std::string& mode) {
  if (mode == "CORNERS_HEIGHT_FIRST") return Box{c[0], c[1], c[2], c[3]};
  if (mode == "CORNERS_WIDTH_FIRST") return Box{c[1], c[0], c[3], c[2]};
  if (mode == "CENTER_SIZE_HEIGHT_FIRST") return Box{c[0] - c[2] / 2, c[1] - c[3] / 2, c[0] + c[2] / 2, c[1] + c[3] / 2};
  if (mode == "CENTER_SIZE_WIDTH_FIRST") return Box{c[1] - c[3] / 2, c[0] - c[2] / 2, c[1] + c[3] / 2, c[0] + c[2] / 2};
  return ctx.error(ErrorCode::kShape,
                   fmt::format("box_coordinate_mode '{}' is not one of CORNERS_HEIGHT_FIRST, CORNERS_WIDTH_FIRST, "
                               "CENTER_SIZE_HEIGHT_FIRST, CENTER_SIZE_WIDTH_FIRST", mode));
}

// Sample positions of one box side: start + g(i), g of the sampling mode for in - 1 = end - start.
std::vector<double> box_positions(Sampling s, double start, double end, int64_t out) {
  const double ext = end - start, n = ext + 1, m = static_cast<double>(out);
  std::vector<double> pos;
  for (int64_t i = 0; i < out; ++i) {
    const double di = static_cast<double>(i);
    double g = 0;
    switch (s) {
      case Sampling::kStrictAlign: g = out == 1 ? 0.0 : di * ext / (m - 1); break;
      case Sampling::kAlign: g = out == 1 ? ext / 2 : di * ext / (m - 1); break;
      case Sampling::kDefault: g = di * n / m; break;
      case Sampling::kOffset: {
        const double delta = std::max(1.0, ext) / m;
        g = 0.5 * delta + di * delta;
        break;
      }
      case Sampling::kUnalign: g = (di + 0.5) * n / m - 0.5; break;
    }
    pos.push_back(start + std::min(std::max(g, std::min(0.0, ext)), std::max(0.0, ext)));
  }
  return pos;
}

// Bilinear value of img [H, W] at (y, x); `pad` when the point is outside the image.
double bilinear_at(const float* img, int64_t H, int64_t W, double y, double x, double pad) {
  // Written so NaN coordinates are outside too.
  if (!(y >= 0 && y <= static_cast<double>(H - 1) && x >= 0 && x <= static_cast<double>(W - 1))) return pad;
  const auto y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  const int64_t y1 = std::min(y0 + 1, H - 1), x1 = std::min(x0 + 1, W - 1);
  const double fy = y - static_cast<double>(y0), fx = x - static_cast<double>(x0);
  const double top = img[y0 * W + x0] * (1 - fx) + img[y0 * W + x1] * fx;
  const double bottom = img[y1 * W + x0] * (1 - fx) + img[y1 * W + x1] * fx;
  return top * (1 - fy) + bottom * fy;
}

enum class Padding { kConstant, kBorder, kReflection, kSymmetric };

// Maps a pixel coordinate into the image per padding mode; false when it stays outside
// (constant padding).
bool pad_coordinate(Padding p, double& c, int64_t n) {
  const double hi = static_cast<double>(n - 1);
  switch (p) {
    case Padding::kConstant: return true;  // taps decide
    case Padding::kBorder: c = std::min(std::max(c, 0.0), hi); return true;
    case Padding::kReflection: {
      if (n == 1) {
        c = 0;
        return true;
      }
      const double period = 2 * hi;
      double r = std::fmod(std::fabs(c), period);
      c = r > hi ? period - r : r;
      return true;
    }
    case Padding::kSymmetric: {
      const double period = 2 * static_cast<double>(n);
      double r = std::fmod(std::fabs(c + 0.5), period);
      c = (r > static_cast<double>(n) ? period - r : r) - 0.5;
      c = std::min(std::max(c, 0.0), hi);
      return true;
    }
  }
  return true;
}

double tap(const float* img, int64_t H, int64_t W, int64_t y, int64_t x, double pad) {
  if (y < 0 || y >= H || x < 0 || x >= W) return pad;
  return img[y * W + x];
}

double sample(const float* img, int64_t H, int64_t W, double y, double x, bool nearest, Padding p, double pad) {
  // A non-finite or absurdly distant coordinate reads the padding (and never reaches an
  // integer conversion).
  if (!(std::fabs(y) < 1e9 && std::fabs(x) < 1e9)) return pad;
  pad_coordinate(p, y, H);
  pad_coordinate(p, x, W);
  if (nearest) {
    return tap(img, H, W, static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)), pad);
  }
  const auto y0 = static_cast<int64_t>(std::floor(y)), x0 = static_cast<int64_t>(std::floor(x));
  const double fy = y - static_cast<double>(y0), fx = x - static_cast<double>(x0);
  return (tap(img, H, W, y0, x0, pad) * (1 - fx) + tap(img, H, W, y0, x0 + 1, pad) * fx) * (1 - fy) +
         (tap(img, H, W, y0 + 1, x0, pad) * (1 - fx) + tap(img, H, W, y0 + 1, x0 + 1, pad) * fx) * fy;
}

double to_pixel(double c, int64_t n, int mode, bool align) {  // mode 0 unnormalized, 1 [-1,1], 2 [0,1]
  if (mode == 0) return c;
  if (mode == 2) c = 2 * c - 1;
  const double dn = static_cast<double>(n);
  return align ? (c + 1) / 2 * (dn - 1) : ((c + 1) * dn - 1) / 2;
}

struct SampleParams {
  bool nearest = false;
  Padding padding = Padding::kConstant;
  double pad_value = 0;
  int coord_mode = 1;
  bool align = true;
};

Result<SampleParams> sample_params(OpContext& ctx) {
  SampleParams sp;
  SG_ASSIGN_OR_RETURN(std::string sm, ctx.get_string_or("sampling_mode", "bilinear"));
  SG_ASSIGN_OR_RETURN(std::string pm, ctx.get_string_or("padding_mode", "constant"));
  SG_ASSIGN_OR_RETURN(std::string cm, ctx.get_string_or("coordinates_mode", "normalized_minus_one_to_one"));
  SG_ASSIGN_OR_RETURN(sp.pad_value, ctx.get_float_or("padding_value", 0.0));
  SG_ASSIGN_OR_RETURN(sp.align, ctx.get_bool_or("align_corners", true));
  SG_OP_CHECK(ctx, sm == "bilinear" || sm == "nearest", ErrorCode::kShape,
              "sampling_mode '{}' is not bilinear or nearest", sm);
  sp.nearest = sm == "nearest";
  if (pm == "constant") sp.padding = Padding::kConstant;
  else if (pm == "border") sp.padding = Padding::kBorder;
  else if (pm == "reflection") sp.padding = Padding::kReflection;
  else if (pm == "symmetric") sp.padding = Padding::kSymmetric;
  else return ctx.error(ErrorCode::kShape, fmt::format("padding_mode '{}' is not one of constant, border, reflection, symmetric", pm));
  if (cm == "unnormalized") sp.coord_mode = 0;
  else if (cm == "normalized_minus_one_to_one") sp.coord_mode = 1;
  else if (cm == "normalized_zero_to_one") sp.coord_mode = 2;
  else return ctx.error(ErrorCode::kShape, fmt::format("coordinates_mode '{}' is not one of unnormalized, "
                                                       "normalized_minus_one_to_one, normalized_zero_to_one", cm));
  return sp;
}

}  // namespace

Status op_crop_resize(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_OP_CHECK(ctx, x.rank() == 4, ErrorCode::kShape, "x has shape {}: needs [B, C, H, W]", shape_str(x.shape()));
  const int64_t B = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  SG_ASSIGN_OR_RETURN(int64_t th, ctx.get_int_or("target_height", 1));
  SG_ASSIGN_OR_RETURN(int64_t tw, ctx.get_int_or("target_width", 1));
  SG_TRY(check_size(ctx, th, tw));
  SG_ASSIGN_OR_RETURN(bool normalized, ctx.get_bool_or("normalized_coordinates", false));
  SG_ASSIGN_OR_RETURN(double scale, ctx.get_float_or("spatial_scale", 1.0));
  SG_ASSIGN_OR_RETURN(std::string mode, ctx.get_string_or("box_coordinate_mode", "CORNERS_HEIGHT_FIRST"));
  SG_ASSIGN_OR_RETURN(Sampling s, sampling_mode(ctx));
  SG_ASSIGN_OR_RETURN(double pad, ctx.get_float_or("pad_value", 0.0));
  // Boxes as (image index or -1 for every image, 4 coordinates).
  std::vector<std::pair<int64_t, std::array<double, 4>>> boxes;
  const bool ios17 = ctx.has("boxes");
  if (ios17) {
    SG_ASSIGN_OR_RETURN(Tensor bt, ctx.get_f32("boxes"));
    SG_OP_CHECK(ctx, bt.rank() == 2 && bt.dim(1) == 4, ErrorCode::kShape, "boxes has shape {}, expected [N, 4]",
                shape_str(bt.shape()));
    std::vector<int64_t> idx;
    if (ctx.has("box_indices")) {
      SG_ASSIGN_OR_RETURN(Tensor it, ctx.get("box_indices"));
      SG_ASSIGN_OR_RETURN(idx, to_int64_vector(it));
      SG_OP_CHECK(ctx, static_cast<int64_t>(idx.size()) == bt.dim(0), ErrorCode::kShape,
                  "box_indices has {} entries for {} boxes", idx.size(), bt.dim(0));
    } else {
      for (int64_t i = 0; i < bt.dim(0); ++i) idx.push_back(i);
    }
    for (int64_t i = 0; i < bt.dim(0); ++i) {
      const float* p = bt.data<float>() + i * 4;
      boxes.push_back({idx[static_cast<size_t>(i)], {p[0], p[1], p[2], p[3]}});
    }
  } else {
    SG_ASSIGN_OR_RETURN(Tensor roi, ctx.get_f32("roi"));
    SG_OP_CHECK(ctx, roi.rank() == 5 && roi.dim(1) == 1 && (roi.dim(2) == 4 || roi.dim(2) == 5) &&
                         roi.dim(3) == 1 && roi.dim(4) == 1,
                ErrorCode::kShape, "roi has shape {}, expected [N, 1, 4 or 5, 1, 1]", shape_str(roi.shape()));
    const int64_t k = roi.dim(2);
    for (int64_t i = 0; i < roi.dim(0); ++i) {
      const float* p = roi.data<float>() + i * k;
      SG_OP_CHECK(ctx, k == 4 || (p[0] >= 0 && p[0] < static_cast<float>(B)), ErrorCode::kShape,
                  "roi[{}] image index {} is outside [0, {})", i, p[0], B);
      const int64_t image = k == 5 ? static_cast<int64_t>(std::floor(p[0])) : -1;
      const float* c = k == 5 ? p + 1 : p;
      boxes.push_back({image, {c[0], c[1], c[2], c[3]}});
    }
  }
  const int64_t N = static_cast<int64_t>(boxes.size());
  const bool all_images = !ios17 && !boxes.empty() && boxes.front().first == -1;
  Shape out_shape = ios17 ? Shape{N, C, th, tw} : Shape{N, all_images ? B : 1, C, th, tw};
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, out_shape));
  float* dst = out.mutable_data<float>();
  for (const auto& [image, coords] : boxes) {
    SG_OP_CHECK(ctx, image == -1 || (image >= 0 && image < B), ErrorCode::kShape,
                "box image index {} is outside [0, {})", image, B);
    double c[4] = {coords[0] * scale, coords[1] * scale, coords[2] * scale, coords[3] * scale};
    SG_ASSIGN_OR_RETURN(Box box, read_box(ctx, c, mode));
    if (normalized) {
      box.h0 *= static_cast<double>(H - 1);
      box.h1 *= static_cast<double>(H - 1);
      box.w0 *= static_cast<double>(W - 1);
      box.w1 *= static_cast<double>(W - 1);
    }
    const std::vector<double> ys = box_positions(s, box.h0, box.h1, th), xs = box_positions(s, box.w0, box.w1, tw);
    const int64_t first = image == -1 ? 0 : image, last = image == -1 ? B : image + 1;
    for (int64_t b = first; b < last; ++b) {
      for (int64_t ch = 0; ch < C; ++ch) {
        const float* img = x.data<float>() + (b * C + ch) * H * W;
        for (double y : ys) {
          for (double xx : xs) *dst++ = static_cast<float>(bilinear_at(img, H, W, y, xx, pad));
        }
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_resample(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(Tensor coords, ctx.get_f32("coordinates"));
  SG_OP_CHECK(ctx, x.rank() == 4, ErrorCode::kShape, "x has shape {}: needs [B, C, H, W]", shape_str(x.shape()));
  SG_OP_CHECK(ctx, coords.rank() == 4 && coords.dim(0) == x.dim(0) && coords.dim(3) == 2, ErrorCode::kShape,
              "coordinates has shape {}, expected [B = {}, H2, W2, 2]", shape_str(coords.shape()), x.dim(0));
  SG_ASSIGN_OR_RETURN(SampleParams sp, sample_params(ctx));
  const int64_t B = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3), H2 = coords.dim(1), W2 = coords.dim(2);
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, {B, C, H2, W2}));
  float* dst = out.mutable_data<float>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t ch = 0; ch < C; ++ch) {
      const float* img = x.data<float>() + (b * C + ch) * H * W;
      for (int64_t i = 0; i < H2 * W2; ++i) {
        const float* p = coords.data<float>() + (b * H2 * W2 + i) * 2;
        const double px = to_pixel(p[0], W, sp.coord_mode, sp.align), py = to_pixel(p[1], H, sp.coord_mode, sp.align);
        *dst++ = static_cast<float>(sample(img, H, W, py, px, sp.nearest, sp.padding, sp.pad_value));
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

Status op_affine(OpContext& ctx) {
  SG_ASSIGN_OR_RETURN(Tensor x, ctx.get_f32("x"));
  SG_ASSIGN_OR_RETURN(Tensor m, ctx.get_f32("transform_matrix"));
  SG_OP_CHECK(ctx, x.rank() == 4, ErrorCode::kShape, "x has shape {}: needs [B, C, H, W]", shape_str(x.shape()));
  const int64_t B = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  SG_OP_CHECK(ctx, m.rank() == 2 && m.dim(1) == 6 && (m.dim(0) == 1 || m.dim(0) == B), ErrorCode::kShape,
              "transform_matrix has shape {}, expected [1 or B = {}, 6]", shape_str(m.shape()), B);
  SG_ASSIGN_OR_RETURN(int64_t oh, ctx.get_int("output_height"));
  SG_ASSIGN_OR_RETURN(int64_t ow, ctx.get_int("output_width"));
  SG_TRY(check_size(ctx, oh, ow));
  SG_ASSIGN_OR_RETURN(SampleParams sp, sample_params(ctx));
  SG_OP_CHECK(ctx, !sp.nearest && sp.padding == Padding::kConstant && sp.coord_mode == 1 && sp.align,
              ErrorCode::kUnsupported,
              "affine supports only sampling_mode bilinear, padding_mode constant, coordinates_mode "
              "normalized_minus_one_to_one and align_corners true (coremltools' own limits)");
  SG_ASSIGN_OR_RETURN(Tensor out, kern::new_tensor(ctx, DType::kF32, {B, C, oh, ow}));
  float* dst = out.mutable_data<float>();
  auto grid = [](int64_t i, int64_t n) { return n == 1 ? 0.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(n - 1); };
  for (int64_t b = 0; b < B; ++b) {
    const float* a = m.data<float>() + (m.dim(0) == 1 ? 0 : b * 6);
    for (int64_t ch = 0; ch < C; ++ch) {
      const float* img = x.data<float>() + (b * C + ch) * H * W;
      for (int64_t i = 0; i < oh; ++i) {
        for (int64_t j = 0; j < ow; ++j) {
          const double gx = grid(j, ow), gy = grid(i, oh);
          const double xs = a[0] * gx + a[1] * gy + a[2], ys = a[3] * gx + a[4] * gy + a[5];
          *dst++ = static_cast<float>(sample(img, H, W, to_pixel(ys, H, 1, true), to_pixel(xs, W, 1, true), false,
                                             Padding::kConstant, sp.pad_value));
        }
      }
    }
  }
  ctx.set_output(0, std::move(out));
  return Status::ok();
}

}  // namespace sg
