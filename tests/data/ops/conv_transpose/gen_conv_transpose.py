"""Oracle cases for conv_transpose (coremltools 9.0 iOS15/iOS17 conv.py; output sizes from its
type inference, the "same" crop as TensorFlow's conv_transpose). The reference is not a
scatter: it is the textbook identity transposed conv = ordinary convolution (numpy_ref.conv) of
the stride-dilated, (K_eff - 1)-padded input with the spatially flipped, channel-swapped
kernel, then cropped. Run: /opt/ctvenv/bin/python gen_conv_transpose.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402
from numpy_ref import conv  # noqa: E402

c = Cases(__file__)
rng = c.rng


def ref(x, w, b, strides, dil, pad_type, pad, groups, output_shape=None):
    S = x.ndim - 2
    cin, og = w.shape[0], w.shape[1]
    cg = cin // groups
    K = w.shape[2:]
    # Stride-dilate the input.
    D = x.shape[2:]
    xd = np.zeros(x.shape[:2] + tuple((D[i] - 1) * strides[i] + 1 for i in range(S)))
    xd[(slice(None), slice(None)) + tuple(slice(None, None, strides[i]) for i in range(S))] = x
    keff = [(K[i] - 1) * dil[i] + 1 for i in range(S)]
    # Flip the kernel and swap in/out channels per group: [C_out, C_in / groups, *K].
    flip = w[(slice(None), slice(None)) + tuple(slice(None, None, -1) for _ in range(S))]
    wc = np.zeros((og * groups, cg) + tuple(K))
    for g in range(groups):
        wc[g * og:(g + 1) * og] = flip[g * cg:(g + 1) * cg].transpose((1, 0) + tuple(range(2, 2 + S)))
    full = conv(xd, wc, None, [1] * S, dil, [(k - 1, k - 1) for k in keff], groups)
    outs, fronts = [], []
    for i in range(S):
        fl = full.shape[2 + i]
        if pad_type == "valid":
            o, f = fl, 0
        elif pad_type == "custom":
            o, f = fl - pad[2 * i] - pad[2 * i + 1], pad[2 * i]
        else:
            o, f = D[i] * strides[i], None
        if output_shape is not None:
            o = output_shape[2 + i]
        if f is None:  # same: the forward conv's padding over the output size (TensorFlow)
            f = max(fl - o, 0) // 2
        outs.append(o)
        fronts.append(f)
    y = np.zeros(full.shape[:2] + tuple(outs))
    src = full[(slice(None), slice(None)) + tuple(slice(fronts[i], fronts[i] + outs[i]) for i in range(S))]
    y[(slice(None), slice(None)) + tuple(slice(0, src.shape[2 + i]) for i in range(S))] = src
    if b is not None:
        y += b.astype(np.float64).reshape((1, -1) + (1,) * S)
    return y


def case(cid, xs, ws, strides=None, dil=None, pad_type=None, pad=None, groups=None, bias=True, output_shape=None,
         prec="fp16"):
    S = len(xs) - 2
    x = rng.standard_normal(xs).astype(np.float16)
    w = (rng.standard_normal(ws) * 0.5).astype(np.float16)
    g = groups or 1
    b = rng.standard_normal(ws[1] * g).astype(np.float16) if bias else None
    inputs = {"x": arr(x, "fp16"), "weight": arr(w, "fp16")}
    if b is not None:
        inputs["bias"] = arr(b, "fp16")
    for name, v, dt in (("strides", strides, "int32"), ("dilations", dil, "int32"), ("pad_type", pad_type, "string"),
                        ("pad", pad, "int32"), ("groups", groups, "int32"), ("output_shape", output_shape, "int32")):
        if v is not None:
            inputs[name] = lit(v, dt)
    y = ref(x.astype(np.float64), w.astype(np.float64), b, strides or [1] * S, dil or [1] * S, pad_type or "valid",
            pad, g, output_shape)
    tol = dict(atol=2e-3, rtol=2e-3) if prec == "fp16" else dict(atol=1e-5, rtol=1e-5)
    c.add(cid, "conv_transpose", inputs, [out(y, "fp16")], precision=prec, **tol)


case("conv_transpose_1d_valid", (1, 3, 5), (3, 2, 3))
case("conv_transpose_1d_stride2", (2, 2, 4), (2, 3, 3), strides=[2], pad_type="valid")
case("conv_transpose_1d_same", (1, 2, 5), (2, 2, 4), strides=[2], pad_type="same")
case("conv_transpose_1d_same_k_lt_stride", (1, 2, 3), (2, 1, 2), strides=[3], pad_type="same")
case("conv_transpose_2d_custom", (1, 3, 3, 4), (3, 2, 3, 2), strides=[2, 1], pad_type="custom", pad=[1, 0, 0, 1])
case("conv_transpose_2d_dilation", (1, 2, 4, 3), (2, 2, 2, 2), dil=[2, 1], bias=False)
case("conv_transpose_2d_groups", (1, 4, 3, 3), (4, 3, 2, 2), strides=[2, 2], groups=2)
case("conv_transpose_2d_depthwise", (2, 3, 4, 4), (3, 1, 3, 3), strides=[2, 2], pad_type="same", groups=3)
case("conv_transpose_2d_output_shape", (1, 2, 3, 3), (2, 2, 3, 3), strides=[2, 2], pad_type="valid",
     output_shape=[1, 2, 8, 9])
case("conv_transpose_3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 2), strides=[1, 2, 1])
case("conv_transpose_2d_fp32_mode", (1, 2, 3, 3), (2, 3, 2, 2), strides=[2, 2], prec="fp32")
# same with output_shape below D * stride (TensorFlow's conv2d_transpose with an odd output,
# as coremltools' TF frontend writes it): the front crop follows the given size.
case("conv_transpose_2d_same_output_shape", (1, 2, 3, 4), (2, 2, 3, 3), strides=[2, 2], pad_type="same",
     output_shape=[1, 2, 5, 7])
case("conv_transpose_1d_same_output_shape_dilated", (1, 1, 4), (1, 2, 2), strides=[3], dil=[2], pad_type="same",
     output_shape=[1, 2, 10])

xe = np.ones((1, 2, 3), np.float16)
c.error("conv_transpose_weight_channels", "conv_transpose", {"x": arr(xe, "fp16"), "weight": arr(np.ones((3, 1, 2), np.float16), "fp16")},
        ["fp16"], contains="C_in")
c.error("conv_transpose_groups", "conv_transpose", {"x": arr(xe, "fp16"), "weight": arr(np.ones((2, 1, 2), np.float16), "fp16"),
                                                    "groups": lit(3, "int32")}, ["fp16"], contains="groups")
c.error("conv_transpose_bias_length", "conv_transpose", {"x": arr(xe, "fp16"), "weight": arr(np.ones((2, 2, 2), np.float16), "fp16"),
                                                         "bias": lit([1.0], "fp32")}, ["fp16"], contains="bias")
c.error("conv_transpose_bad_pad_type", "conv_transpose", {"x": arr(xe, "fp16"), "weight": arr(np.ones((2, 2, 2), np.float16), "fp16"),
                                                          "pad_type": lit("same_lower", "string")}, ["fp16"], contains="pad_type")
c.write()
