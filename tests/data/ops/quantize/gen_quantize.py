"""Oracle cases for quantize / dequantize (numpy: np.around is round-half-to-even, then clip).
Run: /opt/ctvenv/bin/python gen_quantize.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402

w = CaseWriter(__file__, seed=909)
T, V = w.tensor, w.value
RANGE = {"int8": (-128, 127), "uint8": (0, 255)}


def bshape(x, axis, n):
    s = [1] * x.ndim
    if axis is not None:
        s[axis] = n
    return s


def quantize_case(cid, x, xd, scale, zp, out_dtype, axis=None):
    inputs = {"input": T(f"{cid}_x", x, xd), "output_dtype": V(out_dtype, "string")}
    sc = np.asarray(scale, np.float32 if xd == "fp32" else np.float16)
    inputs["scale"] = T(f"{cid}_s", sc, xd) if sc.ndim else V(float(sc), xd)
    q = f64(x) / f64(sc).reshape(bshape(x, axis, sc.size) if sc.ndim else [])
    q = np.around(q)
    if zp is not None:
        z = np.asarray(zp)
        inputs["zero_point"] = T(f"{cid}_z", z, out_dtype) if z.ndim else V(int(z), out_dtype)
        q = q + f64(z).reshape(bshape(x, axis, z.size) if z.ndim else [])
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    lo, hi = RANGE[out_dtype]
    w.add(cid, "quantize", inputs, [(np.clip(q, lo, hi), out_dtype)], precision="fp32" if xd == "fp32" else "fp16",
          tol={})


x = w.rand([2, 3, 4], "fp32", -3, 3)
x[0, 0, :3] = [0.25, 0.75, -0.25]  # exact halves of the 0.5 scale: round half to even
quantize_case("quantize_int8_scalar", x, "fp32", 0.5, 3, "int8")
quantize_case("quantize_uint8_per_axis", w.rand([2, 3, 4], "fp32", -1, 1), "fp32", [0.01, 0.02, 0.05],
              [128, 100, 0], "uint8", axis=1)
quantize_case("quantize_int8_no_zero_point_fp16", w.rand([5, 2], "fp16", -2, 2), "fp16", 0.004, None, "int8")
quantize_case("quantize_int8_saturates", np.array([-1000.0, -1.0, 0.0, 1.0, 1000.0], np.float32), "fp32", 0.1, -5, "int8")
w.error("quantize_bad_dtype", "quantize",
        {"input": T("bad_q_x", w.rand([2], "fp32"), "fp32"), "scale": V(0.1, "fp32"),
         "output_dtype": V("int16", "string")}, 1, "unsupported", "output_dtype", out_dtype="int16")
w.error("quantize_scale_length", "quantize",
        {"input": T("badl_q_x", w.rand([2, 3], "fp32"), "fp32"), "scale": T("badl_q_s", np.ones(2, np.float32), "fp32"),
         "axis": V(1, "int32"), "output_dtype": V("int8", "string")}, 1, "shape", "scale", out_dtype="int8")


def dequantize_case(cid, q, qd, scale, sd, zp, axis=None):
    inputs = {"input": T(f"{cid}_q", q, qd)}
    sc = np.asarray(scale).astype(np.float16 if sd == "fp16" else np.float32)
    inputs["scale"] = T(f"{cid}_s", sc, sd) if sc.ndim else V(float(sc), sd)
    ref = f64(q)
    shp = bshape(q, axis, sc.size) if sc.ndim else []
    if zp is not None:
        z = np.asarray(zp)
        inputs["zero_point"] = T(f"{cid}_z", z, qd) if z.ndim else V(int(z), qd)
        ref = ref - f64(z).reshape(shp)
    ref = ref * f64(sc).reshape(shp)
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    w.add(cid, "dequantize", inputs, [(out_cast(ref, sd), sd)], precision="fp16" if sd == "fp16" else "fp32")


dequantize_case("dequantize_int8_per_axis", w.rng.integers(-128, 128, size=(3, 4)), "int8",
                [0.1, 0.02, 0.5], "fp32", [0, -3, 7], axis=0)
dequantize_case("dequantize_uint8_scalar_fp16", w.rng.integers(0, 256, size=(2, 5)), "uint8", 0.0125, "fp16", 128)
dequantize_case("dequantize_int8_no_zero_point", w.rng.integers(-128, 128, size=(4,)), "int8", 0.25, "fp32", None)

w.write()
