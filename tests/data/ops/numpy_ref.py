"""numpy (float64) references shared by the oracle generators: conv and the lstm recurrence.
Written from the op definitions (runtime/ops/README.md, Linear algebra; coremltools defs/iOS15/conv.py and
defs/iOS15/recurrent.py), not from the C++ kernels."""
import numpy as np


def conv_pads(pad_type, in_sp, K, strides, dil, custom):
    """(before, after) per spatial dim (coremltools aggregated_pad; the odd element of a "same"
    total goes after, of a "same_lower" total before)."""
    res = []
    for i, n in enumerate(in_sp):
        k_eff = (K[i] - 1) * dil[i] + 1
        if pad_type == "valid":
            res.append((0, 0))
        elif pad_type == "custom":
            res.append((custom[2 * i], custom[2 * i + 1]))
        else:
            s = strides[i]
            total = max(0, s * int(np.ceil(n / s)) - n + k_eff - s)
            small = total // 2
            res.append((small, total - small) if pad_type == "same" else (total - small, small))
    return res


def conv(x, wt, b, strides, dil, pads, groups):
    """Direct convolution by shifted slices: x [N, C, *S], wt [Cout, C/groups, *K]."""
    S = x.ndim - 2
    xp = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    C = x.shape[1]
    Cout = wt.shape[0]
    cg, og = C // groups, Cout // groups
    K = wt.shape[2:]
    out_sp = [(xp.shape[2 + i] - (K[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(S)]
    out = np.zeros((x.shape[0], Cout, *out_sp))
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = wt[g * og:(g + 1) * og]
        for kidx in np.ndindex(*K):
            sl = tuple(slice(kidx[i] * dil[i], kidx[i] * dil[i] + (out_sp[i] - 1) * strides[i] + 1, strides[i])
                       for i in range(S))
            patch = xg[(slice(None), slice(None)) + sl]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", patch, wg[(slice(None), slice(None)) + kidx])
    if b is not None:
        out += b.reshape((1, -1) + (1,) * S)
    return out


LSTM_ACTS = {
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "tanh": np.tanh,
    "scaled_tanh": np.tanh,  # default alpha = beta = 1
    "hard_sigmoid": lambda v: np.minimum(np.maximum(0.2 * v + 0.5, 0), 1),
    "relu": lambda v: np.maximum(v, 0),
    "linear": lambda v: v,
}


def lstm_direction(x, h, c, wih, whh, b, p, reverse, ra, ca, act, clip):
    """One direction: gate order i, f, o, z; peephole i, f (old c), o (new c); clip on c."""
    s = x.shape[0]
    H = whh.shape[1]
    outs = [None] * s
    steps = range(s - 1, -1, -1) if reverse else range(s)
    for t in steps:
        g = x[t] @ wih.T + h @ whh.T + b
        gi, gf, go, gz = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
        i = LSTM_ACTS[ra](gi + c * p[:H])
        f = LSTM_ACTS[ra](gf + c * p[H:2 * H])
        z = LSTM_ACTS[ca](gz)
        c = f * c + i * z
        if clip is not None:
            c = np.clip(c, -clip, clip)
        o = LSTM_ACTS[ra](go + c * p[2 * H:])
        h = o * LSTM_ACTS[act](c)
        outs[t] = h
    return np.stack(outs), h, c
