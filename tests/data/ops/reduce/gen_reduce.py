"""Oracle cases for the reduce family: every reduce_* op over default / single / several /
negative axes with and without keep_dims; argmax/argmin first-index ties, int32 output.
Run: /opt/ctvenv/bin/python gen_reduce.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-5, rtol=1e-3)
F32 = dict(atol=1e-6, rtol=1e-5)


def lse(v, axis, keepdims):
    m = np.max(v, axis=axis, keepdims=True)
    r = m + np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True))
    return r if keepdims else np.squeeze(r, axis=axis) if axis is not None else r.reshape(())


RED = {
    "reduce_sum": lambda v, a, k: np.sum(v, axis=a, keepdims=k),
    "reduce_mean": lambda v, a, k: np.mean(v, axis=a, keepdims=k),
    "reduce_max": lambda v, a, k: np.max(v, axis=a, keepdims=k),
    "reduce_min": lambda v, a, k: np.min(v, axis=a, keepdims=k),
    "reduce_prod": lambda v, a, k: np.prod(v, axis=a, keepdims=k),
    "reduce_l1_norm": lambda v, a, k: np.sum(np.abs(v), axis=a, keepdims=k),
    "reduce_l2_norm": lambda v, a, k: np.sqrt(np.sum(v * v, axis=a, keepdims=k)),
    "reduce_sum_square": lambda v, a, k: np.sum(v * v, axis=a, keepdims=k),
    "reduce_log_sum": lambda v, a, k: np.log(np.sum(v, axis=a, keepdims=k)),
    "reduce_log_sum_exp": lse,
}
# (axes or None for the default, keep_dims or None for the default)
AXES = [(None, None), ([1], False), ([-1], True), ([0, 2], False), ([-3, -1], True), ([2, 0], None)]

for op, fn in RED.items():
    lo, hi = (0.5, 1.5) if op in ("reduce_prod",) else (0.1, 3) if op == "reduce_log_sum" else (-3, 3)
    for k, (axes, keep) in enumerate(AXES):
        x = rng.uniform(lo, hi, (2, 3, 4)).astype(np.float16)
        inputs = {"x": arr(x, "fp16")}
        if axes is not None:
            inputs["axes"] = lit(axes, "int32")
        if keep is not None:
            inputs["keep_dims"] = lit(keep, "bool")
        ax = None if axes is None else tuple(axes)
        ref = fn(x.astype(np.float64), ax, bool(keep))
        c.add(f"{op}_{k}", op, inputs, [out(ref, "fp16")], **F16)
    x = rng.uniform(lo, hi, (3, 5)).astype(np.float16)
    ref = fn(x.astype(np.float64), (1,), False)
    c.add(f"{op}_fp32", op, {"x": arr(x, "fp16"), "axes": lit([1], "int32")}, [out(ref, "fp16")],
          precision="fp32", **F32)

# Rank-0 input: reducing "all" of a scalar is the identity-like reduction.
c.add("reduce_sum_scalar", "reduce_sum", {"x": arr(np.float16(2.5), "fp16")}, [out(np.float64(2.5), "fp16")])
# fp16 overflow of a sum that fits in fp32.
x = np.full((4, 8), 30000, np.float16)
c.add("reduce_sum_overflow_fp16", "reduce_sum", {"x": arr(x, "fp16"), "axes": lit([1], "int32")},
      [out(np.sum(x.astype(np.float64), axis=1), "fp16")])
c.add("reduce_sum_overflow_fp32", "reduce_sum", {"x": arr(x, "fp16"), "axes": lit([1], "int32")},
      [out(np.sum(x.astype(np.float64), axis=1), "fp16")], precision="fp32")
# log_sum_exp with large values stays finite (max subtracted).
x = np.array([[1000.0, 1000.0, 999.0], [-5.0, 0.0, 5.0]], np.float32)
c.add("reduce_log_sum_exp_large", "reduce_log_sum_exp", {"x": arr(x, "fp32"), "axes": lit([1], "int32")},
      [out(lse(x.astype(np.float64), 1, False), "fp32")], **F32)
# NaN propagates through max/min.
x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float16)
c.add("reduce_max_nan", "reduce_max", {"x": arr(x, "fp16"), "axes": lit([1], "int32")}, [out(np.max(x, axis=1), "fp16")])
c.add("reduce_min_nan", "reduce_min", {"x": arr(x, "fp16"), "axes": lit([1], "int32")}, [out(np.min(x, axis=1), "fp16")])
# int32 reductions stay integer.
xi = rng.integers(-100, 100, (3, 4)).astype(np.int32)
for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
    xv = xi if op != "reduce_prod" else rng.integers(-4, 5, (3, 4)).astype(np.int32)
    c.add(f"{op}_int32", op, {"x": arr(xv, "int32"), "axes": lit([0], "int32")},
          [out(RED[op](xv.astype(np.int64), (0,), False), "int32")])

# argmax / argmin: default axis -1, explicit axes, keep_dims, ties -> first index.
for op, fn in (("reduce_argmax", np.argmax), ("reduce_argmin", np.argmin)):
    x = rng.integers(-3, 4, (2, 3, 5)).astype(np.float16)  # many ties
    c.add(f"{op}_default", op, {"x": arr(x, "fp16")}, [out(fn(x, axis=-1), "int32")])
    c.add(f"{op}_axis0", op, {"x": arr(x, "fp16"), "axis": lit(0, "int32")}, [out(fn(x, axis=0), "int32")])
    c.add(f"{op}_axis_neg2_keep", op, {"x": arr(x, "fp16"), "axis": lit(-2, "int32"), "keep_dims": lit(True, "bool")},
          [out(np.expand_dims(fn(x, axis=-2), -2), "int32")])
    xi = rng.integers(-5, 5, (4, 3)).astype(np.int32)
    c.add(f"{op}_int32", op, {"x": arr(xi, "int32"), "axis": lit(1, "int32")}, [out(fn(xi, axis=1), "int32")])
    c.add(f"{op}_uint16_out", op, {"x": arr(x, "fp16"), "axis": lit(2, "int32"), "output_dtype": lit("uint16", "string")},
          [out(fn(x, axis=2), "uint16")])
    xn = np.array([[1.0, np.nan, 7.0, np.nan]], np.float16)
    c.add(f"{op}_nan_first", op, {"x": arr(xn, "fp16")}, [out(fn(xn, axis=-1), "int32")])

# Errors.
x = np.ones((2, 3), np.float16)
c.error("reduce_sum_axis_out_of_range", "reduce_sum", {"x": arr(x, "fp16"), "axes": lit([2], "int32")}, ["fp16"],
        contains="out of range")
c.error("reduce_mean_duplicate_axes", "reduce_mean", {"x": arr(x, "fp16"), "axes": lit([1, -1], "int32")}, ["fp16"],
        contains="twice")
c.error("reduce_argmax_axis_out_of_range", "reduce_argmax", {"x": arr(x, "fp16"), "axis": lit(-3, "int32")}, ["int32"],
        contains="axis")
c.error("reduce_max_empty_axis", "reduce_max", {"x": arr(np.ones((2, 0), np.float16), "fp16"), "axes": lit([1], "int32")},
        ["fp16"], contains="empty")
c.write()
