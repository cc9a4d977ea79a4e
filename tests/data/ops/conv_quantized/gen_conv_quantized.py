"""Oracle cases for conv_quantized (coremltools 9.0 iOS15/conv.py: W = W_quantized * quant_scale
+ quant_bias, then conv). The reference dequantizes in float64 and convolves with numpy_ref.conv
(written from the conv definition, shared with the conv cases).
Run: /opt/ctvenv/bin/python gen_conv_quantized.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402
from numpy_ref import conv, conv_pads  # noqa: E402

c = Cases(__file__)
rng = c.rng


def case(cid, xs, ws, nbits=None, per_channel=False, groups=1, strides=None, pad_type="valid", prec="fp16"):
    S = len(xs) - 2
    x = rng.standard_normal(xs).astype(np.float16)
    nb = nbits or 8
    q = rng.integers(0, 1 << nb, ws).astype(np.uint8)
    n = ws[0] if per_channel else 1
    scale = (rng.uniform(0.005, 0.02, n)).astype(np.float32)
    bias = (rng.uniform(-1, 1, n)).astype(np.float32)
    shape = (-1,) + (1,) * (len(ws) - 1)
    w = q.astype(np.float64) * scale.astype(np.float64).reshape(shape) + bias.astype(np.float64).reshape(shape)
    st = strides or [1] * S
    pads = conv_pads(pad_type, xs[2:], ws[2:], st, [1] * S, None)
    y = conv(x.astype(np.float64), w, None, st, [1] * S, pads, groups)
    inputs = {"x": arr(x, "fp16"), "weight": arr(q, "uint8"), "quantization_type": lit("linear", "string"),
              "quant_scale": arr(scale if per_channel else scale.reshape(()), "fp32"),
              "quant_bias": arr(bias if per_channel else bias.reshape(()), "fp32"), "pad_type": lit(pad_type, "string"),
              "groups": lit(groups, "int32")}
    if nbits is not None:
        inputs["nbits"] = lit(nbits, "int32")
    if strides is not None:
        inputs["strides"] = lit(strides, "int32")
    tol = dict(atol=2e-3, rtol=2e-3) if prec == "fp16" else dict(atol=1e-4, rtol=1e-5)
    c.add(cid, "conv_quantized", inputs, [out(y, "fp16")], precision=prec, **tol)


case("conv_quantized_1d_per_tensor", (1, 3, 9), (4, 3, 3))
case("conv_quantized_2d_per_channel", (1, 2, 5, 5), (3, 2, 3, 3), per_channel=True, strides=[2, 1], pad_type="same")
case("conv_quantized_4bit_groups", (2, 4, 4, 4), (4, 2, 2, 2), nbits=4, per_channel=True, groups=2)
case("conv_quantized_fp32_mode", (1, 2, 6), (2, 2, 3), per_channel=True, prec="fp32")
x = np.ones((1, 1, 4), np.float16)
c.error("conv_quantized_lut", "conv_quantized",
        {"x": arr(x, "fp16"), "weight": arr(np.zeros((1, 1, 2), np.uint8), "uint8"), "quantization_type": lit("lut", "string"),
         "quant_scale": lit(1.0, "fp32"), "quant_bias": lit(0.0, "fp32")}, ["fp16"], expect="unsupported", contains="lut")
c.error("conv_quantized_value_beyond_nbits", "conv_quantized",
        {"x": arr(x, "fp16"), "weight": arr(np.full((1, 1, 2), 9, np.uint8), "uint8"),
         "quantization_type": lit("linear", "string"), "nbits": lit(3, "int32"), "quant_scale": lit(1.0, "fp32"),
         "quant_bias": lit(0.0, "fp32")}, ["fp16"], contains="nbits")
c.error("conv_quantized_scale_length", "conv_quantized",
        {"x": arr(x, "fp16"), "weight": arr(np.zeros((2, 1, 2), np.uint8), "uint8"),
         "quantization_type": lit("linear", "string"), "quant_scale": lit([1.0, 2.0, 3.0], "fp32"),
         "quant_bias": lit(0.0, "fp32")}, ["fp16"], contains="quant_scale")
c.write()
