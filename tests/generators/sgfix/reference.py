"""Independent numpy forward passes of the fixture model (the test oracle).

mode "fp32": float32 math on the (decoded) fp16 weights, nothing rounded in between.
mode "fp16": the same math, but every op output that the MIL shard types as fp16 is rounded
to fp16, op by op, following the graphs built in shards.py (what an fp16 executor stores).
Accumulations inside one op (linear, matmul, reductions, softmax) stay float32 in both modes.
"""
import numpy as np


def rnd(x, mode):
    x = np.asarray(x, dtype=np.float32)
    return x.astype(np.float16).astype(np.float32) if mode == "fp16" else x


def f32(a):
    return np.asarray(a, dtype=np.float32)


def rmsnorm(x, gain, eps, mode):
    sq = rnd(x * x, mode)
    ms = rnd(sq.mean(axis=-1, keepdims=True), mode)
    a = rnd(ms + np.float32(np.float16(eps)), mode)
    r = rnd(1.0 / np.sqrt(a), mode)
    n = rnd(x * r, mode)
    return rnd(n * f32(gain), mode)


def linear(x, w, mode):
    return rnd(x @ f32(w).T, mode)


def softmax(x, mode):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return rnd(e / e.sum(axis=-1, keepdims=True), mode)


def silu(x, mode):
    return rnd(x / (1.0 + np.exp(-x)), mode)


def rope(x, cos, sin, mode):
    """Rotate-half RoPE; x [1, H, S, hd], cos/sin [S, hd]."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    rot = np.concatenate([rnd(-x2, mode), x1], axis=-1)
    return rnd(rnd(x * f32(cos), mode) + rnd(rot * f32(sin), mode), mode)


def expand_kv(k, n_heads):
    """GQA: query head h reads KV head h // (n_heads / n_kv_heads)."""
    group = n_heads // k.shape[1]
    return np.concatenate([k[:, h // group:h // group + 1] for h in range(n_heads)], axis=1)


def attention(x, w, cfg, cos, sin, mask, mode):
    """One attention layer with residual. x [1, S, D] → [1, S, D]."""
    x = f32(x)
    S = x.shape[1]
    h = rmsnorm(x, w["norm"], cfg.eps, mode)
    q = linear(h, w["wq"], mode).reshape(1, S, cfg.n_heads, cfg.head_dim).transpose(0, 2, 1, 3)
    k = linear(h, w["wk"], mode).reshape(1, S, cfg.n_kv_heads, cfg.head_dim).transpose(0, 2, 1, 3)
    v = linear(h, w["wv"], mode).reshape(1, S, cfg.n_kv_heads, cfg.head_dim).transpose(0, 2, 1, 3)
    q = rope(q, cos, sin, mode)
    k = rope(k, cos, sin, mode)
    k = expand_kv(k, cfg.n_heads)
    v = expand_kv(v, cfg.n_heads)
    s = rnd(q @ k.transpose(0, 1, 3, 2), mode)
    s = rnd(s * np.float32(1.0 / np.sqrt(cfg.head_dim)), mode)
    s = rnd(s + f32(mask), mode)
    p = softmax(s, mode)
    ctx = rnd(p @ v, mode).transpose(0, 2, 1, 3).reshape(1, S, cfg.q_dim)
    o = linear(ctx, w["wo"], mode)
    return rnd(x + o, mode)


def router_gates(h, w, cfg, mode):
    """Dense [1, S, E] expert weights: softmax router, top-k, renormalised; also returns the
    sorted probabilities (for the tie-margin check)."""
    probs = softmax(linear(h, w["router"], mode), mode)
    srt = -np.sort(-probs, axis=-1)
    vals = srt[..., :cfg.top_k]
    wsum = rnd(vals.sum(axis=-1, keepdims=True), mode)
    kth = vals[..., cfg.top_k - 1:cfg.top_k]
    norm = rnd(probs / wsum, mode)
    gates = np.where(probs >= kth, norm, np.float32(0.0))
    return gates, srt


def moe_contribution(x, w, cfg, mode, experts=None):
    """MoE FFN output without the residual, over `experts` (a range; all when None).

    `w` holds the router over all experts and the banks of exactly the experts in `experts`
    (gate/up [n*F, D], down [D, n*F]), i.e. the weights one pack shard stores."""
    x = f32(x)
    S = x.shape[1]
    E, F = cfg.n_experts, cfg.expert_hidden
    h = rmsnorm(x, w["norm"], cfg.eps, mode)
    gates, _ = router_gates(h, w, cfg, mode)
    lo, hi = (0, E) if experts is None else (experts.start, experts.stop)
    n = hi - lo
    g = linear(h, w["gate"], mode)
    u = linear(h, w["up"], mode)
    a = rnd(silu(g, mode) * u, mode).reshape(1, S, n, F)
    aw = rnd(a * gates[..., lo:hi, None], mode).reshape(1, S, n * F)
    return linear(aw, w["down"], mode)


def moe(x, w, cfg, mode):
    return rnd(f32(x) + moe_contribution(x, w, cfg, mode), mode)


def pack_weights(w, cfg, pack):
    """The slice of a full MoE layer that pack `pack` stores."""
    per = cfg.n_experts // cfg.n_packs
    F = cfg.expert_hidden
    lo, hi = pack * per * F, (pack + 1) * per * F
    return {"norm": w["norm"], "router": w["router"], "gate": w["gate"][lo:hi],
            "up": w["up"][lo:hi], "down": w["down"][:, lo:hi]}


def head_part(head, cfg, part):
    V = cfg.vocab_split
    return {"norm": head["norm"], "w": head["w"][part * V:(part + 1) * V]}


def lm_head(x, gain, w_slice, cfg, mode):
    h = rmsnorm(f32(x), gain, cfg.eps, mode)
    return linear(h, w_slice, mode)


def router_margin(x, w, cfg, mode):
    """Smallest gap between the k-th and (k+1)-th router probability over positions."""
    h = rmsnorm(f32(x), w["norm"], cfg.eps, mode)
    _, srt = router_gates(h, w, cfg, mode)
    return float((srt[..., cfg.top_k - 1] - srt[..., cfg.top_k]).min())


def shard_weights_from_model(weights, cfg):
    """Per-shard weights of the sample chain, sliced from the dense model."""
    return {"embed": weights["embed"],
            "layers": [{"attn": lw["attn"],
                        "packs": [pack_weights(lw["moe"], cfg, p) for p in range(cfg.n_packs)]}
                       for lw in weights["layers"]],
            "heads": [head_part(weights["head"], cfg, p) for p in range(cfg.head_splits)]}


def chain_forward(sw, cfg, ids, cos, sin, mask, mode):
    """The sample chain: embed → per layer attention, packs, sum → LM-head parts, concat.

    `sw` are per-shard weights (shard_weights_from_model, or decoded from quantized shards).
    Returns {"embed", "hidden.N", "logits", "router_margins" (per layer, min over packs)}."""
    out = {}
    x = rnd(f32(sw["embed"])[np.asarray(ids)], mode)  # gather
    out["embed"] = x
    margins = []
    per = cfg.n_experts // cfg.n_packs
    for i, lw in enumerate(sw["layers"]):
        a = attention(x, lw["attn"], cfg, cos, sin, mask, mode)
        margins.append(min(router_margin(a, pw, cfg, mode) for pw in lw["packs"]))
        acc = a
        for p, pw in enumerate(lw["packs"]):  # the chain's "sum" combine, in listed order
            acc = rnd(acc + moe_contribution(a, pw, cfg, mode, range(p * per, (p + 1) * per)),
                      mode)
        x = acc
        out[f"hidden.{i}"] = x
    out["logits"] = np.concatenate([lm_head(x, hp["norm"], hp["w"], cfg, mode)
                                    for hp in sw["heads"]], axis=-1)
    out["router_margins"] = margins
    return out
