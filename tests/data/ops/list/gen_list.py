"""Oracle cases for make_list, list_length, list_write, list_read, list_gather, list_scatter
(coremltools 9.0 iOS15/control_flow.py). A list value is the tensor stacking its elements
([length, *element shape], zeros where never written; runtime/ops/list.cpp), so the reference
is numpy stacking and fancy indexing on Python lists of arrays. Lists seen by the op harness
are dynamic (they grow on writes past the end). Run: /opt/ctvenv/bin/python gen_list.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out, tup  # noqa: E402

c = Cases(__file__)
rng = c.rng


def h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def stack(elems, shape, dtype):
    return np.stack(elems).astype(dtype) if elems else np.zeros((0,) + shape, dtype)


# make_list: zeros of [init_length, *elem_shape]; a symbolic (string) dim is 0 until written.
c.add("make_list_fp16", "make_list", {"init_length": lit(3, "int32"), "dtype": lit("fp16", "string"),
                                      "elem_shape": tup([lit(2, "int32"), lit(4, "int32")])},
      [out(np.zeros((3, 2, 4)), "fp16")])
c.add("make_list_defaults", "make_list", {"elem_shape": tup([lit(5, "int32")])}, [out(np.zeros((1, 5)), "fp32")])
c.add("make_list_int32_empty", "make_list", {"init_length": lit(0, "int32"), "dtype": lit("int32", "string"),
                                             "elem_shape": tup([lit(2, "int32")])}, [out(np.zeros((0, 2)), "int32")])
c.add("make_list_symbolic_dim", "make_list", {"init_length": lit(2, "int32"),
                                              "elem_shape": tup([lit("is0", "string"), lit(3, "int32")])},
      [out(np.zeros((2, 0, 3)), "fp32")])

# list_write: in range, past the end (grows), into an unresolved symbolic dim.
ls = np.stack([h(2, 3) for _ in range(3)])
v = h(2, 3)
want = ls.copy()
want[1] = v
c.add("list_write_in_range", "list_write", {"ls": arr(ls, "fp16"), "index": lit(1, "int32"), "value": arr(v, "fp16")},
      [out(want, "fp16")])
grown = np.concatenate([ls, np.zeros((2, 2, 3), np.float16), v[None]])
c.add("list_write_grows", "list_write", {"ls": arr(ls, "fp16"), "index": lit(5, "int32"), "value": arr(v, "fp16")},
      [out(grown, "fp16")])
empty = np.zeros((2, 0, 3), np.float32)
v3 = rng.standard_normal((4, 3)).astype(np.float32)
resolved = np.zeros((2, 4, 3), np.float32)
resolved[0] = v3
c.add("list_write_resolves_symbolic_dim", "list_write", {"ls": arr(empty, "fp32"), "index": lit(0, "int32"),
                                                        "value": arr(v3, "fp32")}, [out(resolved, "fp32")],
      precision="fp32")
li = rng.integers(-5, 5, (2, 3)).astype(np.int32)
vi = rng.integers(-5, 5, (3,)).astype(np.int32)
wi = li.copy()
wi[0] = vi
c.add("list_write_int32", "list_write", {"ls": arr(li, "int32"), "index": lit(0, "int32"), "value": arr(vi, "int32")},
      [out(wi, "int32")])

# list_read / list_gather / list_length
c.add("list_read", "list_read", {"ls": arr(ls, "fp16"), "index": lit(2, "int32")}, [out(ls[2], "fp16")])
c.add("list_gather", "list_gather", {"ls": arr(ls, "fp16"), "indices": lit([2, 0, 2], "int32")},
      [out(ls[[2, 0, 2]], "fp16")])
c.add("list_length", "list_length", {"ls": arr(ls, "fp16")}, [out(np.array(3), "int32")])
c.add("list_length_empty", "list_length", {"ls": arr(np.zeros((0, 2), np.float32), "fp32")}, [out(np.array(0), "int32")])

# list_scatter
vs = h(2, 2, 3)
want = ls.copy()
want[[2, 0]] = vs
c.add("list_scatter", "list_scatter", {"ls": arr(ls, "fp16"), "indices": lit([2, 0], "int32"), "value": arr(vs, "fp16")},
      [out(want, "fp16")])
want = np.concatenate([ls, np.zeros((1, 2, 3), np.float16)])
want[[3, 1]] = vs
c.add("list_scatter_grows", "list_scatter", {"ls": arr(ls, "fp16"), "indices": lit([3, 1], "int32"),
                                             "value": arr(vs, "fp16")}, [out(want, "fp16")])

c.error("list_read_out_of_range", "list_read", {"ls": arr(ls, "fp16"), "index": lit(3, "int32")}, ["fp16"],
        contains="out of range")
c.error("list_write_negative", "list_write", {"ls": arr(ls, "fp16"), "index": lit(-1, "int32"), "value": arr(v, "fp16")},
        ["fp16"], contains="out of range")
c.error("list_write_wrong_shape", "list_write", {"ls": arr(ls, "fp16"), "index": lit(0, "int32"),
                                                 "value": arr(h(3, 2), "fp16")}, ["fp16"], contains="shape")
c.error("list_gather_out_of_range", "list_gather", {"ls": arr(ls, "fp16"), "indices": lit([0, 7], "int32")}, ["fp16"],
        contains="out of range")
c.error("make_list_bad_dtype", "make_list", {"dtype": lit("fp64", "string"), "elem_shape": tup([lit(1, "int32")])},
        ["fp32"], contains="dtype")
c.write()
