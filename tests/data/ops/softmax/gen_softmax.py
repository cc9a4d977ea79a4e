"""Oracle cases for softmax (numpy float64, max-subtracted). Run: /opt/ctvenv/bin/python gen_softmax.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402

w = CaseWriter(__file__, seed=404)
T, V = w.tensor, w.value


def softmax_ref(x, axis):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_case(cid, x, axis=None, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    inputs = {"x": T(f"{cid}_x", x, d)}
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    ref = softmax_ref(f64(x), -1 if axis is None else axis)
    w.add(cid, "softmax", inputs, [(out_cast(ref, d), d)], precision=prec)


softmax_case("softmax_default_axis", w.rand([2, 3, 10], "fp16", -4, 4))
softmax_case("softmax_axis0_fp32", w.rand([5, 3], "fp32", -4, 4), axis=0, prec="fp32")
softmax_case("softmax_middle_axis", w.rand([2, 6, 3], "fp16", -4, 4), axis=-2)
# Logits near the fp16 maximum: exp without the max subtracted would overflow.
softmax_case("softmax_large_logits", w.rand([3, 8], "fp16", 60000, 65000))
softmax_case("softmax_large_logits_fp32", w.rand([2, 5], "fp32", 1000, 1010), prec="fp32")
softmax_case("softmax_single_element", w.rand([4, 1], "fp16"))
x = w.rand([2, 4], "fp32")
x[0, 1] = -np.inf
softmax_case("softmax_minus_inf_entry_fp32", x, prec="fp32")
w.error("softmax_axis_out_of_range", "softmax",
        {"x": T("bad_sm_x", w.rand([2, 3]), "fp16"), "axis": V(2, "int32")}, 1, "shape", "axis")

w.write()
