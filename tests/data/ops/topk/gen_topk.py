"""Oracle cases for topk and argsort (numpy stable argsort). Run: /opt/ctvenv/bin/python gen_topk.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter  # noqa: E402

w = CaseWriter(__file__, seed=606)
T, V = w.tensor, w.value
EXACT = {}


def order(x, axis, ascending):
    # Stable; NaN last in both directions (numpy's argsort(x) / argsort(-x) behaviour).
    return np.argsort(x if ascending else -x, axis=axis, kind="stable")


def topk_case(cid, x, d, k=None, axis=None, ascending=None, extra=None, prec="fp16", with_idx=True):
    inputs = {"x": T(f"{cid}_x", x, d)}
    if k is not None:
        inputs["k"] = V(k, "int32")
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    if ascending is not None:
        inputs["ascending"] = V(ascending, "bool")
    inputs.update(extra or {})
    ax = -1 if axis is None else axis
    kk = 1 if k is None else k
    idx = order(x, ax, bool(ascending))
    if kk != -1:
        idx = np.take(idx, np.arange(kk), axis=ax)
    vals = np.take_along_axis(x, idx, axis=ax)
    outs = [(vals, d)] + ([(idx, "int32")] if with_idx else [])
    w.add(cid, "topk", inputs, outs, precision=prec, tol=EXACT)


topk_case("topk_default_k1", w.rand([3, 10]), "fp16")
topk_case("topk_k3_axis0_fp32", w.rand([7, 4], "fp32"), "fp32", k=3, axis=0, prec="fp32")
topk_case("topk_ascending", w.rand([2, 3, 9]), "fp16", k=4, ascending=True)
topk_case("topk_all_k_minus1", w.rand([2, 6]), "fp16", k=-1)
topk_case("topk_ties_stable", np.array([[1, 3, 3, 2, 3, 1]], dtype=np.float16), "fp16", k=4)
topk_case("topk_sort_false_values_only", w.rand([2, 8]), "fp16", k=2,
          extra={"sort": V(False, "bool"), "return_indices": V(False, "bool")}, with_idx=False)
x = w.rand([1, 6], "fp32")
x[0, 2] = np.nan
topk_case("topk_nan_last_fp32", x, "fp32", k=6, prec="fp32")
topk_case("topk_int32", np.array([[5, -2, 9, 0], [1, 1, -7, 3]]), "int32", k=2)
w.error("topk_k_too_large", "topk", {"x": T("bad_k_x", w.rand([2, 3]), "fp16"), "k": V(4, "int32")},
        2, "shape", "k =", out_dtype="fp16")


def argsort_case(cid, x, d, axis=None, ascending=None, prec="fp16"):
    inputs = {"x": T(f"{cid}_x", x, d)}
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    if ascending is not None:
        inputs["ascending"] = V(ascending, "bool")
    w.add(cid, "argsort", inputs, [(order(x, -1 if axis is None else axis, bool(ascending)), "int32")],
          precision=prec, tol=EXACT)


argsort_case("argsort_default_descending", w.rand([3, 7]), "fp16")
argsort_case("argsort_ascending_axis0", w.rand([5, 2], "fp32"), "fp32", axis=0, ascending=True, prec="fp32")
argsort_case("argsort_ties", np.array([2, 1, 2, 0, 1], dtype=np.float16), "fp16", ascending=True)

w.write()
