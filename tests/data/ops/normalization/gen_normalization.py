"""Oracle cases for layer_norm, l2_norm, batch_norm, instance_norm (numpy, float64, population
variance). Run: /opt/ctvenv/bin/python gen_normalization.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402

w = CaseWriter(__file__, seed=303)
T, V = w.tensor, w.value


def layer_norm_case(cid, xs, axes, gamma=True, beta=True, eps=None, prec="fp16", offset=0.0):
    d = "fp16" if prec == "fp16" else "fp32"
    x = (w.rand(xs, "fp32", -2, 2) + offset).astype(np.float16 if d == "fp16" else np.float32)
    xx = f64(x)
    ax = list(range(len(xs))) if axes is None else [a % len(xs) for a in axes]
    nshape = [xs[i] if i in ax else 1 for i in range(len(xs))]
    mean = xx.mean(axis=tuple(ax), keepdims=True)
    var = ((xx - mean) ** 2).mean(axis=tuple(ax), keepdims=True)
    e = 1e-5 if eps is None else eps
    ref = (xx - mean) / np.sqrt(var + e)
    inputs = {"x": T(f"{cid}_x", x, d)}
    if axes is not None:
        inputs["axes"] = V(axes, "int32")
    gshape = [xs[i] for i in sorted(ax)]
    if gamma:
        g = w.rand(gshape, d, 0.5, 1.5)
        inputs["gamma"] = T(f"{cid}_g", g, d)
        ref = ref * f64(g).reshape(nshape)
    if beta:
        b = w.rand(gshape, d)
        inputs["beta"] = T(f"{cid}_b", b, d)
        ref = ref + f64(b).reshape(nshape)
    if eps is not None:
        inputs["epsilon"] = V(eps, d)
    w.add(cid, "layer_norm", inputs, [(out_cast(ref, d), d)], precision=prec)


layer_norm_case("layer_norm_last_axis", [2, 3, 64], [-1])
layer_norm_case("layer_norm_two_axes_fp32", [2, 5, 6], [1, 2], prec="fp32")
layer_norm_case("layer_norm_middle_axis", [3, 7, 4], [1], beta=False)
layer_norm_case("layer_norm_default_axes", [4, 5], None, gamma=False, beta=False)
layer_norm_case("layer_norm_eps_large", [2, 16], [-1], eps=0.5, gamma=False)
# Mean far from 0: the two-pass variance must not lose the spread.
layer_norm_case("layer_norm_offset_mean_fp32", [2, 128], [-1], prec="fp32", offset=100.0)
w.error("layer_norm_bad_gamma", "layer_norm",
        {"x": T("badg_x", w.rand([2, 8]), "fp16"), "axes": V([-1], "int32"),
         "gamma": T("badg_g", w.rand([7]), "fp16")}, 1, "shape", "gamma")
w.error("layer_norm_bad_axis", "layer_norm",
        {"x": T("bada_x", w.rand([2, 8]), "fp16"), "axes": V([2], "int32")}, 1, "shape", "axes")


def l2_norm_case(cid, xs, eps=None, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    x = w.rand(xs, d)
    xx = f64(x)
    e = 1e-6 if eps is None else eps
    if len(xs) <= 3:
        ref = xx / np.sqrt((xx ** 2).sum() + e)
    else:
        flat = xx.reshape(int(np.prod(xs[:-3])), -1)
        ref = (flat / np.sqrt((flat ** 2).sum(axis=1, keepdims=True) + e)).reshape(xs)
    inputs = {"x": T(f"{cid}_x", x, d)}
    if eps is not None:
        inputs["epsilon"] = V(eps, d)
    w.add(cid, "l2_norm", inputs, [(out_cast(ref, d), d)], precision=prec)


l2_norm_case("l2_norm_rank3", [2, 3, 4])
l2_norm_case("l2_norm_batched_fp32", [2, 3, 2, 2, 5], eps=0.01, prec="fp32")


def batch_norm_case(cid, xs, gamma=True, beta=True, eps=None, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    C = xs[1]
    x = w.rand(xs, d)
    mean = w.rand([C], d)
    var = w.rand([C], d, 0.2, 2.0)
    bshape = (1, C) + (1,) * (len(xs) - 2)
    e = 1e-5 if eps is None else eps
    ref = (f64(x) - f64(mean).reshape(bshape)) / np.sqrt(f64(var).reshape(bshape) + e)
    inputs = {"x": T(f"{cid}_x", x, d), "mean": T(f"{cid}_m", mean, d), "variance": T(f"{cid}_v", var, d)}
    if gamma:
        g = w.rand([C], d, 0.5, 1.5)
        inputs["gamma"] = T(f"{cid}_g", g, d)
        ref = ref * f64(g).reshape(bshape)
    if beta:
        b = w.rand([C], d)
        inputs["beta"] = T(f"{cid}_b", b, d)
        ref = ref + f64(b).reshape(bshape)
    if eps is not None:
        inputs["epsilon"] = V(eps, d)
    w.add(cid, "batch_norm", inputs, [(out_cast(ref, d), d)], precision=prec)


batch_norm_case("batch_norm_2d", [2, 3, 4, 5])
batch_norm_case("batch_norm_1d_no_affine_fp32", [1, 4, 7], gamma=False, beta=False, eps=1e-3, prec="fp32")


def instance_norm_case(cid, xs, gamma=True, beta=True, eps=None, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    C = xs[1]
    x = w.rand(xs, d)
    xx = f64(x)
    ax = tuple(range(2, len(xs)))
    e = 1e-5 if eps is None else eps
    mean = xx.mean(axis=ax, keepdims=True)
    var = ((xx - mean) ** 2).mean(axis=ax, keepdims=True)
    ref = (xx - mean) / np.sqrt(var + e)
    bshape = (1, C) + (1,) * (len(xs) - 2)
    inputs = {"x": T(f"{cid}_x", x, d)}
    if gamma:
        g = w.rand([C], d, 0.5, 1.5)
        inputs["gamma"] = T(f"{cid}_g", g, d)
        ref = ref * f64(g).reshape(bshape)
    if beta:
        b = w.rand([C], d)
        inputs["beta"] = T(f"{cid}_b", b, d)
        ref = ref + f64(b).reshape(bshape)
    if eps is not None:
        inputs["epsilon"] = V(eps, d)
    w.add(cid, "instance_norm", inputs, [(out_cast(ref, d), d)], precision=prec)


instance_norm_case("instance_norm_2d", [2, 3, 4, 4])
instance_norm_case("instance_norm_1d_fp32", [1, 2, 9], beta=False, eps=0.1, prec="fp32")
w.error("instance_norm_rank2", "instance_norm", {"x": T("badi_x", w.rand([2, 3]), "fp16")}, 1, "shape")

# local_response_norm: channel window [c - (size-1)//2, c + size-1-(size-1)//2] clipped to the
# channels (Core ML's LRN layer; PyTorch's for odd sizes).
def lrn_ref(x, size, alpha, beta, k):
    xx = f64(x)
    C = xx.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    out = np.empty_like(xx)
    for ch in range(C):
        a, b = max(0, ch - lo), min(C - 1, ch + hi)
        sq = (xx[:, a:b + 1] ** 2).sum(axis=1)
        out[:, ch] = xx[:, ch] / (k + alpha / size * sq) ** beta
    return out


for cid, shape, size, params, prec in (("lrn_defaults", [1, 6, 3, 3], 5, {}, "fp16"),
                                       ("lrn_params_1d", [2, 5, 7], 3, {"alpha": 0.5, "beta": 0.6, "k": 2.0}, "fp16"),
                                       ("lrn_even_size", [1, 7, 2, 2], 4, {"alpha": 0.9, "beta": 1.0, "k": 1.0}, "fp16"),
                                       ("lrn_size_beyond_channels", [1, 3, 2], 9, {"alpha": 2.0}, "fp16"),
                                       ("lrn_fp32", [1, 4, 3, 2], 3, {"alpha": 0.3, "beta": 0.75, "k": 1.5}, "fp32")):
    d = "fp16" if prec == "fp16" else "fp32"
    x = w.rand(shape, d, -3, 3)
    inputs = {"x": T(f"{cid}_x", x, d), "size": V(size, "int32")}
    for name, val in params.items():
        inputs[name] = V(val, "fp32")
    full = {"alpha": 1e-4, "beta": 0.75, "k": 1.0, **params}
    w.add(cid, "local_response_norm", inputs, [(lrn_ref(x, size, full["alpha"], full["beta"], full["k"]), d)],
          precision=prec)
w.error("lrn_rank5", "local_response_norm", {"x": T("badlrn_x", w.rand([1, 2, 2, 2, 2]), "fp16"), "size": V(3, "int32")},
        1, "shape")
w.error("lrn_size0", "local_response_norm", {"x": T("badlrn0_x", w.rand([1, 2, 2]), "fp16"), "size": V(0, "int32")},
        1, "shape")

w.write()
