"""Seeded fp16 weights for the fixture model.

Each tensor gets its own random stream derived from (seed, tensor name), so adding or
reordering tensors never changes the others. All values are fp16-representable; they are
kept as fp16 numpy arrays (what the dense shard stores) and widened to fp32 for the oracle.

Realism that matters for the quantization fixtures (documented in tests/generators/README.md):
- expert banks are heavy-tailed (Student-t, 4 degrees of freedom) with a few large-magnitude
  weights per expert matrix, like the MoE expert banks whose per-tensor INT8 build failed in
  the field;
- the residual stream carries a few large systematic "outlier feature" channels (LLM.int8(),
  Dettmers et al. 2022); the norms give those channels small gains, as trained models do.
"""
import zlib

import numpy as np

# Norm gain on the outlier channels (trained models nearly ignore them after normalisation).
OUTLIER_GAIN = 0.002
# Router logit scale: a peaked router, as in trained MoE models.
ROUTER_GAIN = 6.0
# Large weights per down-projection expert matrix: none; the down bank is heavy-tailed only
# (large weights writing the outlier channels made the outlier channels themselves noisy).
DOWN_OUTLIERS = 0
# Log-normal spread of weight scale between the experts of one bank.
EXPERT_SCALE_SD = 0.5


def _rng(seed, name):
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))


def _fp16(a):
    return np.asarray(a, dtype=np.float32).astype(np.float16)


def _norm_gain(cfg, rng):
    g = 1.0 + 0.1 * rng.standard_normal(cfg.d_model)
    for c in cfg.outlier_channels:
        g[c] = OUTLIER_GAIN
    return _fp16(g)


def _dense(rng, out_dim, in_dim, gain=1.0):
    return _fp16(rng.standard_normal((out_dim, in_dim)) * gain / np.sqrt(in_dim))


def _heavy_bank(rng, n_experts, rows, cols, axis, gain, outliers_per_matrix, outlier_scale,
                outlier_channels):
    """A stack of expert matrices: Student-t body plus a few large weights per expert.

    axis 0 stacks experts along rows ([E*rows, cols], gate/up banks: [F, D] per expert),
    axis 1 along columns ([rows, E*cols], the down bank: [D, F] per expert). The large weights
    sit on the residual-stream outlier channels: in the columns that read them (gate/up) and
    the rows that write them (down), where trained models keep their "super weights"
    (Yu et al. 2024) that create and consume the massive activations. Magnitudes are
    `outlier_scale` times the body standard deviation."""
    t = rng.standard_t(4, size=(n_experts, rows, cols)) / np.sqrt(2.0)  # unit variance
    for e in range(n_experts):
        for _ in range(outliers_per_matrix):
            ch = outlier_channels[rng.integers(len(outlier_channels))]
            if axis == 0:
                r, c = rng.integers(rows), ch
            else:
                r, c = ch, rng.integers(cols)
            t[e, r, c] = rng.choice([-1.0, 1.0]) * rng.uniform(0.6, 1.0) * outlier_scale
    # Experts of one bank differ in weight scale (log-normal spread); the outliers keep their
    # absolute size, so they are largest relative to the smallest experts.
    spread = np.exp(EXPERT_SCALE_SD * rng.standard_normal(n_experts))
    body = np.abs(t) < 0.5 * outlier_scale if outliers_per_matrix else np.ones_like(t, bool)
    t = np.where(body, t * spread[:, None, None], t)
    t *= gain / np.sqrt(cols)
    if axis == 0:
        return _fp16(t.reshape(n_experts * rows, cols))
    return _fp16(np.concatenate(list(t), axis=1))


def attention_weights(cfg, seed, prefix):
    r = lambda n: _rng(seed, f"{prefix}.{n}")
    return {
        "norm": _norm_gain(cfg, r("norm")),
        "wq": _dense(r("wq"), cfg.q_dim, cfg.d_model),
        "wk": _dense(r("wk"), cfg.kv_dim, cfg.d_model),
        "wv": _dense(r("wv"), cfg.kv_dim, cfg.d_model),
        "wo": _dense(r("wo"), cfg.d_model, cfg.q_dim, gain=0.5),
    }


def moe_weights(cfg, seed, prefix, outliers_per_matrix=2, outlier_scale=200.0):
    r = lambda n: _rng(seed, f"{prefix}.{n}")
    E, F, D = cfg.n_experts, cfg.expert_hidden, cfg.d_model
    oc = cfg.outlier_channels or (0,)
    return {
        "norm": _norm_gain(cfg, r("norm")),
        "router": _dense(r("router"), E, D, gain=ROUTER_GAIN),
        "gate": _heavy_bank(r("gate"), E, F, D, 0, 1.0, outliers_per_matrix, outlier_scale, oc),
        "up": _heavy_bank(r("up"), E, F, D, 0, 1.0, outliers_per_matrix, outlier_scale, oc),
        "down": _heavy_bank(r("down"), E, D, F, 1, 1.0, DOWN_OUTLIERS, outlier_scale, oc),
    }


def embedding_table(cfg, seed):
    rng = _rng(seed, "embed")
    t = rng.standard_normal((cfg.vocab, cfg.d_model))
    for c, v in zip(cfg.outlier_channels, cfg.outlier_values):
        t[:, c] = v + 0.5 * rng.standard_normal(cfg.vocab)
    return _fp16(t)


def head_weights(cfg, seed):
    rng = _rng(seed, "head")
    return {
        "norm": _norm_gain(cfg, _rng(seed, "final_norm")),
        "w": _dense(rng, cfg.vocab, cfg.d_model, gain=4.0),
    }


def model_weights(cfg, seed, outliers_per_matrix=2, outlier_scale=200.0):
    return {
        "embed": embedding_table(cfg, seed),
        "layers": [
            {"attn": attention_weights(cfg, seed, f"L{i}.attn"),
             "moe": moe_weights(cfg, seed, f"L{i}.moe", outliers_per_matrix, outlier_scale)}
            for i in range(cfg.n_layers)],
        "head": head_weights(cfg, seed),
    }


def rope_tables(cfg, n_pos):
    """cos/sin [n_pos, head_dim] for rotate-half RoPE, computed in float64, stored fp16."""
    half = cfg.head_dim // 2
    inv = cfg.rope_theta ** (-np.arange(half, dtype=np.float64) / half)
    ang = np.arange(n_pos, dtype=np.float64)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], axis=1)
    return _fp16(np.cos(ang)), _fp16(np.sin(ang))


def causal_mask(cfg, n):
    m = np.zeros((n, n), dtype=np.float32)
    m[np.triu_indices(n, 1)] = cfg.mask_value
    return _fp16(m)
