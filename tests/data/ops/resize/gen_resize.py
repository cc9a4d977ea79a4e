"""Oracle cases for upsample_nearest_neighbor, upsample_bilinear, resize_nearest_neighbor,
resize_bilinear, resize (iOS17) and crop (coremltools 9.0 iOS15/iOS16/iOS17 image_resizing.py).
Bilinear grids are the docstring's formulas per sampling mode; the reference checks itself
against the docstring's printed example grids before writing anything. Interpolation is numpy
float64 over explicit 2-D index grids. Run: /opt/ctvenv/bin/python gen_resize.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-3, rtol=1e-3)


def grid(mode, n, m):
    i = np.arange(m, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        if m == 1:
            g = np.array([0.0 if mode == "STRICT_ALIGN_CORNERS" else (n - 1) / 2])
        else:
            g = i * (n - 1) / (m - 1)
    elif mode == "DEFAULT":
        g = i * (n - n / m) / (m - 1) if m > 1 else np.zeros(1)
    elif mode == "OFFSET_CORNERS":
        delta = max(1, n - 1) / m
        g = 0.5 * delta + i * delta
    else:  # UNALIGN_CORNERS
        s = n / m
        g = i * s + 0.5 * s - 0.5
    return np.minimum(n - 1, np.maximum(0, g))


# The docstring's examples (Xin = 2).
EX = {("UNALIGN_CORNERS", 5): [0, .1, .5, .9, 1], ("STRICT_ALIGN_CORNERS", 5): [0, .25, .5, .75, 1],
      ("DEFAULT", 5): [0, .4, .8, 1, 1], ("OFFSET_CORNERS", 5): [.1, .3, .5, .7, .9],
      ("UNALIGN_CORNERS", 6): [0, 0, .33, .67, 1, 1], ("ALIGN_CORNERS", 6): [0, .2, .4, .6, .8, 1],
      ("DEFAULT", 6): [0, .33, .67, 1, 1, 1], ("OFFSET_CORNERS", 6): [.08, .25, .42, .58, .75, .92]}
for (mode, m), want in EX.items():
    assert np.allclose(grid(mode, 2, m), want, atol=0.006), (mode, m, grid(mode, 2, m))


def bilinear(x, gh, gw):
    xf = x.astype(np.float64)
    H, W = x.shape[-2:]
    h0 = np.floor(gh).astype(int)
    w0 = np.floor(gw).astype(int)
    h1, w1 = np.minimum(h0 + 1, H - 1), np.minimum(w0 + 1, W - 1)
    fy, fx = (gh - h0)[:, None], (gw - w0)[None, :]
    a = xf[..., h0[:, None], w0[None, :]]
    b = xf[..., h0[:, None], w1[None, :]]
    cc = xf[..., h1[:, None], w0[None, :]]
    d = xf[..., h1[:, None], w1[None, :]]
    return (a * (1 - fx) + b * fx) * (1 - fy) + (cc * (1 - fx) + d * fx) * fy


def nearest(x, ih, iw):
    return x[..., ih[:, None], iw[None, :]]


def h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


# upsample_nearest_neighbor: out = floor(in * scale); source floor(i / scale).
for k, (shape, sh, sw, dt) in enumerate((((1, 2, 3, 4), 2, 3, "int32"), ((2, 3, 5), 1.5, 0.5, "fp32"),
                                         ((1, 1, 2, 2), 1, 1, None), ((1, 4, 3), 2.5, 2, "fp32"))):
    x = h(*shape)
    H, W = shape[-2:]
    oh, ow = int(np.floor(H * sh)), int(np.floor(W * sw))
    ih = np.minimum(H - 1, np.floor(np.arange(oh) / sh).astype(int))
    iw = np.minimum(W - 1, np.floor(np.arange(ow) / sw).astype(int))
    inputs = {"x": arr(x, "fp16")}
    if dt is not None:
        inputs["scale_factor_height"] = lit(sh, dt)
        inputs["scale_factor_width"] = lit(sw, dt)
    c.add(f"upsample_nearest_neighbor_{k}", "upsample_nearest_neighbor", inputs, [out(nearest(x, ih, iw), "fp16")])

# upsample_bilinear: align_corners true -> STRICT_ALIGN grid, false -> UNALIGN (half pixels),
# iOS16 half_pixel_centers false with align_corners false -> DEFAULT.
for k, (shape, sh, sw, align, half) in enumerate((((1, 2, 3, 4), 2, 2, None, None), ((1, 2, 3, 4), 2, 1.5, False, None),
                                                  ((1, 1, 4, 4), 0.5, 0.75, True, None), ((1, 1, 3, 5), 2, 2, False, False),
                                                  ((2, 3, 1), 3, 2, True, False))):
    x = h(*shape)
    H, W = shape[-2:]
    oh, ow = int(np.floor(H * sh)), int(np.floor(W * sw))
    al = True if align is None else align
    hp = (not al) if half is None else half
    mode = "STRICT_ALIGN_CORNERS" if al else ("UNALIGN_CORNERS" if hp else "DEFAULT")
    inputs = {"x": arr(x, "fp16"), "scale_factor_height": lit(sh, "fp32"), "scale_factor_width": lit(sw, "fp32")}
    if align is not None:
        inputs["align_corners"] = lit(align, "bool")
    if half is not None:
        inputs["half_pixel_centers"] = lit(half, "bool")
    c.add(f"upsample_bilinear_{k}", "upsample_bilinear", inputs, [out(bilinear(x, grid(mode, H, oh), grid(mode, W, ow)), "fp16")],
          opset="ios16" if half is not None else None, **F16)

# resize_bilinear: every sampling mode, up and down, output size 1.
for mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS", "UNALIGN_CORNERS", None):
    for k, (shape, oh, ow) in enumerate((((1, 2, 3, 4), 5, 7), ((2, 6, 5), 4, 2), ((1, 1, 3, 3), 1, 1))):
        x = h(*shape)
        H, W = shape[-2:]
        md = mode or "DEFAULT"
        inputs = {"x": arr(x, "fp16"), "target_size_height": lit(oh, "int32"), "target_size_width": lit(ow, "int32")}
        if mode is not None:
            inputs["sampling_mode"] = lit(mode, "string")
        c.add(f"resize_bilinear_{(mode or 'unset').lower()}_{k}", "resize_bilinear", inputs,
              [out(bilinear(x, grid(md, H, oh), grid(md, W, ow)), "fp16")], **F16)
x = h(1, 2, 3, 3)
c.add("resize_bilinear_fp32_mode", "resize_bilinear",
      {"x": arr(x, "fp32"), "target_size_height": lit(5, "int32"), "target_size_width": lit(4, "int32"),
       "sampling_mode": lit("UNALIGN_CORNERS", "string")},
      [out(bilinear(x.astype(np.float32), grid("UNALIGN_CORNERS", 3, 5), grid("UNALIGN_CORNERS", 3, 4)), "fp32")],
      precision="fp32", atol=1e-6, rtol=1e-6)


# resize_nearest_neighbor: source floor(i * in / out).
def nn_idx(n, m):
    return np.minimum(n - 1, (np.arange(m) * n) // m)


for k, (shape, oh, ow) in enumerate((((1, 2, 3, 4), 6, 8), ((2, 5, 7), 2, 3), ((1, 1, 4, 4), 3, 5))):
    x = h(*shape)
    H, W = shape[-2:]
    c.add(f"resize_nearest_neighbor_{k}", "resize_nearest_neighbor",
          {"x": arr(x, "fp16"), "target_size_height": lit(oh, "int32"), "target_size_width": lit(ow, "int32")},
          [out(nearest(x, nn_idx(H, oh), nn_idx(W, ow)), "fp16")])

# iOS17 resize: sizes from the end of `shape` (0 keeps x's), LINEAR with a sampling mode or
# NEAREST_NEIGHBOR (DEFAULT only).
x = h(1, 2, 3, 4)
c.add("resize_doc_example", "resize", {"x": arr(x, "fp16"), "shape": lit([1, 6, 8], "int32"), "resized_dims": lit(2, "uint32")},
      [out(bilinear(x, grid("DEFAULT", 3, 6), grid("DEFAULT", 4, 8)), "fp16")], opset="ios17", **F16)
c.add("resize_keep_zero", "resize", {"x": arr(x, "fp16"), "shape": lit([0, 5], "int32"), "resized_dims": lit(2, "uint32"),
                                     "sampling_mode": lit("ALIGN_CORNERS", "string")},
      [out(bilinear(x, grid("ALIGN_CORNERS", 3, 3), grid("ALIGN_CORNERS", 4, 5)), "fp16")], opset="ios17", **F16)
c.add("resize_nearest", "resize", {"x": arr(x, "fp16"), "shape": arr(np.array([5, 2], np.uint16), "uint16"),
                                   "resized_dims": lit(2, "uint32"), "interpolation_mode": lit("NEAREST_NEIGHBOR", "string")},
      [out(nearest(x, nn_idx(3, 5), nn_idx(4, 2)), "fp16")], opset="ios17")
c.add("resize_one_dim", "resize", {"x": arr(x, "fp16"), "shape": lit([7], "int32"), "resized_dims": lit(1, "uint32"),
                                   "sampling_mode": lit("UNALIGN_CORNERS", "string")},
      [out(bilinear(x, grid("UNALIGN_CORNERS", 3, 3), grid("UNALIGN_CORNERS", 4, 7)), "fp16")], opset="ios17", **F16)
xv = h(6)
c.add("resize_rank1", "resize", {"x": arr(xv, "fp16"), "shape": lit([4], "int32"), "resized_dims": lit(1, "uint32"),
                                 "sampling_mode": lit("STRICT_ALIGN_CORNERS", "string")},
      [out(bilinear(xv.reshape(1, 6), np.zeros(1), grid("STRICT_ALIGN_CORNERS", 6, 4)).reshape(4), "fp16")],
      opset="ios17", **F16)
xi = rng.integers(-50, 50, (1, 2, 2)).astype(np.int32)
c.add("resize_int32_nearest", "resize", {"x": arr(xi, "int32"), "shape": lit([4, 3], "int32"), "resized_dims": lit(2, "uint32"),
                                         "interpolation_mode": lit("NEAREST_NEIGHBOR", "string")},
      [out(nearest(xi, nn_idx(2, 4), nn_idx(2, 3)), "int32")], opset="ios17")

# crop
for k, (shape, chh, cww) in enumerate((((1, 2, 5, 6), [1, 2], [0, 3]), ((2, 4, 4), [0, 0], [2, 2]), ((1, 1, 3, 3), [3, 0], [0, 0]))):
    x = h(*shape)
    H, W = shape[-2:]
    c.add(f"crop_{k}", "crop", {"x": arr(x, "fp16"), "crop_height": lit(chh, "int32"), "crop_width": lit(cww, "int32")},
          [out(x[..., chh[0]:H - chh[1], cww[0]:W - cww[1]], "fp16")])

c.error("resize_bilinear_bad_mode", "resize_bilinear",
        {"x": arr(h(1, 2, 2), "fp16"), "target_size_height": lit(2, "int32"), "target_size_width": lit(2, "int32"),
         "sampling_mode": lit("CORNERS", "string")}, ["fp16"], contains="sampling_mode")
c.error("upsample_bilinear_rank2", "upsample_bilinear", {"x": arr(h(2, 2), "fp16")}, ["fp16"], contains="rank")
c.error("upsample_nearest_zero_size", "upsample_nearest_neighbor",
        {"x": arr(h(1, 2, 2), "fp16"), "scale_factor_height": lit(0.25, "fp32")}, ["fp16"], contains="size")
c.error("resize_nearest_other_sampling", "resize",
        {"x": arr(h(1, 2, 2), "fp16"), "shape": lit([3, 3], "int32"), "resized_dims": lit(2, "uint32"),
         "interpolation_mode": lit("NEAREST_NEIGHBOR", "string"), "sampling_mode": lit("ALIGN_CORNERS", "string")},
        ["fp16"], expect="unsupported", contains="NEAREST", opset="ios17")
c.error("resize_third_dim", "resize",
        {"x": arr(h(1, 2, 2), "fp16"), "shape": lit([2, 3, 3], "int32"), "resized_dims": lit(3, "uint32")},
        ["fp16"], expect="unsupported", contains="last two", opset="ios17")
c.error("crop_too_much", "crop", {"x": arr(h(1, 3, 3), "fp16"), "crop_height": lit([2, 2], "int32"),
                                  "crop_width": lit([0, 0], "int32")}, ["fp16"], contains="crop")

# crop_resize: first the expected values of coremltools' own tests (iOS14
# test_image_resizing.py TestCropResize, ALIGN_CORNERS), then generated cases.
xk = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
roi = np.array([1, 1, 2, 2], np.float32).reshape(1, 1, 4, 1, 1)
for cid, r, th, tw, norm, want in (
        ("ct_2x2", roi, 2, 2, False, [6, 7, 10, 11]),
        ("ct_4x4", roi, 4, 4, False, [6, 6.333333, 6.66666, 7, 7.333333, 7.666666, 8, 8.333333,
                                      8.666666, 9, 9.3333333, 9.666666, 10, 10.333333, 10.666666, 11]),
        ("ct_1x1", roi, 1, 1, False, [8.5]),
        ("ct_normalized_indexed", np.array([0, 0, 0, 1 / 3, 1 / 3], np.float32).reshape(1, 1, 5, 1, 1), 2, 2, True,
         [1, 2, 5, 6]),
        ("ct_inverted", np.array([2, 2, 1, 1], np.float32).reshape(1, 1, 4, 1, 1), 2, 2, False, [11, 10, 7, 6])):
    c.add(f"crop_resize_{cid}", "crop_resize",
          {"x": arr(xk, "fp32"), "roi": arr(r, "fp32"), "target_height": lit(th, "int32"), "target_width": lit(tw, "int32"),
           "normalized_coordinates": lit(norm, "bool"), "box_coordinate_mode": lit("CORNERS_HEIGHT_FIRST", "string"),
           "sampling_mode": lit("ALIGN_CORNERS", "string")},
          [out(np.array(want).reshape(1, 1, 1, th, tw), "fp32")], precision="fp32", opset="ios16", atol=1e-5, rtol=1e-5)


def box_grid(mode, start, end, m):
    """The resize_bilinear grid of the mode over a box [start, end] (in - 1 = end - start)."""
    ext = end - start
    n = ext + 1
    i = np.arange(m, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        g = (i * ext / (m - 1)) if m > 1 else np.array([0.0 if mode == "STRICT_ALIGN_CORNERS" else ext / 2])
    elif mode == "DEFAULT":
        g = i * n / m
    elif mode == "OFFSET_CORNERS":
        g = 0.5 * max(1, ext) / m + i * max(1, ext) / m
    else:
        g = (i + 0.5) * n / m - 0.5
    return start + np.clip(g, min(0, ext), max(0, ext))


def sample_bilinear(img, y, x, pad):
    H, W = img.shape
    if y < 0 or y > H - 1 or x < 0 or x > W - 1:
        return pad
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = min(y0 + 1, H - 1), min(x0 + 1, W - 1)
    fy, fx = y - y0, x - x0
    return (img[y0, x0] * (1 - fx) + img[y0, x1] * fx) * (1 - fy) + (img[y1, x0] * (1 - fx) + img[y1, x1] * fx) * fy


def to_corners(cc, mode):
    if mode == "CORNERS_HEIGHT_FIRST":
        return cc[0], cc[1], cc[2], cc[3]
    if mode == "CORNERS_WIDTH_FIRST":
        return cc[1], cc[0], cc[3], cc[2]
    if mode == "CENTER_SIZE_HEIGHT_FIRST":
        return cc[0] - cc[2] / 2, cc[1] - cc[3] / 2, cc[0] + cc[2] / 2, cc[1] + cc[3] / 2
    return cc[1] - cc[3] / 2, cc[0] - cc[2] / 2, cc[1] + cc[3] / 2, cc[0] + cc[2] / 2


def crop_resize_ref(x, boxes, images, th, tw, norm, scale, cmode, smode, pad):
    B, C, H, W = x.shape
    res = []
    for cc, img_ids in zip(boxes, images):
        h0, w0, h1, w1 = to_corners(np.asarray(cc, np.float64) * scale, cmode)
        if norm:
            h0, h1, w0, w1 = h0 * (H - 1), h1 * (H - 1), w0 * (W - 1), w1 * (W - 1)
        ys, xs = box_grid(smode, h0, h1, th), box_grid(smode, w0, w1, tw)
        per_image = [[[[sample_bilinear(x[b, ch].astype(np.float64), y, xx, pad) for xx in xs] for y in ys]
                      for ch in range(C)] for b in img_ids]
        res.append(per_image)
    return np.array(res)


xc = rng.standard_normal((2, 2, 5, 6)).astype(np.float32)
for k, (cmode, smode, norm, scale, th, tw, pad, opset) in enumerate((
        ("CORNERS_WIDTH_FIRST", "STRICT_ALIGN_CORNERS", True, 1.0, 3, 4, None, "ios15"),
        ("CENTER_SIZE_HEIGHT_FIRST", "DEFAULT", False, 0.5, 2, 3, None, "ios15"),
        ("CENTER_SIZE_WIDTH_FIRST", "UNALIGN_CORNERS", False, 1.0, 3, 3, 7.5, "ios16"),
        ("CORNERS_HEIGHT_FIRST", "OFFSET_CORNERS", True, 1.0, 2, 2, -1.0, "ios16"))):
    boxes = rng.uniform(0, 1, (3, 4)) if norm else rng.uniform(-1, 6, (3, 4)) / scale
    boxes = boxes.astype(np.float32)
    # [N, 1, 4, 1, 1]: every image per box.
    inputs = {"x": arr(xc, "fp32"), "roi": arr(boxes.reshape(3, 1, 4, 1, 1), "fp32"), "target_height": lit(th, "int32"),
              "target_width": lit(tw, "int32"), "normalized_coordinates": lit(norm, "bool"),
              "spatial_scale": lit(scale, "fp32"), "box_coordinate_mode": lit(cmode, "string"),
              "sampling_mode": lit(smode, "string")}
    if pad is not None:
        inputs["pad_value"] = lit(pad, "fp32")
    y = crop_resize_ref(xc, boxes, [[0, 1]] * 3, th, tw, norm, scale, cmode, smode, pad or 0.0)
    c.add(f"crop_resize_all_images_{k}", "crop_resize", inputs, [out(y, "fp32")], precision="fp32", opset=opset,
          atol=1e-5, rtol=1e-5)
# iOS17: boxes [N, 4] + box_indices; output [N, C, th, tw].
boxes = rng.uniform(-0.5, 5.5, (4, 4)).astype(np.float32)
ids = np.array([1, 0, 1, 1], np.int32)
y = crop_resize_ref(xc, boxes, [[i] for i in ids], 3, 2, False, 1.0, "CORNERS_HEIGHT_FIRST", "ALIGN_CORNERS", 0.0)
c.add("crop_resize_ios17_box_indices", "crop_resize",
      {"x": arr(xc, "fp32"), "boxes": arr(boxes, "fp32"), "box_indices": arr(ids, "int32"), "target_height": lit(3, "int32"),
       "target_width": lit(2, "int32"), "sampling_mode": lit("ALIGN_CORNERS", "string")},
      [out(y[:, 0], "fp32")], precision="fp32", opset="ios17", atol=1e-5, rtol=1e-5)
y = crop_resize_ref(xc, boxes[:2], [[0], [1]], 2, 2, False, 1.0, "CORNERS_HEIGHT_FIRST", "DEFAULT", 0.0)
c.add("crop_resize_ios17_default_indices", "crop_resize",
      {"x": arr(xc, "fp32"), "boxes": arr(boxes[:2], "fp32"), "target_height": lit(2, "int32"), "target_width": lit(2, "int32")},
      [out(y[:, 0], "fp32")], precision="fp32", opset="ios17", atol=1e-5, rtol=1e-5)
c.error("crop_resize_bad_index", "crop_resize",
        {"x": arr(xc, "fp32"), "roi": arr(np.array([5, 0, 0, 1, 1], np.float32).reshape(1, 1, 5, 1, 1), "fp32")},
        ["fp32"], contains="index", opset="ios16")
c.error("crop_resize_bad_mode", "crop_resize",
        {"x": arr(xc, "fp32"), "roi": arr(np.zeros((1, 1, 4, 1, 1), np.float32), "fp32"),
         "box_coordinate_mode": lit("CORNERS", "string")}, ["fp32"], contains="box_coordinate_mode", opset="ios16")


# resample / affine: PyTorch grid_sample written out in numpy.
def unnormalize(cv, n, mode, align):
    if mode == "unnormalized":
        return cv
    if mode == "normalized_zero_to_one":
        cv = 2 * cv - 1
    return (cv + 1) / 2 * (n - 1) if align else ((cv + 1) * n - 1) / 2


def pad_coord(cv, n, padding):
    if padding == "border":
        return min(max(cv, 0), n - 1)
    if padding == "reflection":  # about the edge pixels
        if n == 1:
            return 0.0
        span = 2 * (n - 1)
        r = abs(cv) % span
        return span - r if r > n - 1 else r
    if padding == "symmetric":  # about the borders
        span = 2 * n
        r = abs(cv + 0.5) % span
        v = (span - r if r > n else r) - 0.5
        return min(max(v, 0), n - 1)
    return cv


def grid_sample(img, y, x, nearest, padding, pad):
    H, W = img.shape
    y, x = pad_coord(y, H, padding), pad_coord(x, W, padding)

    def at(yy, xx):
        return img[yy, xx] if 0 <= yy < H and 0 <= xx < W else pad

    if nearest:
        return at(int(np.round(y)), int(np.round(x)))  # numpy rounds half to even
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    fy, fx = y - y0, x - x0
    return ((at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx) * (1 - fy) +
            (at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx) * fy)


xr = rng.standard_normal((2, 2, 4, 5)).astype(np.float32)
for k, (sm, pm, cm, align, pad) in enumerate((("bilinear", "constant", "normalized_minus_one_to_one", True, 0.0),
                                               ("bilinear", "constant", "normalized_minus_one_to_one", False, 2.5),
                                               ("bilinear", "border", "normalized_zero_to_one", True, 0.0),
                                               ("bilinear", "reflection", "unnormalized", False, 0.0),
                                               ("bilinear", "symmetric", "normalized_minus_one_to_one", False, 0.0),
                                               ("nearest", "constant", "unnormalized", True, -3.0),
                                               ("nearest", "reflection", "normalized_minus_one_to_one", True, 0.0),
                                               ("nearest", "symmetric", "unnormalized", True, 0.0))):
    lo, hi = {"unnormalized": (-3, 8), "normalized_zero_to_one": (-0.6, 1.6)}.get(cm, (-1.8, 1.8))
    coords = rng.uniform(lo, hi, (2, 3, 4, 2)).astype(np.float32)
    y = np.zeros((2, 2, 3, 4))
    for b in range(2):
        for ch in range(2):
            for i in range(3):
                for j in range(4):
                    px = unnormalize(float(coords[b, i, j, 0]), 5, cm, align)
                    py = unnormalize(float(coords[b, i, j, 1]), 4, cm, align)
                    y[b, ch, i, j] = grid_sample(xr[b, ch].astype(np.float64), py, px, sm == "nearest", pm, pad)
    c.add(f"resample_{k}_{sm}_{pm}", "resample",
          {"x": arr(xr, "fp32"), "coordinates": arr(coords, "fp32"), "sampling_mode": lit(sm, "string"),
           "padding_mode": lit(pm, "string"), "padding_value": lit(pad, "fp32"), "coordinates_mode": lit(cm, "string"),
           "align_corners": lit(align, "bool")}, [out(y, "fp32")], precision="fp32", atol=1e-5, rtol=1e-5)
# The docstring's 1-D padding examples, as an image of one row sampled at integer pixels -3..5.
row = np.array([[[[1, 2, 3]]]], np.float32)
xs_ = np.arange(-3, 6, dtype=np.float32)
coords = np.stack([xs_, np.zeros_like(xs_)], -1).reshape(1, 1, 9, 2)
for pm, want in (("constant", [0, 0, 0, 1, 2, 3, 0, 0, 0]), ("border", [1, 1, 1, 1, 2, 3, 3, 3, 3]),
                 ("reflection", [2, 3, 2, 1, 2, 3, 2, 1, 2]), ("symmetric", [3, 2, 1, 1, 2, 3, 3, 2, 1])):
    c.add(f"resample_docstring_{pm}", "resample",
          {"x": arr(row, "fp32"), "coordinates": arr(coords, "fp32"), "sampling_mode": lit("bilinear", "string"),
           "padding_mode": lit(pm, "string"), "padding_value": lit(0.0, "fp32"),
           "coordinates_mode": lit("unnormalized", "string"), "align_corners": lit(True, "bool")},
          [out(np.array(want, np.float64).reshape(1, 1, 1, 9), "fp32")], precision="fp32")
c.error("resample_bad_padding", "resample",
        {"x": arr(row, "fp32"), "coordinates": arr(coords, "fp32"), "sampling_mode": lit("bilinear", "string"),
         "padding_mode": lit("wrap", "string"), "padding_value": lit(0.0, "fp32"),
         "coordinates_mode": lit("unnormalized", "string"), "align_corners": lit(True, "bool")}, ["fp32"],
        contains="padding_mode")

# affine: output grid linspace(-1, 1), x' = a0 x + a1 y + a2, y' = b0 x + b1 y + b2, bilinear,
# constant padding, align_corners (PyTorch affine_grid + grid_sample).
xa = rng.standard_normal((2, 1, 4, 6)).astype(np.float32)
for k, (mats, oh, ow) in enumerate(((np.array([[1, 0, 0, 0, 1, 0]], np.float32), 4, 6),
                                    (np.array([[0.8, -0.3, 0.1, 0.25, 0.9, -0.2], [1.2, 0.1, 0.0, 0.0, 0.7, 0.3]],
                                              np.float32), 3, 5),
                                    (np.array([[0, 1, 0, 1, 0, 0]], np.float32), 5, 2))):
    y = np.zeros((2, 1, oh, ow))
    gx, gy = np.linspace(-1, 1, ow), np.linspace(-1, 1, oh)
    for b in range(2):
        a = mats[0 if len(mats) == 1 else b].astype(np.float64)
        for i in range(oh):
            for j in range(ow):
                xs2 = a[0] * gx[j] + a[1] * gy[i] + a[2]
                ys2 = a[3] * gx[j] + a[4] * gy[i] + a[5]
                y[b, 0, i, j] = grid_sample(xa[b, 0].astype(np.float64), unnormalize(ys2, 4, "n", True),
                                            unnormalize(xs2, 6, "n", True), False, "constant", 0.0)
    c.add(f"affine_{k}", "affine",
          {"x": arr(xa, "fp32"), "transform_matrix": arr(mats, "fp32"), "output_height": lit(oh, "int32"),
           "output_width": lit(ow, "int32"), "sampling_mode": lit("bilinear", "string"),
           "padding_mode": lit("constant", "string"), "padding_value": lit(0.0, "fp32"),
           "coordinates_mode": lit("normalized_minus_one_to_one", "string"), "align_corners": lit(True, "bool")},
          [out(y, "fp32")], precision="fp32", atol=1e-5, rtol=1e-5)
c.error("affine_align_false", "affine",
        {"x": arr(xa, "fp32"), "transform_matrix": arr(np.array([[1, 0, 0, 0, 1, 0]], np.float32), "fp32"),
         "output_height": lit(2, "int32"), "output_width": lit(2, "int32"), "sampling_mode": lit("bilinear", "string"),
         "padding_mode": lit("constant", "string"), "padding_value": lit(0.0, "fp32"),
         "coordinates_mode": lit("normalized_minus_one_to_one", "string"), "align_corners": lit(False, "bool")},
        ["fp32"], expect="unsupported", contains="align_corners")
c.error("affine_matrix_shape", "affine",
        {"x": arr(xa, "fp32"), "transform_matrix": arr(np.zeros((3, 6), np.float32), "fp32"),
         "output_height": lit(2, "int32"), "output_width": lit(2, "int32"), "sampling_mode": lit("bilinear", "string"),
         "padding_mode": lit("constant", "string"), "padding_value": lit(0.0, "fp32"),
         "coordinates_mode": lit("normalized_minus_one_to_one", "string"), "align_corners": lit(True, "bool")},
        ["fp32"], contains="transform_matrix")
# resized_dims = 1 leaves the height alone: OFFSET_CORNERS' grid over an unchanged size is not
# the identity (delta = (n - 1) / n), so the height must not be resampled.
xo = np.random.default_rng(7).standard_normal((1, 2, 3, 4)).astype(np.float16)
c.add("resize_one_dim_offset_corners", "resize",
      {"x": arr(xo, "fp16"), "shape": lit([6], "int32"), "resized_dims": lit(1, "uint32"),
       "sampling_mode": lit("OFFSET_CORNERS", "string")},
      [out(bilinear(xo, np.arange(3.0), grid("OFFSET_CORNERS", 4, 6)), "fp16")], opset="ios17", **F16)
c.write()
