"""Oracle cases for the elementwise_unary family (numpy reference, float64 math on the fp16
inputs, result rounded to the stored dtype). Run: /opt/ctvenv/bin/python gen_elementwise_unary.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-6, rtol=1e-3)   # one fp16 ulp: our fp32 math vs numpy float64 math
F32 = dict(atol=1e-6, rtol=2e-6)   # fp32 libm vs float64 reference


def uniform(lo, hi, shape):
    return rng.uniform(lo, hi, shape).astype(np.float16)


# op -> (numpy function of float64, input domain)
UNARY = {
    "abs": (np.abs, (-4, 4)),
    "acos": (np.arccos, (-0.99, 0.99)),
    "asin": (np.arcsin, (-0.99, 0.99)),
    "atan": (np.arctan, (-6, 6)),
    "atanh": (np.arctanh, (-0.95, 0.95)),
    "ceil": (np.ceil, (-5, 5)),
    "cos": (np.cos, (-7, 7)),
    "cosh": (np.cosh, (-4, 4)),
    "erf": (lambda v: np.vectorize(__import__("math").erf)(v), (-3, 3)),
    "exp": (np.exp, (-6, 6)),
    "exp2": (np.exp2, (-8, 8)),
    "floor": (np.floor, (-5, 5)),
    "round": (np.round, (-5, 5)),
    "sign": (np.sign, (-3, 3)),
    "sin": (np.sin, (-7, 7)),
    "sinh": (np.sinh, (-4, 4)),
    "sqrt": (np.sqrt, (0, 9)),
    "square": (np.square, (-10, 10)),
    "tan": (np.tan, (-1.4, 1.4)),
    "tanh": (np.tanh, (-4, 4)),
}
SHAPES = [(2, 3, 4), (), (1, 5, 1)]

for op, (fn, (lo, hi)) in UNARY.items():
    for k, shape in enumerate(SHAPES):
        x = uniform(lo, hi, shape)
        ref = fn(x.astype(np.float64))
        c.add(f"{op}_fp16_{k}", op, {"x": arr(x, "fp16")}, [out(ref, "fp16")], **F16)
    x = uniform(lo, hi, (3, 4))
    ref = fn(x.astype(np.float64))
    c.add(f"{op}_fp32", op, {"x": arr(x, "fp16")}, [out(ref, "fp16")], precision="fp32", **F32)

# fp32-declared input and output.
x = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
c.add("exp_fp32_declared", "exp", {"x": arr(x, "fp32")}, [out(np.exp(x.astype(np.float64)), "fp32")],
      **F32)

# Overflow: exp(12) = 162754.8 > 65504 becomes inf in fp16, stays finite in fp32 mode.
x = np.array([0.0, 10.0, 11.0, 12.0, -20.0], np.float16)
c.add("exp_overflow_fp16", "exp", {"x": arr(x, "fp16")}, [out(np.exp(x.astype(np.float64)), "fp16")], **F16)
c.add("exp_overflow_fp32", "exp", {"x": arr(x, "fp16")}, [out(np.exp(x.astype(np.float64)), "fp16")],
      precision="fp32", **F32)
x = np.array([-12.0, 12.0, 0.5], np.float16)
c.add("cosh_overflow_fp16", "cosh", {"x": arr(x, "fp16")}, [out(np.cosh(x.astype(np.float64)), "fp16")], **F16)

# round: halves go to the even neighbour (numpy).
x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51], np.float16)
c.add("round_half_even", "round", {"x": arr(x, "fp16")}, [out(np.round(x), "fp16")])
# sign and sqrt of special values.
x = np.array([-0.0, 0.0, -2.0, 3.0, np.inf, -np.inf], np.float16)
c.add("sign_special", "sign", {"x": arr(x, "fp16")}, [out(np.sign(x), "fp16")])
x = np.array([-1.0, 0.0, 4.0, np.inf], np.float16)
with np.errstate(invalid="ignore"):
    c.add("sqrt_negative_nan", "sqrt", {"x": arr(x, "fp16")}, [out(np.sqrt(x.astype(np.float64)), "fp16")])
# Empty tensor.
c.add("abs_empty", "abs", {"x": arr(np.zeros((0, 3), np.float16), "fp16")},
      [out(np.zeros((0, 3)), "fp16")])

# Integer inputs stay integer.
xi = rng.integers(-50, 50, (3, 4)).astype(np.int32)
for op, fn in {"abs": np.abs, "sign": np.sign, "square": np.square, "ceil": lambda v: v,
               "floor": lambda v: v, "round": lambda v: v}.items():
    c.add(f"{op}_int32", op, {"x": arr(xi, "int32")}, [out(fn(xi), "int32")])

# Epsilons: defaults are added even when absent; explicit ones are read.
def add_eps(op, fn, default, x, eps=None, precision="fp16", suffix=""):
    e = default if eps is None else eps
    inputs = {"x": arr(x, "fp16")}
    if eps is not None:
        inputs["epsilon"] = lit(eps, "fp32")
    with np.errstate(divide="ignore"):
        ref = fn(x.astype(np.float32), np.float32(e))
    tol = F16 if precision == "fp16" else F32
    c.add(f"{op}_eps{suffix}_{precision}", op, inputs, [out(ref, "fp16")], precision=precision, **tol)

zero_and_pos = np.array([0.0, 1e-3, 0.25, 2.0, 100.0], np.float16)
for p in ("fp16", "fp32"):
    add_eps("rsqrt", lambda v, e: 1 / np.sqrt(v + e), 1e-12, zero_and_pos, precision=p)
    add_eps("inverse", lambda v, e: 1 / (v + e), 1e-4, zero_and_pos, precision=p)
    add_eps("log", lambda v, e: np.log(v + e), 1e-45, zero_and_pos, precision=p)
    add_eps("rsqrt", lambda v, e: 1 / np.sqrt(v + e), 1e-12, zero_and_pos, eps=0.5, precision=p,
            suffix="_explicit")
    add_eps("inverse", lambda v, e: 1 / (v + e), 1e-4, zero_and_pos, eps=0.25, precision=p,
            suffix="_explicit")
    add_eps("log", lambda v, e: np.log(v + e), 1e-45, zero_and_pos, eps=1.0, precision=p,
            suffix="_explicit")
x = uniform(0.1, 5, (2, 3))
add_eps("rsqrt", lambda v, e: 1 / np.sqrt(v + e), 1e-12, x, suffix="_random")
add_eps("log", lambda v, e: np.log(v + e), 1e-45, x, suffix="_random")
add_eps("inverse", lambda v, e: 1 / (v + e), 1e-4, x, suffix="_random")

# logical_not on bool.
b = rng.integers(0, 2, (2, 5)).astype(bool)
c.add("logical_not_bool", "logical_not", {"x": arr(b, "bool")}, [out(~b, "bool")])
c.add("logical_not_scalar", "logical_not", {"x": arr(np.array(True), "bool")}, [out(np.array(False), "bool")])

# Errors.
c.error("sqrt_string_input", "sqrt", {"x": lit("abc", "string")}, ["fp16"])
c.error("log_missing_x", "log", {}, ["fp16"], expect="missing parameter", contains="x")

c.write()
