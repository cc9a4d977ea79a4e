"""Oracle cases for linear, matmul and einsum (numpy). Run: /opt/ctvenv/bin/python gen_linear.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64, out_cast  # noqa: E402

w = CaseWriter(__file__, seed=101)
T, V = w.tensor, w.value


def linear_case(cid, xs, ws, bias=True, prec="fp16", xd="fp16", wd="fp16"):
    x = w.rand(xs, xd)
    wt = w.rand(ws, wd, -0.5, 0.5)
    inputs = {"x": T(f"{cid}_x", x, xd), "weight": T(f"{cid}_w", wt, wd)}
    ref = f64(x) @ f64(wt).T
    if bias:
        b = w.rand([ws[0]], wd)
        inputs["bias"] = T(f"{cid}_b", b, wd)
        ref = ref + f64(b)
    od = "fp16" if prec == "fp16" else "fp32"
    w.add(cid, "linear", inputs, [(out_cast(ref, od), od)], precision=prec)


linear_case("linear_bias_fp16", [2, 3, 40], [24, 40])
linear_case("linear_nobias_fp32", [8, 64], [33, 64], bias=False, prec="fp32", xd="fp32", wd="fp32")
linear_case("linear_fp32_weight_fp16_x", [3, 20], [7, 20], prec="fp16", xd="fp16", wd="fp32")
linear_case("linear_rank1_x", [16], [5, 16])
linear_case("linear_k_tail_m_blocks", [20, 37], [70, 37])
# K·2 bytes·N above one 128 KiB row block: several weight row blocks, two token blocks.
linear_case("linear_row_blocks", [9, 1024], [80, 1024], prec="fp32", xd="fp32", wd="fp16")
w.error("linear_din_mismatch", "linear",
        {"x": T("bad_lin_x", w.rand([2, 8]), "fp16"), "weight": T("bad_lin_w", w.rand([5, 7]), "fp16")},
        1, "shape", "D_in")
w.error("linear_bias_mismatch", "linear",
        {"x": T("badb_lin_x", w.rand([2, 8]), "fp16"), "weight": T("badb_lin_w", w.rand([5, 8]), "fp16"),
         "bias": T("badb_lin_b", w.rand([4]), "fp16")}, 1, "shape", "bias")


def matmul_case(cid, xs, ys, tx=False, ty=False, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    x = w.rand(xs, d)
    y = w.rand(ys, d)
    xx, yy = f64(x), f64(y)
    if tx:
        xx = np.swapaxes(xx, -1, -2)
    if ty:
        yy = np.swapaxes(yy, -1, -2)
    ref = np.matmul(xx, yy)
    inputs = {"x": T(f"{cid}_x", x, d), "y": T(f"{cid}_y", y, d)}
    if tx or ty:
        inputs["transpose_x"] = V(tx, "bool")
        inputs["transpose_y"] = V(ty, "bool")
    w.add(cid, "matmul", inputs, [(out_cast(ref, d), d)], precision=prec)


matmul_case("matmul_2d", [5, 12], [12, 7])
matmul_case("matmul_2d_fp32", [9, 17], [17, 10], prec="fp32")
matmul_case("matmul_transpose_x", [12, 5], [12, 7], tx=True)
matmul_case("matmul_transpose_y", [5, 12], [7, 12], ty=True)
matmul_case("matmul_transpose_both", [3, 12, 5], [3, 7, 12], tx=True, ty=True)
matmul_case("matmul_batch_broadcast", [2, 1, 3, 4], [3, 4, 5])
matmul_case("matmul_batch_broadcast_y", [4, 6], [2, 3, 6, 5], prec="fp32")
matmul_case("matmul_rank1_x", [4], [2, 4, 5])
matmul_case("matmul_rank1_y", [3, 2, 4], [4])
matmul_case("matmul_rank1_both", [6], [6])
matmul_case("matmul_attention_like", [1, 4, 8, 16], [1, 4, 8, 16], ty=True)
w.error("matmul_inner_mismatch", "matmul",
        {"x": T("bad_mm_x", w.rand([2, 3]), "fp16"), "y": T("bad_mm_y", w.rand([4, 2]), "fp16")},
        1, "shape", "inner")
w.error("matmul_batch_mismatch", "matmul",
        {"x": T("badb_mm_x", w.rand([2, 2, 3]), "fp16"), "y": T("badb_mm_y", w.rand([3, 3, 2]), "fp16")},
        1, "shape")
w.error("matmul_rank1_transpose", "matmul",
        {"x": T("badt_mm_x", w.rand([3]), "fp16"), "y": T("badt_mm_y", w.rand([3, 2]), "fp16"),
         "transpose_x": V(True, "bool")}, 1, "shape", "transpose_x")


def einsum_case(cid, eq, xs, ys, prec="fp16"):
    d = "fp16" if prec == "fp16" else "fp32"
    x = w.rand(xs, d)
    y = w.rand(ys, d)
    xx, yy = f64(x), f64(y)
    if len(xs) == 4:
        # broadcast B and H explicitly, then contract W1 (x dim -1 with y dim -3)
        B = max(xs[0], ys[0]); H = max(xs[2], ys[2])
        xx = np.broadcast_to(xx, (B, xs[1], H, xs[3]))
        yy = np.broadcast_to(yy, (B, ys[1], H, ys[3]))
        ref = np.einsum("nchw,nwhu->nchu", xx, yy)
    else:
        H = max(xs[1], ys[1])
        xx = np.broadcast_to(xx, (xs[0], H, xs[2]))
        yy = np.broadcast_to(yy, (ys[0], H, ys[2]))
        ref = np.einsum("chw,whr->chr", xx, yy)
    inputs = {"values": {"tuple": [T(f"{cid}_x", x, d), T(f"{cid}_y", y, d)]},
              "equation": V(eq, "string")}
    w.add(cid, "einsum", inputs, [(out_cast(ref, d), d)], precision=prec)


einsum_case("einsum_nchw", "nchw,nwhu->nchu", [2, 3, 4, 5], [2, 5, 4, 6])
einsum_case("einsum_nchw_broadcast", "nchw,nwhu->nchu", [1, 3, 4, 5], [2, 5, 1, 6], prec="fp32")
einsum_case("einsum_chw", "chw,whr->chr", [3, 4, 5], [5, 4, 2])
einsum_case("einsum_renamed_letters", "abcd,adce->abce", [1, 2, 3, 9], [1, 9, 3, 4])
w.error("einsum_bad_equation", "einsum",
        {"values": {"tuple": [T("bad_es_x", w.rand([2, 3, 4]), "fp16"), T("bad_es_y", w.rand([4, 3, 2]), "fp16")]},
         "equation": V("chw,hwr->chr", "string")}, 1, "unsupported", "equation")

w.write()
