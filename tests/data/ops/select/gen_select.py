"""Oracle cases for select(cond, a, b) with three-way numpy broadcasting (np.where).
Run: /opt/ctvenv/bin/python gen_select.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng

SHAPES = [((2, 3), (2, 3), (2, 3)), ((2, 1, 4), (3, 1), (4,)), ((), (2, 2), ()),
          ((1, 4), (3, 1), (1, 1)), ((5,), (), (5,))]
for k, (cs, as_, bs) in enumerate(SHAPES):
    cond = rng.integers(0, 2, cs).astype(bool)
    a = rng.standard_normal(as_).astype(np.float16)
    b = rng.standard_normal(bs).astype(np.float16)
    c.add(f"select_fp16_{k}", "select", {"cond": arr(cond, "bool"), "a": arr(a, "fp16"), "b": arr(b, "fp16")},
          [out(np.where(cond, a, b), "fp16")])
cond = rng.integers(0, 2, (3, 4)).astype(bool)
a = rng.standard_normal((3, 4)).astype(np.float16)
b = rng.standard_normal((4,)).astype(np.float16)
c.add("select_fp32", "select", {"cond": arr(cond, "bool"), "a": arr(a, "fp16"), "b": arr(b, "fp16")},
      [out(np.where(cond, a, b), "fp16")], precision="fp32")
ai = rng.integers(-9, 9, (3, 4)).astype(np.int32)
c.add("select_int32", "select", {"cond": arr(cond, "bool"), "a": arr(ai, "int32"), "b": lit(-1, "int32")},
      [out(np.where(cond, ai, -1), "int32")])
# Masking pattern: fill with -inf where the mask is false (fp16 -inf stays -inf).
mask = np.tril(np.ones((4, 4), bool))
s = rng.standard_normal((2, 4, 4)).astype(np.float16)
c.add("select_causal_mask", "select", {"cond": arr(mask, "bool"), "a": arr(s, "fp16"), "b": lit("-inf", "fp16")},
      [out(np.where(mask, s, -np.inf), "fp16")])
# Mixed dtypes: fp32 activation vs fp16 constant.
af = rng.standard_normal((2, 3)).astype(np.float32)
bh = rng.standard_normal((3,)).astype(np.float16)
cond = rng.integers(0, 2, (2, 3)).astype(bool)
c.add("select_mixed_dtypes", "select", {"cond": arr(cond, "bool"), "a": arr(af, "fp32"), "b": arr(bh, "fp16")},
      [out(np.where(cond, af, bh.astype(np.float32)), "fp32")], precision="fp32")

c.error("select_bad_broadcast", "select",
        {"cond": arr(np.ones((2, 3), bool), "bool"), "a": arr(np.ones((4,), np.float16), "fp16"),
         "b": arr(np.ones((2, 3), np.float16), "fp16")}, ["fp16"], contains="broadcast")

# non_zero: numpy's transpose(nonzero(x)) as int32 [count, rank].
rng_nz = np.random.default_rng(77)
for cid, x, dt in (("non_zero_fp16_2d", (rng_nz.integers(-1, 2, (3, 4)) * rng_nz.standard_normal((3, 4))).astype(np.float16), "fp16"),
                   ("non_zero_int32_3d", rng_nz.integers(-1, 2, (2, 3, 2)).astype(np.int32), "int32"),
                   ("non_zero_bool_1d", rng_nz.integers(0, 2, (7,)).astype(bool), "bool"),
                   ("non_zero_none", np.zeros((2, 2), np.float16), "fp16"),
                   ("non_zero_nan_counts", np.array([0, np.nan, -0.0, 1], np.float16), "fp16")):
    c.add(cid, "non_zero", {"x": arr(x, dt)}, [out(np.transpose(np.nonzero(x)).astype(np.int32), "int32")])
c.error("non_zero_scalar", "non_zero", {"x": arr(np.float16(1), "fp16")}, ["int32"], contains="scalar")
c.write()
