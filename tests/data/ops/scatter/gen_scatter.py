"""Oracle cases for scatter, scatter_along_axis and scatter_nd (coremltools 9.0 iOS15/iOS17
scatter_gather.py; default mode add). The reference applies the updates one by one in index
order with numpy indexing (the order fixes the result of repeated indices), in float64.
Run: /opt/ctvenv/bin/python gen_scatter.py"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-3, rtol=1e-3)
MODES = {
    "update": lambda o, u: u, "add": lambda o, u: o + u, "sub": lambda o, u: o - u,
    "mul": lambda o, u: o * u, "div": lambda o, u: o / u, "max": np.maximum, "min": np.minimum,
}


def h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def ref_scatter(data, idx, upd, axis, mode):
    o = data.astype(np.float64).copy()
    om, um = np.moveaxis(o, axis, 0), np.moveaxis(upd.astype(np.float64), axis, 0)
    for i, k in enumerate(idx):
        om[k] = MODES[mode](om[k], um[i])
    return o


def ref_along_axis(data, idx, upd, axis, mode):
    o = data.astype(np.float64).copy()
    u = upd.astype(np.float64)
    for pos in itertools.product(*[range(n) for n in idx.shape]):
        dst = list(pos)
        dst[axis] = idx[pos]
        o[tuple(dst)] = MODES[mode](o[tuple(dst)], u[pos])
    return o


def ref_nd(data, idx, upd, mode):
    o = data.astype(np.float64).copy()
    u = upd.astype(np.float64)
    for pos in itertools.product(*[range(n) for n in idx.shape[:-1]]):
        t = tuple(idx[pos])
        o[t] = MODES[mode](o[t], u[pos])
    return o


def case(cid, op, data, idx, upd, mode=None, axis=None, opset=None, dtype="fp16", prec="fp16"):
    inputs = {"data": arr(data, dtype), "indices": arr(idx, "int32"), "updates": arr(upd, dtype)}
    if mode is not None:
        inputs["mode"] = lit(mode, "string")
    if axis is not None:
        inputs["axis"] = lit(axis, "int32")
    m = mode or "add"
    if op == "scatter":
        ax = (axis or 0) % data.ndim
        wrapped = np.where(idx < 0, idx + data.shape[ax], idx)
        y = ref_scatter(data, wrapped, upd, ax, m)
    elif op == "scatter_along_axis":
        ax = (axis or 0) % data.ndim
        y = ref_along_axis(data, np.where(idx < 0, idx + data.shape[ax], idx), upd, ax, m)
    else:
        y = ref_nd(data, idx, upd, m)
    tol = F16 if dtype == "fp16" and prec == "fp16" else ({} if dtype == "int32" else dict(atol=1e-5, rtol=1e-5))
    c.add(cid, op, inputs, [out(y, dtype)], precision=prec, opset=opset, **tol)


# Every mode on each op; repeated indices show that updates apply in order.
for mode in (None,) + tuple(MODES):
    name = mode or "default_add"
    d = h(5, 3)
    u = (h(4, 3) + np.float16(3)).astype(np.float16)  # away from 0 for div
    case(f"scatter_{name}", "scatter", d, np.array([3, 0, 3, 1], np.int32), u, mode)
    d = h(3, 4)
    idx = rng.integers(0, 4, (3, 2)).astype(np.int32)
    idx[0] = [2, 2]
    u = (h(3, 2) + np.float16(3)).astype(np.float16)
    case(f"scatter_along_axis_{name}", "scatter_along_axis", d, idx, u, mode, axis=1)
    d = h(3, 4, 2)
    idx = np.array([[0, 1], [2, 3], [0, 1]], np.int32)
    u = (h(3, 2) + np.float16(3)).astype(np.float16)
    case(f"scatter_nd_{name}", "scatter_nd", d, idx, u, mode)

# Axes, ranks, negative indices (iOS15/16 only), int32, fp32 mode.
case("scatter_axis_neg1", "scatter", h(2, 3, 4), np.array([0, 3], np.int32), h(2, 3, 2), "update", axis=-1)
case("scatter_axis1_rank3", "scatter", h(2, 5, 2), np.array([4, 1, 2], np.int32), h(2, 3, 2), "add", axis=1)
case("scatter_negative_index_ios16", "scatter", h(4, 2), np.array([-1, 0], np.int32), h(2, 2), "update", opset="ios16")
case("scatter_int32", "scatter", rng.integers(-9, 9, (4, 2)).astype(np.int32), np.array([1, 1], np.int32),
     rng.integers(-9, 9, (2, 2)).astype(np.int32), "add", dtype="int32")
case("scatter_fp32_mode", "scatter", h(4, 3), np.array([2, 0], np.int32), h(2, 3), "mul", dtype="fp32", prec="fp32")
case("scatter_along_axis_axis0", "scatter_along_axis", h(4, 3), rng.integers(0, 4, (2, 3)).astype(np.int32), h(2, 3),
     "update", axis=0)
case("scatter_along_axis_negative_ios16", "scatter_along_axis", h(2, 3), np.array([[-1], [-3]], np.int32), h(2, 1),
     "update", axis=1, opset="ios16")
case("scatter_along_axis_int32", "scatter_along_axis", rng.integers(-9, 9, (2, 3)).astype(np.int32),
     np.array([[0, 0], [2, 1]], np.int32), rng.integers(-9, 9, (2, 2)).astype(np.int32), "add", axis=1, dtype="int32")
# scatter_nd: full-depth tuples (elements) and depth-1 tuples (rows); the KV-cache pattern.
case("scatter_nd_elements", "scatter_nd", h(3, 4), np.array([[[0, 0], [2, 3]], [[1, 2], [0, 0]]], np.int32), h(2, 2),
     "add")
kv = np.zeros((6, 4), np.float16)
case("scatter_nd_kv_rows", "scatter_nd", kv, np.array([[2], [3]], np.int32), h(2, 4), "update")
case("scatter_nd_int32", "scatter_nd", rng.integers(-9, 9, (3, 2)).astype(np.int32), np.array([[1], [1]], np.int32),
     rng.integers(-9, 9, (2, 2)).astype(np.int32), "sub", dtype="int32")

# fp16 rounding of the combined value.
d = np.array([2048, 1, 0], np.float16)
case("scatter_add_fp16_rounding", "scatter", d, np.array([0], np.int32), np.array([1], np.float16), "add")

# Errors.
c.error("scatter_index_out_of_range", "scatter", {"data": arr(h(3, 2), "fp16"), "indices": lit([3], "int32"),
                                                  "updates": arr(h(1, 2), "fp16")}, ["fp16"], contains="out of range")
c.error("scatter_negative_index_ios17", "scatter", {"data": arr(h(3, 2), "fp16"), "indices": lit([-1], "int32"),
                                                    "updates": arr(h(1, 2), "fp16")}, ["fp16"], contains="iOS17")
c.error("scatter_updates_shape", "scatter", {"data": arr(h(3, 2), "fp16"), "indices": lit([0, 1], "int32"),
                                             "updates": arr(h(2, 3), "fp16")}, ["fp16"], contains="updates")
c.error("scatter_bad_mode", "scatter", {"data": arr(h(3, 2), "fp16"), "indices": lit([0], "int32"),
                                        "updates": arr(h(1, 2), "fp16"), "mode": lit("replace", "string")}, ["fp16"],
        contains="mode")
c.error("scatter_along_axis_shape", "scatter_along_axis",
        {"data": arr(h(3, 2), "fp16"), "indices": arr(np.zeros((2, 3), np.int32), "int32"),
         "updates": arr(h(2, 3), "fp16"), "axis": lit(0, "int32")}, ["fp16"], contains="differ")
c.error("scatter_nd_depth", "scatter_nd", {"data": arr(h(3, 2), "fp16"), "indices": arr(np.zeros((1, 3), np.int32), "int32"),
                                           "updates": arr(h(1), "fp16")}, ["fp16"], contains="last dim")
c.error("scatter_nd_out_of_range", "scatter_nd", {"data": arr(h(3, 2), "fp16"), "indices": lit([[0, 2]], "int32"),
                                                  "updates": arr(h(1), "fp16")}, ["fp16"], contains="out of range")
c.write()
