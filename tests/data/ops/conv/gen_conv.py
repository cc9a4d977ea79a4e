"""Oracle cases for conv (numpy, direct shifted-slice convolution in float64).
Run: /opt/ctvenv/bin/python gen_conv.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402
from numpy_ref import conv as conv_ref, conv_pads as pads_for  # noqa: E402

w = CaseWriter(__file__, seed=202)
T, V = w.tensor, w.value


def conv_case(cid, xs, ws, pad_type="valid", strides=None, dil=None, groups=1, custom=None,
              bias=True, prec="fp16", explicit=True):
    d = "fp16" if prec == "fp16" else "fp32"
    S = len(xs) - 2
    strides = strides or [1] * S
    dil = dil or [1] * S
    x = w.rand(xs, d)
    wt = w.rand(ws, d, -0.5, 0.5)
    b = w.rand([ws[0]], d) if bias else None
    pads = pads_for(pad_type, xs[2:], ws[2:], strides, dil, custom)
    ref = conv_ref(f64(x), f64(wt), None if b is None else f64(b), strides, dil, pads, groups)
    inputs = {"x": T(f"{cid}_x", x, d), "weight": T(f"{cid}_w", wt, d)}
    if b is not None:
        inputs["bias"] = T(f"{cid}_b", b, d)
    if explicit:
        inputs.update({"pad_type": V(pad_type, "string"), "strides": V(strides, "int32"),
                       "dilations": V(dil, "int32"), "groups": V(groups, "int32")})
        inputs["pad"] = V(custom if custom else [0] * (2 * S), "int32")
    w.add(cid, "conv", inputs, [(out_cast(ref, d), d)], precision=prec)


# 1-D, shaped like the silero STFT conv (one input channel, long kernel, big stride).
conv_case("conv1d_stft_like", [1, 1, 96], [20, 1, 32], strides=[16], bias=False)
conv_case("conv1d_same_dilated", [2, 3, 11], [4, 3, 3], pad_type="same", dil=[2])
conv_case("conv1d_same_odd_total", [1, 2, 10], [3, 2, 4], pad_type="same", strides=[3])
conv_case("conv1d_same_lower", [1, 2, 10], [3, 2, 4], pad_type="same_lower", strides=[3])
conv_case("conv1d_custom_pad", [1, 4, 9], [6, 4, 3], pad_type="custom", custom=[2, 1], strides=[2])
conv_case("conv1d_defaults", [1, 4, 9], [5, 4, 3], explicit=False, bias=False)
conv_case("conv2d_groups2_stride2", [1, 4, 7, 6], [6, 2, 3, 3], pad_type="same", strides=[2, 2], groups=2)
conv_case("conv2d_depthwise", [2, 3, 5, 5], [3, 1, 3, 3], pad_type="custom", custom=[1, 1, 0, 2], groups=3)
conv_case("conv2d_dilated_fp32", [1, 3, 9, 8], [4, 3, 2, 3], dil=[2, 1], strides=[1, 2], prec="fp32")
conv_case("conv2d_pointwise_linear", [1, 64, 1, 8], [48, 64, 1, 1])
conv_case("conv2d_pointwise_fp32_batch", [3, 16, 2, 5], [7, 16, 1, 1], prec="fp32")
conv_case("conv2d_1x1_stride2", [1, 8, 4, 6], [5, 8, 1, 1], strides=[2, 2])
conv_case("conv3d_small", [1, 2, 4, 4, 3], [3, 2, 2, 3, 2], pad_type="same")
w.error("conv_bad_groups", "conv",
        {"x": T("badg_x", w.rand([1, 4, 6]), "fp16"), "weight": T("badg_w", w.rand([6, 4, 3]), "fp16"),
         "groups": V(3, "int32")}, 1, "shape", "groups")
w.error("conv_channel_mismatch", "conv",
        {"x": T("badc_x", w.rand([1, 4, 6]), "fp16"), "weight": T("badc_w", w.rand([6, 3, 3]), "fp16")},
        1, "shape", "input channels")
w.error("conv_kernel_too_large", "conv",
        {"x": T("badk_x", w.rand([1, 2, 3]), "fp16"), "weight": T("badk_w", w.rand([2, 2, 5]), "fp16"),
         "pad_type": V("valid", "string")}, 1, "shape", "kernel extent")
w.error("conv_bad_pad_type", "conv",
        {"x": T("badp_x", w.rand([1, 2, 6]), "fp16"), "weight": T("badp_w", w.rand([2, 2, 3]), "fp16"),
         "pad_type": V("reflect", "string")}, 1, "unsupported", "pad_type")

w.write()
