"""Oracle cases for the shape / data-movement family. Expected values are numpy indexing and
array functions on the same inputs (slicing uses Python slice objects exactly as coremltools'
reference does). Run: /opt/ctvenv/bin/python gen_shape.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out, tup  # noqa: E402

c = Cases(__file__)
rng = c.rng


def h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


# reshape
x = h(2, 3, 4)
c.add("reshape_basic", "reshape", {"x": arr(x, "fp16"), "shape": lit([4, 6], "int32")}, [out(x.reshape(4, 6), "fp16")])
c.add("reshape_infer", "reshape", {"x": arr(x, "fp16"), "shape": lit([-1, 2], "int32")}, [out(x.reshape(-1, 2), "fp16")])
c.add("reshape_zero_ios16", "reshape", {"x": arr(x, "fp16"), "shape": lit([0, -1, 2], "int32")},
      [out(x.reshape(2, 6, 2), "fp16")], opset="ios16")
x2 = h(2, 50)
c.add("reshape_zero_ios17_right_aligned", "reshape", {"x": arr(x2, "fp16"), "shape": lit([1, 0, -1, 0], "int32")},
      [out(x2.reshape(1, 1, 2, 50), "fp16")], opset="ios17")
xs = h(1, 1)
c.add("reshape_to_scalar", "reshape", {"x": arr(xs, "fp16"), "shape": arr(np.zeros((0,), np.int32), "int32")},
      [out(xs.reshape(()), "fp16")])
xi = rng.integers(-9, 9, (6,)).astype(np.int32)
c.add("reshape_int32", "reshape", {"x": arr(xi, "int32"), "shape": lit([3, 2], "int32")}, [out(xi.reshape(3, 2), "int32")])
c.add("reshape_fp32_mode", "reshape", {"x": arr(x, "fp16"), "shape": lit([24], "int32")}, [out(x.reshape(24), "fp16")],
      precision="fp32")
c.error("reshape_two_minus_one", "reshape", {"x": arr(x, "fp16"), "shape": lit([-1, -1], "int32")}, ["fp16"], contains="-1 twice")
c.error("reshape_count_mismatch", "reshape", {"x": arr(x, "fp16"), "shape": lit([5, 5], "int32")}, ["fp16"], contains="reshape")
c.error("reshape_infer_impossible", "reshape", {"x": arr(x, "fp16"), "shape": lit([5, -1], "int32")}, ["fp16"], contains="infer")
c.error("reshape_zero_ios16_rank_mismatch", "reshape", {"x": arr(x2, "fp16"), "shape": lit([1, 0, -1, 0], "int32")}, ["fp16"],
        contains="iOS17", opset="ios16")
c.error("reshape_negative_dim", "reshape", {"x": arr(x, "fp16"), "shape": lit([-2, 12], "int32")}, ["fp16"])

# transpose
x = h(2, 3, 4)
for k, perm in enumerate([[2, 0, 1], [0, 2, 1], [-1, -3, -2]]):
    c.add(f"transpose_{k}", "transpose", {"x": arr(x, "fp16"), "perm": lit(perm, "int32")},
          [out(np.transpose(x, [p % 3 for p in perm]), "fp16")])
x4 = h(1, 2, 3, 2)
c.add("transpose_rank4", "transpose", {"x": arr(x4, "fp16"), "perm": lit([0, 2, 1, 3], "int32")},
      [out(np.transpose(x4, [0, 2, 1, 3]), "fp16")])
xb = rng.integers(0, 2, (2, 3)).astype(bool)
c.add("transpose_bool", "transpose", {"x": arr(xb, "bool"), "perm": lit([1, 0], "int32")}, [out(xb.T, "bool")])
c.error("transpose_bad_perm", "transpose", {"x": arr(x, "fp16"), "perm": lit([0, 0, 1], "int32")}, ["fp16"], contains="twice")
c.error("transpose_short_perm", "transpose", {"x": arr(x, "fp16"), "perm": lit([1, 0], "int32")}, ["fp16"], contains="perm")

# expand_dims / squeeze
x = h(2, 3)
for k, axes in enumerate([[0], [-1], [0, 3], [1, -1]]):
    r = x
    for a in sorted([a % (2 + len(axes)) for a in axes]):
        r = np.expand_dims(r, a)
    c.add(f"expand_dims_{k}", "expand_dims", {"x": arr(x, "fp16"), "axes": lit(axes, "int32")}, [out(r, "fp16")])
c.add("expand_dims_scalar", "expand_dims", {"x": arr(np.float16(3), "fp16"), "axes": lit([0], "int32")},
      [out(np.array([3.0]), "fp16")])
c.error("expand_dims_out_of_range", "expand_dims", {"x": arr(x, "fp16"), "axes": lit([3], "int32")}, ["fp16"], contains="out of range")
x = h(1, 3, 1, 2)
c.add("squeeze_default", "squeeze", {"x": arr(x, "fp16")}, [out(np.squeeze(x), "fp16")])
c.add("squeeze_axes", "squeeze", {"x": arr(x, "fp16"), "axes": lit([-2], "int32")}, [out(np.squeeze(x, axis=2), "fp16")])
c.add("squeeze_non_one_ignored", "squeeze", {"x": arr(x, "fp16"), "axes": lit([0, 1], "int32")},
      [out(np.squeeze(x, axis=0), "fp16")])
xs = h(1, 1)
c.add("squeeze_to_scalar", "squeeze", {"x": arr(xs, "fp16")}, [out(xs.reshape(()), "fp16")])

# slice_by_index: Python slicing per dim, masks, squeeze, negative strides, clamping.
def sbi(x, begin, end, stride=None, bm=None, em=None, sm=None):
    rank = x.ndim
    stride = stride or [1] * rank
    bm, em, sm = bm or [False] * rank, em or [False] * rank, sm or [False] * rank
    sl = []
    for d in range(rank):
        if sm[d]:
            b = 0 if bm[d] else begin[d]
            sl.append(b)
        else:
            sl.append(slice(None if bm[d] else begin[d], None if em[d] else end[d], stride[d]))
    return x[tuple(sl)]


def sbi_case(cid, x, begin, end, stride=None, bm=None, em=None, sm=None, dtype="fp16"):
    inputs = {"x": arr(x, dtype), "begin": lit(begin, "int32"), "end": lit(end, "int32")}
    if stride is not None:
        inputs["stride"] = lit(stride, "int32")
    if bm is not None:
        inputs["begin_mask"] = lit(bm, "bool")
    if em is not None:
        inputs["end_mask"] = lit(em, "bool")
    if sm is not None:
        inputs["squeeze_mask"] = lit(sm, "bool")
    c.add(cid, "slice_by_index", inputs, [out(np.asarray(sbi(x, begin, end, stride, bm, em, sm)), dtype)])


x = h(4, 5, 6)
sbi_case("slice_by_index_basic", x, [1, 0, 2], [3, 5, 6])
sbi_case("slice_by_index_negative", x, [-3, -4, -1], [-1, -1, 6])
sbi_case("slice_by_index_stride", x, [0, 1, 0], [4, 5, 6], stride=[2, 3, 1])
sbi_case("slice_by_index_negative_stride", x, [3, 4, 5], [0, 0, 0], stride=[-1, -2, -3])
sbi_case("slice_by_index_negative_stride_to_start", x, [-1, 0, 0], [0, 5, 6], stride=[-1, 1, 1], em=[True, False, False])
sbi_case("slice_by_index_masks", x, [2, 9, 3], [0, 1, 1], bm=[True, False, False], em=[False, True, True])
sbi_case("slice_by_index_clamp", x, [-10, 2, 1], [10, 100, 4])
sbi_case("slice_by_index_empty", x, [3, 0, 0], [1, 5, 6])
sbi_case("slice_by_index_squeeze", x, [1, 0, -2], [2, 5, -1], sm=[True, False, True])
sbi_case("slice_by_index_squeeze_all", x, [1, 2, 3], [2, 3, 4], sm=[True, True, True])
sbi_case("slice_by_index_no_stride_given", h(3, 8), [0, 2], [3, 8])
xl = h(1030)
sbi_case("slice_by_index_fluidaudio", xl, [1025], [1], em=[True])
xi = rng.integers(-9, 9, (3, 4)).astype(np.int32)
sbi_case("slice_by_index_int32", xi, [0, 1], [3, 3], stride=[2, 1], dtype="int32")
c.error("slice_by_index_zero_stride", "slice_by_index",
        {"x": arr(x, "fp16"), "begin": lit([0, 0, 0], "int32"), "end": lit([1, 1, 1], "int32"), "stride": lit([1, 0, 1], "int32")},
        ["fp16"], contains="stride")
c.error("slice_by_index_begin_length", "slice_by_index",
        {"x": arr(x, "fp16"), "begin": lit([0, 0], "int32"), "end": lit([1, 1, 1], "int32")}, ["fp16"], contains="rank")
c.error("slice_by_index_squeeze_out_of_range", "slice_by_index",
        {"x": arr(x, "fp16"), "begin": lit([7, 0, 0], "int32"), "end": lit([8, 1, 1], "int32"),
         "squeeze_mask": lit([True, False, False], "bool")}, ["fp16"], contains="squeeze_mask")

# slice_by_size
x = h(4, 5, 6)
c.add("slice_by_size_basic", "slice_by_size", {"x": arr(x, "fp16"), "begin": lit([1, 0, 2], "int32"), "size": lit([2, 5, 3], "int32")},
      [out(x[1:3, 0:5, 2:5], "fp16")])
c.add("slice_by_size_minus_one", "slice_by_size", {"x": arr(x, "fp16"), "begin": lit([-2, 1, 0], "int32"), "size": lit([-1, -1, 2], "int32")},
      [out(x[2:, 1:, 0:2], "fp16")])
c.error("slice_by_size_too_long", "slice_by_size", {"x": arr(x, "fp16"), "begin": lit([3, 0, 0], "int32"), "size": lit([2, 1, 1], "int32")},
        ["fp16"], contains="exceeds")

# concat
a, b, d = h(2, 3), h(2, 4), h(2, 1)
c.add("concat_last_axis", "concat", {"values": tup([arr(a, "fp16"), arr(b, "fp16"), arr(d, "fp16")]), "axis": lit(-1, "int32")},
      [out(np.concatenate([a, b, d], axis=-1), "fp16")])
a2, b2 = h(1, 3), h(3, 3)
c.add("concat_axis0", "concat", {"values": tup([arr(a2, "fp16"), arr(b2, "fp16")]), "axis": lit(0, "int32"),
                                 "interleave": lit(False, "bool")}, [out(np.concatenate([a2, b2], 0), "fp16")])
p, q = h(2, 3, 2), h(2, 3, 2)
inter = np.stack([p, q], axis=2).reshape(2, 6, 2)
c.add("concat_interleave", "concat", {"values": tup([arr(p, "fp16"), arr(q, "fp16")]), "axis": lit(1, "int32"),
                                      "interleave": lit(True, "bool")}, [out(inter, "fp16")])
c.add("concat_single", "concat", {"values": tup([arr(a, "fp16")]), "axis": lit(0, "int32")}, [out(a, "fp16")])
af = rng.standard_normal((2, 2)).astype(np.float32)
c.add("concat_mixed_dtypes", "concat", {"values": tup([arr(af, "fp32"), arr(a, "fp16")]), "axis": lit(1, "int32")},
      [out(np.concatenate([af, a.astype(np.float32)], 1), "fp32")], precision="fp32")
c.add("concat_anemll_rmsnorm", "concat", {"values": tup([arr(a, "fp16"), arr(-a, "fp16")]), "axis": lit(-1, "int32")},
      [out(np.concatenate([a, -a], -1), "fp16")])
# Apple's compiled iOS18 form: rank-0 int32 values joined along axis 0 into a shape vector
# (np.stack of scalars == np.concatenate of their 1-element views).
c.add("concat_rank0_scalars_compiled", "concat",
      {"values": tup([lit(3, "int32"), arr(np.array(7, np.int32), "int32"), lit(-1, "int32")]),
       "axis": lit(0, "int32"), "interleave": lit(False, "bool")},
      [out(np.array([3, 7, -1], np.int32), "int32")])
c.add("concat_rank0_with_vector", "concat",
      {"values": tup([arr(np.array([2, 5], np.int32), "int32"), lit(9, "int32")]), "axis": lit(-1, "int32")},
      [out(np.array([2, 5, 9], np.int32), "int32")])
c.error("concat_rank0_axis1", "concat", {"values": tup([lit(3, "int32"), lit(4, "int32")]), "axis": lit(1, "int32")},
        ["int32"], contains="axis")
c.error("concat_rank0_with_matrix", "concat",
        {"values": tup([lit(3, "int32"), arr(np.zeros((1, 1), np.int32), "int32")]), "axis": lit(0, "int32")},
        ["int32"], contains="rank")
c.error("concat_mismatch", "concat", {"values": tup([arr(a, "fp16"), arr(h(3, 3), "fp16")]), "axis": lit(1, "int32")}, ["fp16"],
        contains="values[1]")
c.error("concat_interleave_unequal", "concat", {"values": tup([arr(a, "fp16"), arr(b, "fp16")]), "axis": lit(1, "int32"),
                                                "interleave": lit(True, "bool")}, ["fp16"], contains="interleave")

# split
x = h(2, 6, 3)
parts = np.split(x, 3, axis=1)
c.add("split_num_splits", "split", {"x": arr(x, "fp16"), "axis": lit(1, "int32"), "num_splits": lit(3, "int32")},
      [out(p_, "fp16") for p_ in parts])
parts = np.split(x, [1, 4], axis=-2)
c.add("split_sizes_negative_axis", "split", {"x": arr(x, "fp16"), "axis": lit(-2, "int32"), "split_sizes": lit([1, 3, 2], "int32")},
      [out(p_, "fp16") for p_ in parts])
c.error("split_not_divisible", "split", {"x": arr(x, "fp16"), "axis": lit(1, "int32"), "num_splits": lit(4, "int32")},
        ["fp16"] * 4, contains="divide")
c.error("split_sizes_bad_sum", "split", {"x": arr(x, "fp16"), "axis": lit(1, "int32"), "split_sizes": lit([2, 2], "int32")},
        ["fp16"] * 2, contains="sum")

# stack
a, b = h(2, 3), h(2, 3)
for ax in (0, 1, -1):
    c.add(f"stack_axis{ax}".replace("-", "m"), "stack", {"values": tup([arr(a, "fp16"), arr(b, "fp16")]), "axis": lit(ax, "int32")},
          [out(np.stack([a, b], axis=ax), "fp16")])
c.error("stack_mismatch", "stack", {"values": tup([arr(a, "fp16"), arr(h(3, 2), "fp16")]), "axis": lit(0, "int32")}, ["fp16"])

# tile
x = h(2, 3)
c.add("tile_basic", "tile", {"x": arr(x, "fp16"), "reps": lit([2, 3], "int32")}, [out(np.tile(x, (2, 3)), "fp16")])
c.add("tile_ones", "tile", {"x": arr(x, "fp16"), "reps": lit([1, 1], "int32")}, [out(x, "fp16")])
c.error("tile_bad_reps", "tile", {"x": arr(x, "fp16"), "reps": lit([2], "int32")}, ["fp16"], contains="reps")

# pad: last N dims, constant / reflect / replicate.
x = h(1, 2, 4, 5)
NP_MODE = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
for mode in ("constant", "reflect", "replicate"):
    for k, pad in enumerate([[1, 2], [2, 1, 0, 3]]):
        n = len(pad) // 2
        widths = [(0, 0)] * (4 - n) + [(pad[2 * i], pad[2 * i + 1]) for i in range(n)]
        inputs = {"x": arr(x, "fp16"), "pad": lit(pad, "int32"), "mode": lit(mode, "string")}
        kw = {}
        if mode == "constant":
            inputs["constant_val"] = lit(1.5, "fp32")
            kw = {"constant_values": 1.5}
        c.add(f"pad_{mode}_{k}", "pad", inputs, [out(np.pad(x, widths, mode=NP_MODE[mode], **kw), "fp16")])
xs = np.array([1.0, 2.0, 3.0], np.float16)
c.add("pad_silero_reflect", "pad", {"x": arr(xs, "fp16"), "pad": lit([2, 2], "int32"), "mode": lit("reflect", "string")},
      [out(np.pad(xs, (2, 2), mode="reflect"), "fp16")])
c.add("pad_default_mode", "pad", {"x": arr(xs, "fp16"), "pad": lit([1, 0], "int32")}, [out(np.pad(xs, (1, 0)), "fp16")])
c.error("pad_reflect_too_wide", "pad", {"x": arr(xs, "fp16"), "pad": lit([3, 0], "int32"), "mode": lit("reflect", "string")},
        ["fp16"], contains="reflect")
c.error("pad_odd_length", "pad", {"x": arr(xs, "fp16"), "pad": lit([1], "int32")}, ["fp16"], contains="2 entries")
c.error("pad_bad_mode", "pad", {"x": arr(xs, "fp16"), "pad": lit([1, 1], "int32"), "mode": lit("wrap", "string")}, ["fp16"],
        contains="wrap")

# identity / shape
x = h(2, 3)
c.add("identity_fp16", "identity", {"x": arr(x, "fp16")}, [out(x, "fp16")])
c.add("shape_rank3", "shape", {"x": arr(h(2, 1, 4), "fp16")}, [out(np.array([2, 1, 4]), "int32")])
c.add("shape_scalar", "shape", {"x": arr(np.float16(1), "fp16")}, [out(np.zeros((0,), np.int32), "int32")])

# fill / fill_like
c.add("fill_float", "fill", {"shape": lit([2, 3], "int32"), "value": lit(-2.5, "fp32")}, [out(np.full((2, 3), -2.5), "fp16")])
c.add("fill_default_value", "fill", {"shape": lit([4], "int32")}, [out(np.zeros(4), "fp32")])
c.add("fill_int", "fill", {"shape": lit([2, 2], "int32"), "value": lit(7, "int32")}, [out(np.full((2, 2), 7), "int32")])
c.add("fill_big_fp16_inf", "fill", {"shape": lit([2], "int32"), "value": lit(1e5, "fp32")}, [out(np.full(2, 1e5), "fp16")])
c.add("fill_like_basic", "fill_like", {"ref_tensor": arr(h(3, 2), "fp16"), "value": lit(0.5, "fp32")},
      [out(np.full((3, 2), 0.5), "fp16")])
c.error("fill_negative_dim", "fill", {"shape": lit([2, -3], "int32"), "value": lit(1.0, "fp32")}, ["fp32"], contains="negative")

# range_1d
c.add("range_1d_int", "range_1d", {"start": lit(2, "int32"), "end": lit(11, "int32"), "step": lit(3, "int32")},
      [out(np.arange(2, 11, 3), "int32")])
c.add("range_1d_negative_step", "range_1d", {"start": lit(5, "int32"), "end": lit(-4, "int32"), "step": lit(-2, "int32")},
      [out(np.arange(5, -4, -2), "int32")])
c.add("range_1d_float", "range_1d", {"start": lit(0.0, "fp32"), "end": lit(1.0, "fp32"), "step": lit(0.25, "fp32")},
      [out(np.arange(0, 1, 0.25), "fp32")])
c.add("range_1d_empty", "range_1d", {"start": lit(3, "int32"), "end": lit(1, "int32"), "step": lit(1, "int32")},
      [out(np.zeros((0,), np.int32), "int32")])
c.error("range_1d_zero_step", "range_1d", {"start": lit(0, "int32"), "end": lit(3, "int32"), "step": lit(0, "int32")}, ["int32"])

# band_part
x = h(2, 4, 5)
for lower, upper in [(-1, 0), (0, -1), (1, 2), (-1, -1), (0, 0)]:
    m = np.arange(4)[:, None]
    n = np.arange(5)[None, :]
    keep = ((lower < 0) | (m - n <= lower)) & ((upper < 0) | (n - m <= upper))
    c.add(f"band_part_{lower}_{upper}".replace("-", "m"), "band_part",
          {"x": arr(x, "fp16"), "lower": lit(lower, "int32"), "upper": lit(upper, "int32")},
          [out(np.where(keep, x, 0), "fp16")])
c.add("band_part_defaults", "band_part", {"x": arr(x, "fp16")}, [out(x, "fp16")])
c.error("band_part_rank1", "band_part", {"x": arr(h(3), "fp16")}, ["fp16"], contains="rank")

# cast: float -> int truncates toward zero (numpy astype), fp32 -> fp16 rounds in fp16 mode only.
xf = np.array([-2.7, -0.5, 0.0, 0.5, 1.99, 300.2], np.float16)
c.add("cast_fp16_to_int32", "cast", {"x": arr(xf, "fp16"), "dtype": lit("int32", "string")}, [out(xf.astype(np.int32), "int32")])
c.add("cast_fp16_to_bool", "cast", {"x": arr(xf, "fp16"), "dtype": lit("bool", "string")}, [out(xf.astype(bool), "bool")])
xi = np.array([-3, 0, 70000, 2049], np.int32)
with np.errstate(over="ignore"):
    c.add("cast_int32_to_fp16", "cast", {"x": arr(xi, "int32"), "dtype": lit("fp16", "string")}, [out(xi.astype(np.float16), "fp16")])
x32 = np.array([1.0 + 2.0 ** -12, 70000.0, 3.14159265], np.float32)
with np.errstate(over="ignore"):
    c.add("cast_fp32_to_fp16_rounds", "cast", {"x": arr(x32, "fp32"), "dtype": lit("fp16", "string")}, [out(x32, "fp16")])
c.add("cast_fp32_to_fp16_reference_mode", "cast", {"x": arr(x32, "fp32"), "dtype": lit("fp16", "string")},
      [out(x32, "fp16")], precision="fp32")
c.add("cast_fp16_to_fp32", "cast", {"x": arr(xf, "fp16"), "dtype": lit("fp32", "string")}, [out(xf.astype(np.float32), "fp32")])
xu = np.array([0.0, 1.7, 254.9, 17.0], np.float16)
c.add("cast_fp16_to_uint8", "cast", {"x": arr(xu, "fp16"), "dtype": lit("uint8", "string")}, [out(xu.astype(np.uint8), "uint8")])
c.add("cast_fp16_to_int16", "cast", {"x": arr(xf, "fp16"), "dtype": lit("int16", "string")}, [out(xf.astype(np.int16), "int16")])
xs8 = np.array([-2.7, -0.5, 0.0, 0.5, 1.99, 100.2], np.float16)
c.add("cast_fp16_to_int8", "cast", {"x": arr(xs8, "fp16"), "dtype": lit("int8", "string")}, [out(xs8.astype(np.int8), "int8")])
xu16 = np.array([0.0, 1.5, 60000.0, 513.0], np.float16)
c.add("cast_fp16_to_uint16", "cast", {"x": arr(xu16, "fp16"), "dtype": lit("uint16", "string")}, [out(xu16.astype(np.uint16), "uint16")])
c.add("cast_bool_to_fp32", "cast", {"x": arr(np.array([True, False]), "bool"), "dtype": lit("fp32", "string")},
      [out(np.array([1.0, 0.0]), "fp32")])
c.error("cast_bad_dtype", "cast", {"x": arr(xf, "fp16"), "dtype": lit("complex64", "string")}, ["fp32"], contains="complex64")

# cumsum
x = h(3, 4)
for axis in (0, -1):
    for excl in (False, True):
        for rev in (False, True):
            v = x.astype(np.float64)
            if rev:
                v = np.flip(v, axis)
            r = np.cumsum(v, axis=axis)
            if excl:
                r = r - v
            if rev:
                r = np.flip(r, axis)
            c.add(f"cumsum_a{axis}_e{int(excl)}_r{int(rev)}".replace("-", "m"), "cumsum",
                  {"x": arr(x, "fp16"), "axis": lit(axis, "int32"), "exclusive": lit(excl, "bool"), "reverse": lit(rev, "bool")},
                  [out(r, "fp16")], atol=1e-3, rtol=1e-3)
xi = rng.integers(-5, 5, (5,)).astype(np.int32)
c.add("cumsum_int32_default_axis", "cumsum", {"x": arr(xi, "int32")}, [out(np.cumsum(xi), "int32")])

# flatten2d
x = h(2, 3, 4)
for axis, shape in [(1, (2, 12)), (0, (1, 24)), (-1, (6, 4)), (3, (24, 1))]:
    c.add(f"flatten2d_axis{axis}".replace("-", "m"), "flatten2d", {"x": arr(x, "fp16"), "axis": lit(axis, "int32")},
          [out(x.reshape(shape), "fp16")])
c.add("flatten2d_default", "flatten2d", {"x": arr(x, "fp16")}, [out(x.reshape(2, 12), "fp16")])

# reverse
x = h(2, 3, 4)
c.add("reverse_all", "reverse", {"x": arr(x, "fp16")}, [out(np.flip(x), "fp16")])
c.add("reverse_axes", "reverse", {"x": arr(x, "fp16"), "axes": lit([0, -1], "int32")}, [out(np.flip(x, (0, 2)), "fp16")])
c.error("reverse_bad_axis", "reverse", {"x": arr(x, "fp16"), "axes": lit([3], "int32")}, ["fp16"], contains="out of range")

c.write()
