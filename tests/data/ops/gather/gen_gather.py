"""Oracle cases for gather, gather_along_axis, gather_nd, one_hot (numpy indexing).
Cases run as ios18 (a negative index is out of range) unless they set "opset": iOS15/16 wrap
negative indices like numpy. Run: /opt/ctvenv/bin/python gen_gather.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter  # noqa: E402

w = CaseWriter(__file__, seed=505)
T, V = w.tensor, w.value
EXACT = {}


def gather_ref(x, idx, axis, batch_dims):
    if batch_dims == 0:
        return np.take(x, idx, axis=axis)
    outs = [gather_ref(x[b], idx[b], axis - 1, batch_dims - 1) for b in range(x.shape[0])]
    return np.stack(outs)


def gather_case(cid, x, xd, idx, axis=None, batch_dims=None, prec="fp16", **extra):
    inputs = {"x": T(f"{cid}_x", x, xd), "indices": T(f"{cid}_i", idx, "int32")}
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    if batch_dims is not None:
        inputs["batch_dims"] = V(batch_dims, "int32")
    ref = gather_ref(x, idx, (axis or 0) % x.ndim, batch_dims or 0)
    w.add(cid, "gather", inputs, [(ref, xd)], precision=prec, tol=EXACT, **extra)


gather_case("gather_axis0_fp16", w.rand([5, 3]), "fp16", np.array([[4, 0], [2, 2]]))
gather_case("gather_axis1_fp32", w.rand([2, 4, 3], "fp32"), "fp32", np.array([3, 1, 0]), axis=1, prec="fp32")
gather_case("gather_neg_axis", w.rand([2, 4, 3]), "fp16", np.array([2, 0]), axis=-1)
gather_case("gather_batch_dims1", w.rand([2, 5, 3]), "fp16", np.array([[0, 4, 4, 1], [3, 3, 2, 0]]), axis=1, batch_dims=1)
gather_case("gather_int32_scalar_index", np.arange(12).reshape(3, 4), "int32", np.array(2), axis=0)
gather_case("gather_embedding_rows", w.rand([50, 16]), "fp16", np.array([[7, 49, 0, 7, 12, 3, 3, 1]]))
w.error("gather_negative_index_ios18", "gather",
        {"x": T("bad_neg_x", w.rand([4, 2]), "fp16"), "indices": T("bad_neg_i", np.array([1, -1]), "int32")},
        1, "shape", "out of range", out_dtype="fp16")
gather_case("gather_negative_wraps_ios16", w.rand([4, 3]), "fp16", np.array([-1, 0, -4]), opset="ios16")
gather_case("gather_negative_wraps_ios15_axis1", w.rand([2, 5]), "fp16", np.array([[-2], [3]]), axis=1, opset="ios15")
w.cases.append({"id": "gather_too_negative_ios16", "op": "gather", "opset": "ios16",
                "inputs": {"x": T("bad_tn_x", w.rand([4, 2]), "fp16"), "indices": T("bad_tn_i", np.array([-5]), "int32")},
                "outputs": [{"dtype": "fp16"}], "expect_error": "shape", "error_contains": "out of range"})
w.error("gather_index_too_large", "gather",
        {"x": T("bad_big_x", w.rand([4, 2]), "fp16"), "indices": T("bad_big_i", np.array([4]), "int32")},
        1, "shape", "out of range", out_dtype="fp16")
w.error("gather_float_indices", "gather",
        {"x": T("bad_fi_x", w.rand([4, 2]), "fp16"), "indices": T("bad_fi_i", np.array([1.0]), "fp32")},
        1, "shape", "integer", out_dtype="fp16")


def gaa_case(cid, x, xd, idx, axis, prec="fp16", **extra):
    inputs = {"x": T(f"{cid}_x", x, xd), "indices": T(f"{cid}_i", idx, "int32"), "axis": V(axis, "int32")}
    w.add(cid, "gather_along_axis", inputs, [(np.take_along_axis(x, idx, axis=axis), xd)],
          precision=prec, tol=EXACT, **extra)


gaa_case("gather_along_axis_1", w.rand([3, 4]), "fp16", w.rng.integers(0, 4, size=(3, 6)), 1)
gaa_case("gather_along_axis_0_fp32", w.rand([5, 2, 3], "fp32"), "fp32", w.rng.integers(0, 5, size=(2, 2, 3)), 0, prec="fp32")
gaa_case("gather_along_axis_neg_axis", w.rand([2, 3, 4]), "fp16", w.rng.integers(0, 4, size=(2, 3, 1)), -1)
gaa_case("gather_along_axis_negative_ios16", w.rand([3, 4]), "fp16", w.rng.integers(-4, 4, size=(3, 2)), 1, opset="ios16")
w.error("gather_along_axis_rank_mismatch", "gather_along_axis",
        {"x": T("bad_gaa_x", w.rand([3, 4]), "fp16"), "indices": T("bad_gaa_i", np.array([1, 2]), "int32"),
         "axis": V(0, "int32")}, 1, "shape", "rank", out_dtype="fp16")


def gnd_ref(x, idx, batch_dims):
    if batch_dims > 0:
        return np.stack([gnd_ref(x[b], idx[b], batch_dims - 1) for b in range(x.shape[0])])
    K = idx.shape[-1]
    flat = idx.reshape(-1, K)
    rows = [x[tuple(t)] for t in flat]
    return np.array(rows).reshape(idx.shape[:-1] + x.shape[K:])


def gnd_case(cid, x, xd, idx, batch_dims=None, **extra):
    inputs = {"x": T(f"{cid}_x", x, xd), "indices": T(f"{cid}_i", idx, "int32")}
    if batch_dims is not None:
        inputs["batch_dims"] = V(batch_dims, "int32")
    w.add(cid, "gather_nd", inputs, [(gnd_ref(x, idx, batch_dims or 0), xd)], tol=EXACT, **extra)


gnd_case("gather_nd_pairs", w.rand([3, 4, 5]), "fp16", np.array([[2, 3], [0, 1]]))
gnd_case("gather_nd_full_index", w.rand([3, 4]), "fp16", np.array([[[2, 3]], [[0, 0]], [[1, 2]]]))
gnd_case("gather_nd_batch_dims1", w.rand([2, 3, 4]), "fp16", np.array([[[2], [0], [1], [1], [0]], [[0], [0], [2], [1], [2]]]), batch_dims=1)
gnd_case("gather_nd_negative_ios16", w.rand([3, 4]), "fp16", np.array([[-1, -4], [0, -2]]), opset="ios16")
w.error("gather_nd_index_out_of_range", "gather_nd",
        {"x": T("bad_gnd_x", w.rand([3, 4]), "fp16"), "indices": T("bad_gnd_i", np.array([[1, 4]]), "int32")},
        1, "shape", "out of range", out_dtype="fp16")


def one_hot_case(cid, idx, depth, axis=None, on=None, off=None, od="int32"):
    inputs = {"indices": T(f"{cid}_i", idx, "int32"), "one_hot_vector_size": V(depth, "int32")}
    if axis is not None:
        inputs["axis"] = V(axis, "int32")
    onv = 1 if on is None else on
    offv = 0 if off is None else off
    if on is not None:
        inputs["on_value"] = V(on, "fp32" if od != "int32" else "int32")
    if off is not None:
        inputs["off_value"] = V(off, "fp32" if od != "int32" else "int32")
    ax = -1 if axis is None else axis
    eye = (idx[..., None] == np.arange(depth))  # out-of-range index: a row of off_value
    ref = np.where(np.moveaxis(eye, -1, ax % (idx.ndim + 1)), onv, offv)
    w.add(cid, "one_hot", inputs, [(ref, od)], tol=EXACT)


one_hot_case("one_hot_default", np.array([0, 3, 1]), 4)
one_hot_case("one_hot_axis0_values", np.array([[2, 0], [1, 5]]), 3, axis=0, on=2.5, off=-1.0, od="fp32")

w.write()
