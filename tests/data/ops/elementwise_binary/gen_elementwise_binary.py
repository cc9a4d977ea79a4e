"""Oracle cases for the elementwise_binary family: numpy broadcasting, float64 math on the fp16
inputs rounded to the stored dtype, exact int32 math (floor toward -inf, numpy mod sign rule),
bool comparisons. Run: /opt/ctvenv/bin/python gen_elementwise_binary.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-6, rtol=1e-3)
F32 = dict(atol=1e-6, rtol=2e-6)

ARITH = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.divide,
    "pow": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "floor_div": np.floor_divide, "mod": np.mod,
}
# (x shape, y shape): same, broadcast both ways, scalar operands, size-1 dims.
PAIRS = [((2, 3, 4), (2, 3, 4)), ((3, 1, 4), (2, 1)), ((4,), (2, 3, 1)), ((), (2, 3)),
         ((2, 3), ()), ((1, 1, 5), (1, 5))]


def operands(op, xs, ys):
    x = rng.uniform(-6, 6, xs).astype(np.float16)
    y = rng.uniform(-6, 6, ys).astype(np.float16)
    if op == "pow":
        x = rng.uniform(0.1, 3, xs).astype(np.float16)
        y = rng.uniform(-2, 3, ys).astype(np.float16)
    if op in ("real_div", "floor_div", "mod"):
        y = np.asarray(np.where(y < 0, np.minimum(y, -0.25), np.maximum(y, 0.25))).astype(np.float16)
    return x, y


for op, fn in ARITH.items():
    for k, (xs, ys) in enumerate(PAIRS):
        x, y = operands(op, xs, ys)
        ref = fn(x.astype(np.float64), y.astype(np.float64))
        tol = F16
        if op in ("floor_div",):
            # floor of a quotient: compare on the value numpy's float32 floor_divide gives
            ref = fn(x.astype(np.float32), y.astype(np.float32))
        if op == "mod":
            ref = fn(x.astype(np.float32), y.astype(np.float32))
        c.add(f"{op}_fp16_{k}", op, {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, [out(ref, "fp16")], **tol)
    x, y = operands(op, (3, 4), (4,))
    if op in ("floor_div", "mod"):
        ref = fn(x.astype(np.float32), y.astype(np.float32))
    else:
        ref = fn(x.astype(np.float64), y.astype(np.float64))
    c.add(f"{op}_fp32", op, {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, [out(ref, "fp16")],
          precision="fp32", **F32)

# Mixed: fp16 weight-like operand next to an fp32 activation (reference mode).
x = rng.uniform(-3, 3, (2, 4)).astype(np.float32)
y = rng.uniform(-3, 3, (4,)).astype(np.float16)
c.add("add_mixed_fp32_fp16", "add", {"x": arr(x, "fp32"), "y": arr(y, "fp16")},
      [out(x.astype(np.float64) + y.astype(np.float64), "fp32")], precision="fp32", **F32)

# Integer arithmetic (int32 in, int32 out), negative operands for floor_div/mod.
xi = rng.integers(-40, 40, (3, 4)).astype(np.int32)
yi = rng.integers(-7, 8, (4,)).astype(np.int32)
yi[yi == 0] = 3
for op in ("add", "sub", "mul", "maximum", "minimum", "floor_div", "mod"):
    c.add(f"{op}_int32", op, {"x": arr(xi, "int32"), "y": arr(yi, "int32")},
          [out(ARITH[op](xi, yi), "int32")])
xi = np.array([7, -7, 7, -7, 0, 6, -6], np.int32)
yi = np.array([2, 2, -2, -2, 5, 3, -3], np.int32)
c.add("floor_div_int32_signs", "floor_div", {"x": arr(xi, "int32"), "y": arr(yi, "int32")},
      [out(np.floor_divide(xi, yi), "int32")])
c.add("mod_int32_signs", "mod", {"x": arr(xi, "int32"), "y": arr(yi, "int32")},
      [out(np.mod(xi, yi), "int32")])
# float floor_div / mod sign rule.
xf = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 6.0], np.float16)
yf = np.array([2.0, 2.0, -2.0, -2.0, 5.0, -3.0], np.float16)
c.add("floor_div_fp16_signs", "floor_div", {"x": arr(xf, "fp16"), "y": arr(yf, "fp16")},
      [out(np.floor_divide(xf.astype(np.float32), yf.astype(np.float32)), "fp16")])
c.add("mod_fp16_signs", "mod", {"x": arr(xf, "fp16"), "y": arr(yf, "fp16")},
      [out(np.mod(xf.astype(np.float32), yf.astype(np.float32)), "fp16")])

# fp16 rounding and overflow.
x = np.array([2048.0, 2048.0, 1.0], np.float16)
y = np.array([1.0, 3.0, 2.0 ** -11], np.float16)
c.add("add_fp16_rounding", "add", {"x": arr(x, "fp16"), "y": arr(y, "fp16")},
      [out(x.astype(np.float64) + y.astype(np.float64), "fp16")])
c.add("add_fp32_keeps_exact", "add", {"x": arr(x, "fp16"), "y": arr(y, "fp16")},
      [out(x.astype(np.float64) + y.astype(np.float64), "fp16")], precision="fp32")
x = np.array([300.0, -300.0, 255.0], np.float16)
c.add("mul_fp16_overflow_inf", "mul", {"x": arr(x, "fp16"), "y": arr(x, "fp16")},
      [out(x.astype(np.float64) * x.astype(np.float64), "fp16")])
c.add("mul_fp32_no_overflow", "mul", {"x": arr(x, "fp16"), "y": arr(x, "fp16")},
      [out(x.astype(np.float64) * x.astype(np.float64), "fp16")], precision="fp32")
x = np.array([1.0, -1.0, 0.0], np.float16)
z = np.zeros(3, np.float16)
with np.errstate(divide="ignore", invalid="ignore"):
    c.add("real_div_by_zero", "real_div", {"x": arr(x, "fp16"), "y": arr(z, "fp16")},
          [out(x.astype(np.float64) / z.astype(np.float64), "fp16")])
x = np.array([np.nan, 1.0, 2.0], np.float16)
y = np.array([0.0, np.nan, 1.0], np.float16)
c.add("maximum_nan", "maximum", {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, [out(np.maximum(x, y), "fp16")])
c.add("minimum_nan", "minimum", {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, [out(np.minimum(x, y), "fp16")])
# Scalar literal operand (as written inline in model.mil).
x = rng.uniform(-2, 2, (2, 3)).astype(np.float16)
c.add("mul_literal_scalar", "mul", {"x": arr(x, "fp16"), "y": lit(0.125, "fp16")},
      [out(x.astype(np.float64) * 0.125, "fp16")], **F16)

CMP = {"equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
       "greater": np.greater, "greater_equal": np.greater_equal}
for op, fn in CMP.items():
    # Small integers in fp16 so ties are frequent.
    x = rng.integers(-2, 3, (2, 3, 4)).astype(np.float16)
    y = rng.integers(-2, 3, (3, 1)).astype(np.float16)
    c.add(f"{op}_fp16", op, {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, [out(fn(x, y), "bool")])
    xi = rng.integers(-3, 4, (4,)).astype(np.int32)
    yi = rng.integers(-3, 4, (2, 4)).astype(np.int32)
    c.add(f"{op}_int32", op, {"x": arr(xi, "int32"), "y": arr(yi, "int32")}, [out(fn(xi, yi), "bool")])
    c.add(f"{op}_scalar", op, {"x": arr(np.float16(1.0), "fp16"), "y": arr(np.float16(1.0), "fp16")},
          [out(fn(np.float16(1), np.float16(1)), "bool")])
x = np.array([np.nan, 1.0], np.float16)
c.add("equal_nan", "equal", {"x": arr(x, "fp16"), "y": arr(x, "fp16")}, [out(np.equal(x, x), "bool")])
c.add("not_equal_nan", "not_equal", {"x": arr(x, "fp16"), "y": arr(x, "fp16")}, [out(np.not_equal(x, x), "bool")])

LOG = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}
a = np.array([[True, False, True, False]])
b = np.array([[True], [False]])
for op, fn in LOG.items():
    c.add(f"{op}_bool", op, {"x": arr(a, "bool"), "y": arr(b, "bool")}, [out(fn(a, b), "bool")])

# Errors: shapes that do not broadcast, missing operand.
x = np.ones((2, 3), np.float16)
y = np.ones((4,), np.float16)
c.error("add_bad_broadcast", "add", {"x": arr(x, "fp16"), "y": arr(y, "fp16")}, ["fp16"],
        contains="[2, 3] and [4]")
c.error("less_bad_broadcast", "less", {"x": arr(x, "fp16"), "y": arr(np.ones((3, 2), np.float16), "fp16")},
        ["bool"], contains="broadcast")
c.error("mul_missing_y", "mul", {"x": arr(x, "fp16")}, ["fp16"], expect="missing parameter", contains="'y'")

c.write()
