"""Oracle cases for read_state, write_state and slice_update (numpy slicing with Python's
slice rules, as coremltools' slice_update value inference does). Run: /opt/ctvenv/bin/python gen_state.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter  # noqa: E402

w = CaseWriter(__file__, seed=1010)
T, V = w.tensor, w.value
EXACT = {}

s0 = w.rand([2, 3])
w.add("read_state_fp16", "read_state", {"input": dict(T("rs_state", s0, "fp16"), state=True)},
      [(s0, "fp16")], tol=EXACT)
s1 = w.rand([1, 2, 4])
new = w.rand([1, 2, 4])
w.add("write_state_fp16", "write_state",
      {"input": dict(T("ws_state", s1, "fp16"), state=True), "data": T("ws_data", new, "fp16")},
      [], tol=EXACT, states_out={"input": T("ws_expected", new, "fp16")})
w.error("write_state_shape_mismatch", "write_state",
        {"input": dict(T("wsb_state", s1, "fp16"), state=True), "data": T("wsb_data", w.rand([2, 4]), "fp16")},
        0, "shape")


def slice_update_case(cid, x, d, update_shape, begin, end, stride=None, begin_mask=None, end_mask=None,
                      squeeze_mask=None, prec="fp16"):
    rank = x.ndim
    sl = []
    for i in range(rank):
        b = None if begin_mask and begin_mask[i] else begin[i]
        e = None if end_mask and end_mask[i] else end[i]
        st = stride[i] if stride else 1
        if squeeze_mask and squeeze_mask[i]:
            e, st = None, np.iinfo(np.int32).max
        sl.append(slice(b, e, st))
    sl = tuple(sl)
    upd = w.rand(update_shape, d) if d != "int32" else w.rng.integers(-50, 50, size=update_shape)
    ref = x.copy()
    ref[sl] = np.reshape(upd, ref[sl].shape)
    inputs = {"x": T(f"{cid}_x", x, d), "update": T(f"{cid}_u", upd, d),
              "begin": V(begin, "int32"), "end": V(end, "int32")}
    if stride:
        inputs["stride"] = V(stride, "int32")
    for name, m in (("begin_mask", begin_mask), ("end_mask", end_mask), ("squeeze_mask", squeeze_mask)):
        if m:
            inputs[name] = V(m, "bool")
    w.add(cid, "slice_update", inputs, [(ref, d)], precision=prec, tol=EXACT)


slice_update_case("slice_update_block", w.rand([4, 6]), "fp16", [2, 3], [1, 2], [3, 5])
slice_update_case("slice_update_kv_cache_row", w.rand([1, 2, 8, 4]), "fp16", [1, 2, 1, 4],
                  [0, 0, 5, 0], [1, 2, 6, 4])
slice_update_case("slice_update_strided_negative", w.rand([7, 3], "fp32"), "fp32", [3, 3], [-1, 0], [0, 3],
                  stride=[-2, 1], prec="fp32")
slice_update_case("slice_update_masks", w.rand([5, 4]), "fp16", [5, 2], [3, 2], [0, 0],
                  begin_mask=[True, False], end_mask=[True, True])
slice_update_case("slice_update_squeeze", w.rand([3, 4, 2]), "fp16", [4, 2], [1, 0, 0], [2, 4, 2],
                  squeeze_mask=[True, False, False])
slice_update_case("slice_update_clamped_end_int32", np.arange(10).reshape(2, 5), "int32", [2, 3], [0, 2], [2, 100])
w.error("slice_update_size_mismatch", "slice_update",
        {"x": T("bad_su_x", w.rand([4, 6]), "fp16"), "update": T("bad_su_u", w.rand([2, 2]), "fp16"),
         "begin": V([0, 0], "int32"), "end": V([2, 3], "int32")}, 1, "shape", "update", out_dtype="fp16")
w.error("slice_update_zero_stride", "slice_update",
        {"x": T("bad_st_x", w.rand([4, 6]), "fp16"), "update": T("bad_st_u", w.rand([2, 3]), "fp16"),
         "begin": V([0, 0], "int32"), "end": V([2, 3], "int32"), "stride": V([1, 0], "int32")},
        1, "shape", "stride", out_dtype="fp16")

w.write()
