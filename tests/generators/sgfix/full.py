"""--full OUTDIR: benchmark-size attention and MoE shards (never committed).

fp16 and int4blk go through coremltools (conversion, linear_quantize_weights). lut4 is built
with our own numpy 1-D k-means per 32-row group and emitted directly as
mb.constexpr_lut_to_dense (same op, same [D_out/32, 1, 16, 1] LUT layout as coremltools'
per_grouped_channel palettizer), because coremltools' palettizer on ~75 M weights is slow on
small machines (31 s for the 9.4 M-weight attention shard on the dev VM vs 6 s here)."""
import os
import time

import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

from . import build, compress, npyio, package, shards as SH, weights as W

SEED = 4321


def kmeans_1d(values, k=16, iters=20):
    """Lloyd's algorithm on sorted 1-D data with prefix sums (each step O(k log n)).
    Returns (centroids [k] float32, labels [n] uint8)."""
    order = np.argsort(values, kind="stable")
    v = values[order].astype(np.float64)
    csum = np.concatenate([[0.0], np.cumsum(v)])
    n = v.size
    cent = v[np.minimum(((np.arange(k) + 0.5) / k * n).astype(np.int64), n - 1)]
    for _ in range(iters):
        cent = np.unique(cent)
        edges = np.searchsorted(v, (cent[1:] + cent[:-1]) / 2)
        lo = np.concatenate([[0], edges])
        hi = np.concatenate([edges, [n]])
        cnt = hi - lo
        keep = cnt > 0
        new = (csum[hi[keep]] - csum[lo[keep]]) / cnt[keep]
        if new.size == cent.size and np.allclose(new, cent, rtol=0, atol=1e-7):
            cent = new
            break
        cent = new
    cent = np.concatenate([cent, np.full(k - cent.size, cent[-1])])  # pad to 2^nbits
    c16 = cent.astype(np.float16).astype(np.float64)
    edges = np.searchsorted(v, (c16[1:] + c16[:-1]) / 2)
    labels_sorted = np.searchsorted(edges, np.arange(n), side="right").astype(np.uint8)
    labels = np.empty(n, np.uint8)
    labels[order] = labels_sorted
    return c16.astype(np.float32), labels


def lut4_grouped(w, group=32):
    """Per-grouped-channel 4-bit palettization of w [O, I]: indices uint4 [O, I] and
    lut fp16 [O/group, 1, 16, 1]."""
    O, I = w.shape
    if O % group:
        group = O  # the router (one row per expert): a single table, as in the small fixtures
    idx = np.empty((O, I), np.uint8)
    lut = np.empty((O // group, 1, 16, 1), np.float16)
    for g in range(O // group):
        blk = w[g * group:(g + 1) * group].astype(np.float32).ravel()
        c, lab = kmeans_1d(blk)
        lut[g, 0, :, 0] = c.astype(np.float16)
        idx[g * group:(g + 1) * group] = lab.reshape(group, I)
    return idx, lut


_UINT4 = types.nptype_from_builtin(types.string_to_builtin("uint4"))


class _Lut4Linear:
    """Stands in for shards.linear while a program is traced: palettized weights as
    constexpr_lut_to_dense feeding the linear."""

    def __init__(self):
        self.orig = SH.linear

    def __call__(self, x, w, name):
        idx, lut = lut4_grouped(np.asarray(w))
        dense = mb.constexpr_lut_to_dense(indices=idx.astype(_UINT4), lut=lut,
                                          name=f"{name}_weight_palettized")
        return mb.linear(x=x, weight=dense, name=name)


def _build(prog_fn, variant, path, desc, cfg):
    t0 = time.time()
    if variant == "lut4":
        patch = _Lut4Linear()
        SH.linear = patch
        try:
            prog = prog_fn()
        finally:
            SH.linear = patch.orig
        model = compress.convert(prog)
        package.save(model, path, desc, {"com.shardgate.variant": variant,
                                         "com.shardgate.lut_builder": "numpy kmeans_1d"})
        ops = compress.op_types(model)
    else:
        ops = build.build_shard(prog_fn(), variant, path, desc, cfg)["op_types"]
    dt = time.time() - t0
    print(f"  {os.path.basename(path):<28} {npyio.dir_size(path) / 1e6:8.1f} MB  {dt:7.1f} s  "
          f"{ops}", flush=True)


def generate(cfg, outdir, variants):
    os.makedirs(outdir, exist_ok=True)
    t0 = time.time()
    attn = W.attention_weights(cfg, SEED, "L0.attn")
    moe = W.moe_weights(cfg, SEED, "L0.moe")
    cos, sin = W.rope_tables(cfg, cfg.seq)
    mask = W.causal_mask(cfg, cfg.seq)
    print(f"  weights generated in {time.time() - t0:.1f} s "
          f"(MoE {sum(v.size for v in moe.values()) / 1e6:.1f} M weights)", flush=True)
    for v in variants:
        _build(lambda: SH.attention_program(cfg, attn, cos, sin, mask), v,
               os.path.join(outdir, f"attention_{v}.mlpackage"), f"benchmark attention ({v})", cfg)
        _build(lambda: SH.moe_program(cfg, moe), v,
               os.path.join(outdir, f"moe_{v}.mlpackage"), f"benchmark MoE layer ({v})", cfg)
