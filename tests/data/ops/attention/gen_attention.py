"""Oracle cases for scaled_dot_product_attention (numpy float64).
Run: /opt/ctvenv/bin/python gen_attention.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402

w = CaseWriter(__file__, seed=707)
T, V = w.tensor, w.value


def sdpa_ref(q, k, v, mask):
    s = f64(q) @ np.swapaxes(f64(k), -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        if mask.dtype == np.bool_:
            s = np.where(mask, s, -np.inf)
        else:
            s = s + f64(mask)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return p @ f64(v)


def sdpa_case(cid, qs, ks, vs, mask=None, mask_dtype=None, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    q = w.rand(qs, d, -2, 2)
    k = w.rand(ks, d, -2, 2)
    v = w.rand(vs, d)
    inputs = {"query": T(f"{cid}_q", q, d), "key": T(f"{cid}_k", k, d), "value": T(f"{cid}_v", v, d)}
    if mask is not None:
        inputs["attn_mask"] = T(f"{cid}_m", mask, mask_dtype)
        if mask_dtype != "bool":
            mask = mask.astype(np.float16 if mask_dtype == "fp16" else np.float32)
    w.add(cid, "scaled_dot_product_attention", inputs, [(out_cast(sdpa_ref(q, k, v, mask), d), d)],
          precision=prec)


sdpa_case("sdpa_rank3_no_mask", [2, 5, 8], [2, 5, 8], [2, 5, 8])
sdpa_case("sdpa_cross_lengths_fp32", [1, 2, 3, 16], [1, 2, 7, 16], [1, 2, 7, 5], prec="fp32")
causal = np.tril(np.ones((6, 6), dtype=bool))
sdpa_case("sdpa_bool_causal_broadcast", [1, 4, 6, 8], [1, 4, 6, 8], [1, 4, 6, 8], mask=causal, mask_dtype="bool")
fmask = np.where(np.tril(np.ones((1, 1, 4, 9), dtype=bool), k=5), 0.0, -1e4)
sdpa_case("sdpa_float_mask_fp16", [2, 3, 4, 8], [2, 3, 9, 8], [2, 3, 9, 8], mask=fmask, mask_dtype="fp16")
sdpa_case("sdpa_float_mask_full_fp32", [2, 3, 5], [2, 4, 5], [2, 4, 6],
          mask=w.rand([2, 3, 4], "fp32", -2, 0), mask_dtype="fp32", prec="fp32")
w.error("sdpa_batch_mismatch", "scaled_dot_product_attention",
        {"query": T("bad_b_q", w.rand([2, 3, 4]), "fp16"), "key": T("bad_b_k", w.rand([3, 3, 4]), "fp16"),
         "value": T("bad_b_v", w.rand([3, 3, 4]), "fp16")}, 1, "shape", "batch")
w.error("sdpa_mask_wrong_length", "scaled_dot_product_attention",
        {"query": T("bad_m_q", w.rand([1, 3, 4]), "fp16"), "key": T("bad_m_k", w.rand([1, 5, 4]), "fp16"),
         "value": T("bad_m_v", w.rand([1, 5, 4]), "fp16"), "attn_mask": T("bad_m_m", np.ones((3, 4), bool), "bool")},
        1, "shape")

w.write()
