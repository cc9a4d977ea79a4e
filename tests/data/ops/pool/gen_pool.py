"""Oracle cases for avg_pool, max_pool and l2_pool (coremltools 9.0 iOS15/pool.py; output sizes
from its spatial_dimensions_out_shape, ceil_mode windows and divisors as PyTorch's
avg_pool/max_pool with ceil_mode). The reference pads x with explicit masks (inside the input,
inside the declared padding, past it for ceil_mode) and reduces each window with numpy.
Run: /opt/ctvenv/bin/python gen_pool.py"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-3, rtol=1e-3)


def pads_of(pad_type, ins, ks, st, custom):
    res = []
    for i, n in enumerate(ins):
        if pad_type == "valid":
            res.append((0, 0))
        elif pad_type == "custom":
            res.append((custom[2 * i], custom[2 * i + 1]))
        else:
            o = -(-n // st[i])
            total = max(0, (o - 1) * st[i] + ks[i] - n)
            small = total // 2
            res.append((small, total - small) if pad_type == "same" else (total - small, small))
    return res


def out_size(n, k, s, before, after, ceil):
    if not ceil:
        return (n + before + after - k) // s + 1
    o = (n + before + after - k + s - 1) // s + 1
    if (o - 1) * s >= n + before and before + after > 0:
        o -= 1
    return o


def ref_pool(kind, x, ks, st, pad_type, custom=None, ceil=False, exclude=False):
    S = x.ndim - 2
    ins = x.shape[2:]
    pads = pads_of(pad_type, ins, ks, st, custom)
    outs = [out_size(ins[i], ks[i], st[i], *pads[i], ceil) for i in range(S)]
    extra = [max(0, (outs[i] - 1) * st[i] + ks[i] - (ins[i] + pads[i][0] + pads[i][1])) for i in range(S)]
    widths = [(0, 0), (0, 0)] + [(pads[i][0], pads[i][1] + extra[i]) for i in range(S)]
    xf = x.astype(np.float64)
    xp = np.pad(xf, widths)
    inside = np.pad(np.ones(x.shape), widths)  # 1 on input elements
    # 1 on the input and its declared padding, 0 only past it (ceil_mode's overhang).
    declared = np.pad(np.ones(x.shape), [(0, 0), (0, 0)] + [(p[0], p[1]) for p in pads], constant_values=1)
    declared = np.pad(declared, [(0, 0), (0, 0)] + [(0, e) for e in extra])
    res = np.zeros(x.shape[:2] + tuple(outs))
    for o in itertools.product(*[range(n) for n in outs]):
        win = (slice(None), slice(None)) + tuple(slice(o[i] * st[i], o[i] * st[i] + ks[i]) for i in range(S))
        v, m, d = xp[win], inside[win], declared[win]
        axes = tuple(range(2, 2 + S))
        if kind == "max":
            r = np.where(m > 0, v, -np.inf).max(axis=axes)
        elif kind == "l2":
            r = np.sqrt((v * v * m).sum(axis=axes))
        else:
            r = (v * m).sum(axis=axes) / (m if exclude else d).sum(axis=axes)
        res[(slice(None), slice(None)) + o] = r
    return res


def case(cid, op, x, ks, st=None, pad_type="valid", pad=None, ceil=None, exclude=None, prec="fp16"):
    kind = {"avg_pool": "avg", "max_pool": "max", "l2_pool": "l2"}[op]
    inputs = {"x": arr(x, "fp16"), "kernel_sizes": lit(ks, "int32"), "pad_type": lit(pad_type, "string")}
    if st is not None:
        inputs["strides"] = lit(st, "int32")
    if pad is not None:
        inputs["pad"] = lit(pad, "int32")
    if ceil is not None:
        inputs["ceil_mode"] = lit(ceil, "bool")
    if exclude is not None:
        inputs["exclude_padding_from_average"] = lit(exclude, "bool")
    y = ref_pool(kind, x, ks, st or [1] * len(ks), pad_type, pad, bool(ceil), bool(exclude))
    tol = F16 if prec == "fp16" else dict(atol=1e-5, rtol=1e-5)
    c.add(cid, op, inputs, [out(y, "fp16")], precision=prec, **tol)


for op in ("avg_pool", "max_pool", "l2_pool"):
    x1 = rng.standard_normal((2, 3, 11)).astype(np.float16)
    x2 = rng.standard_normal((1, 2, 7, 6)).astype(np.float16)
    case(f"{op}_1d_valid", op, x1, [3], [2])
    case(f"{op}_1d_same", op, x1, [4], [3], "same")
    case(f"{op}_2d_valid_default_strides", op, x2, [2, 3])
    case(f"{op}_2d_same", op, x2, [3, 3], [2, 2], "same")
    case(f"{op}_2d_same_lower", op, x2, [2, 4], [2, 3], "same_lower")
    case(f"{op}_2d_custom", op, x2, [3, 2], [2, 1], "custom", [1, 2, 0, 1])
    case(f"{op}_2d_fp32_mode", op, x2, [3, 3], [1, 2], "custom", [1, 1, 1, 1], prec="fp32")
    if op != "l2_pool":
        x3 = rng.standard_normal((1, 2, 4, 5, 3)).astype(np.float16)
        case(f"{op}_3d", op, x3, [2, 3, 2], [2, 1, 1], "custom", [0, 1, 1, 1, 0, 0])
        case(f"{op}_1d_ceil", op, x1, [3], [2], "valid", ceil=True)
        case(f"{op}_2d_ceil_padded", op, x2, [3, 2], [2, 2], "custom", [1, 1, 1, 1], ceil=True)
        case(f"{op}_2d_ceil_window_in_pad_dropped", op, rng.standard_normal((1, 1, 5, 5)).astype(np.float16),
             [2, 2], [2, 2], "custom", [1, 1, 1, 1], ceil=True)
for ex in (False, True):
    x2 = rng.standard_normal((1, 2, 5, 5)).astype(np.float16)
    case(f"avg_pool_exclude_{str(ex).lower()}_custom", "avg_pool", x2, [3, 3], [2, 2], "custom", [1, 1, 1, 1], exclude=ex)
    case(f"avg_pool_exclude_{str(ex).lower()}_same", "avg_pool", x2, [2, 2], [2, 2], "same", exclude=ex)
    case(f"avg_pool_exclude_{str(ex).lower()}_ceil", "avg_pool", x2, [3, 3], [2, 2], "custom", [1, 1, 1, 1],
         ceil=True, exclude=ex)
# max of all-negative windows next to padding: padding must not win with 0.
xn = -np.abs(rng.standard_normal((1, 1, 4, 4))).astype(np.float16) - np.float16(1)
case("max_pool_negative_next_to_padding", "max_pool", xn, [3, 3], [1, 1], "same")
# fp16 rounding: an average whose float64 value is not an fp16.
xr = np.array([1, 1, 2049, 0], np.float16).reshape(1, 1, 4)
case("avg_pool_fp16_rounding", "avg_pool", xr, [3], [1])
# ceil_mode with a kernel longer than the (padded) input: coremltools' output size is
# ceil((n + pads - k) / s) + 1 = 1 there, one clipped window; only ceil_mode allows it.
xk = np.array([[[[0.5, -1.25]], [[2.0, 3.5]]]], np.float16)  # [1, 2, 1, 2]
for op in ("avg_pool", "max_pool", "l2_pool"):
    case(f"{op}_ceil_kernel_past_input", op, xk, [3, 3], [2, 2], "custom", [1, 1, 0, 0], ceil=True)
case("avg_pool_ceil_kernel_past_input_1d", "avg_pool", xk.reshape(1, 2, 2), [3], [2], "valid", ceil=True)

xe = np.ones((1, 1, 4, 4), np.float16)
c.error("avg_pool_kernel_length", "avg_pool", {"x": arr(xe, "fp16"), "kernel_sizes": lit([2], "int32"),
                                               "pad_type": lit("valid", "string")}, ["fp16"], contains="kernel_sizes")
c.error("max_pool_bad_pad_type", "max_pool", {"x": arr(xe, "fp16"), "kernel_sizes": lit([2, 2], "int32"),
                                              "pad_type": lit("reflect", "string")}, ["fp16"], contains="pad_type")
c.error("l2_pool_3d", "l2_pool", {"x": arr(np.ones((1, 1, 2, 2, 2), np.float16), "fp16"),
                                  "kernel_sizes": lit([1, 1, 1], "int32"), "pad_type": lit("valid", "string")},
        ["fp16"], contains="spatial")
c.error("max_pool_kernel_too_big", "max_pool", {"x": arr(xe, "fp16"), "kernel_sizes": lit([5, 5], "int32"),
                                                "pad_type": lit("valid", "string")}, ["fp16"], contains="exceeds")
c.error("avg_pool_ceil_asymmetric", "avg_pool", {"x": arr(xe, "fp16"), "kernel_sizes": lit([2, 2], "int32"),
                                                 "pad_type": lit("custom", "string"), "pad": lit([0, 1, 0, 0], "int32"),
                                                 "ceil_mode": lit(True, "bool")}, ["fp16"], contains="symmetric")
c.error("max_pool_rank2", "max_pool", {"x": arr(np.ones((2, 2), np.float16), "fp16"), "kernel_sizes": lit([1], "int32"),
                                       "pad_type": lit("valid", "string")}, ["fp16"], contains="spatial")
c.write()
