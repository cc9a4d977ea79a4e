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
c.write()
