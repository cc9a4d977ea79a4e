"""MIL builder programs for the fixture shards (iOS18 opset, fp16 I/O, static shapes).

Each builder returns a pymil Program; linear ops are named after the projection they hold
(q_proj, k_proj, ..., experts_gate, experts_up, experts_down, router, lm_head, embed) so the
compressed weights can be found again by the consuming op's name. The numpy oracle in
reference.py mirrors these graphs op by op.
"""
import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

OPSET = ct.target.iOS18


def _h(a):
    return np.asarray(a, dtype=np.float16)


def rmsnorm(x, gain, eps, name):
    sq = mb.square(x=x, name=f"{name}_square")
    ms = mb.reduce_mean(x=sq, axes=[-1], keep_dims=True, name=f"{name}_mean")
    a = mb.add(x=ms, y=np.float16(eps), name=f"{name}_add_eps")
    r = mb.rsqrt(x=a, name=f"{name}_rsqrt")
    n = mb.mul(x=x, y=r, name=f"{name}_scale")
    return mb.mul(x=n, y=_h(gain), name=f"{name}_gain")


def linear(x, w, name):
    return mb.linear(x=x, weight=_h(w), name=name)


def rope(x, cos, sin, n_heads, seq, head_dim, name):
    """Rotate-half RoPE on x [1, H, S, hd]; cos/sin are [1, 1, S, hd] values or consts."""
    half = head_dim // 2
    x1 = mb.slice_by_index(x=x, begin=[0, 0, 0, 0], end=[1, n_heads, seq, half],
                           name=f"{name}_x1")
    x2 = mb.slice_by_index(x=x, begin=[0, 0, 0, half], end=[1, n_heads, seq, head_dim],
                           name=f"{name}_x2")
    neg = mb.mul(x=x2, y=np.float16(-1.0), name=f"{name}_neg")
    rot = mb.concat(values=[neg, x1], axis=-1, name=f"{name}_rot")
    a = mb.mul(x=x, y=cos, name=f"{name}_cos")
    b = mb.mul(x=rot, y=sin, name=f"{name}_sin")
    return mb.add(x=a, y=b, name=name)


def expand_kv(k, cfg, seq, name):
    """GQA: concat KV heads so query head h reads KV head h // group."""
    group = cfg.n_heads // cfg.n_kv_heads
    heads = [mb.slice_by_index(x=k, begin=[0, j, 0, 0], end=[1, j + 1, seq, cfg.head_dim],
                               name=f"{name}_h{j}") for j in range(cfg.n_kv_heads)]
    return mb.concat(values=[heads[h // group] for h in range(cfg.n_heads)], axis=1, name=name)


def split_heads(x, n, seq, head_dim, name):
    r = mb.reshape(x=x, shape=[1, seq, n, head_dim], name=f"{name}_reshape")
    return mb.transpose(x=r, perm=[0, 2, 1, 3], name=name)


def _attention_core(x, q, k_all, v_all, mask, cfg, seq, kv_len, w):
    """Scores, softmax, context and output projection with residual."""
    ke = expand_kv(k_all, cfg, kv_len, "k_gqa")
    ve = expand_kv(v_all, cfg, kv_len, "v_gqa")
    s = mb.matmul(x=q, y=ke, transpose_y=True, name="scores")
    s = mb.mul(x=s, y=np.float16(1.0 / np.sqrt(cfg.head_dim)), name="scores_scaled")
    s = mb.add(x=s, y=mask, name="scores_masked")
    p = mb.softmax(x=s, axis=-1, name="probs")
    c = mb.matmul(x=p, y=ve, name="context")
    c = mb.transpose(x=c, perm=[0, 2, 1, 3], name="context_t")
    c = mb.reshape(x=c, shape=[1, seq, cfg.q_dim], name="context_merged")
    o = linear(c, w["wo"], "o_proj")
    return mb.add(x=x, y=o, name="hidden_out")


def attention_program(cfg, w, cos, sin, mask):
    S = cfg.seq

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, S, cfg.d_model), dtype=types.fp16)],
                opset_version=OPSET)
    def prog(hidden):
        h = rmsnorm(hidden, w["norm"], cfg.eps, "attn_norm")
        q = split_heads(linear(h, w["wq"], "q_proj"), cfg.n_heads, S, cfg.head_dim, "q")
        k = split_heads(linear(h, w["wk"], "k_proj"), cfg.n_kv_heads, S, cfg.head_dim, "k")
        v = split_heads(linear(h, w["wv"], "v_proj"), cfg.n_kv_heads, S, cfg.head_dim, "v")
        c = _h(cos).reshape(1, 1, S, cfg.head_dim)
        s = _h(sin).reshape(1, 1, S, cfg.head_dim)
        q = rope(q, c, s, cfg.n_heads, S, cfg.head_dim, "q_rope")
        k = rope(k, c, s, cfg.n_kv_heads, S, cfg.head_dim, "k_rope")
        return _attention_core(hidden, q, k, v, _h(mask).reshape(1, 1, S, S), cfg, S, S, w)

    return prog


def attention_kv_program(cfg, w, cos_table, sin_table):
    """Stateful attention over a KV cache [1, n_kv_heads, cache_len, head_dim].

    Inputs: hidden [1, T, D] (T = kv_chunk tokens) and start int32 [1] (position of the first
    token). The new K/V rows are written at [start, start + T) with slice_update; queries attend
    to cache rows j <= start + i."""
    T, C, hd = cfg.kv_chunk, cfg.cache_len, cfg.head_dim
    state_shape = (1, cfg.n_kv_heads, C, hd)

    @mb.program(input_specs=[
        mb.TensorSpec(shape=(1, T, cfg.d_model), dtype=types.fp16),
        mb.TensorSpec(shape=(1,), dtype=types.int32),
        mb.StateTensorSpec(shape=state_shape, dtype=types.fp16),
        mb.StateTensorSpec(shape=state_shape, dtype=types.fp16)], opset_version=OPSET)
    def prog(hidden, start, k_cache, v_cache):
        pos = mb.add(x=start, y=np.arange(T, dtype=np.int32), name="positions")
        cos = mb.gather(x=_h(cos_table), indices=pos, axis=0, name="rope_cos_rows")
        sin = mb.gather(x=_h(sin_table), indices=pos, axis=0, name="rope_sin_rows")
        cos = mb.reshape(x=cos, shape=[1, 1, T, hd], name="rope_cos")
        sin = mb.reshape(x=sin, shape=[1, 1, T, hd], name="rope_sin")
        h = rmsnorm(hidden, w["norm"], cfg.eps, "attn_norm")
        q = split_heads(linear(h, w["wq"], "q_proj"), cfg.n_heads, T, hd, "q")
        k = split_heads(linear(h, w["wk"], "k_proj"), cfg.n_kv_heads, T, hd, "k")
        v = split_heads(linear(h, w["wv"], "v_proj"), cfg.n_kv_heads, T, hd, "v")
        q = rope(q, cos, sin, cfg.n_heads, T, hd, "q_rope")
        k = rope(k, cos, sin, cfg.n_kv_heads, T, hd, "k_rope")
        stop = mb.add(x=start, y=np.int32(T), name="stop")
        begin = mb.concat(values=[np.array([0, 0], np.int32), start, np.array([0], np.int32)],
                          axis=0, name="cache_begin")
        end = mb.concat(values=[np.array([1, cfg.n_kv_heads], np.int32), stop,
                                np.array([hd], np.int32)], axis=0, name="cache_end")
        kc = mb.read_state(input=k_cache, name="k_cache_read")
        vc = mb.read_state(input=v_cache, name="v_cache_read")
        kc = mb.slice_update(x=kc, update=k, begin=begin, end=end, name="k_cache_updated")
        vc = mb.slice_update(x=vc, update=v, begin=begin, end=end, name="v_cache_updated")
        kc = mb.coreml_update_state(state=k_cache, value=kc, name="k_cache_written")
        vc = mb.coreml_update_state(state=v_cache, value=vc, name="v_cache_written")
        qpos = mb.reshape(x=pos, shape=[T, 1], name="query_positions")
        allowed = mb.less_equal(x=np.arange(C, dtype=np.int32).reshape(1, C), y=qpos,
                                name="mask_allowed")
        mask = mb.select(cond=allowed, a=np.zeros((T, C), np.float16),
                         b=np.full((T, C), cfg.mask_value, np.float16), name="mask_values")
        mask = mb.reshape(x=mask, shape=[1, 1, T, C], name="mask")
        return _attention_core(hidden, q, kc, vc, mask, cfg, T, C, w)

    return prog


def _moe_body(x, w, cfg, S, lo, hi, down_name):
    """Router over all experts, dense evaluation of experts [lo, hi), weighted sum."""
    E, F = cfg.n_experts, cfg.expert_hidden
    n = hi - lo
    h = rmsnorm(x, w["norm"], cfg.eps, "moe_norm")
    logits = linear(h, w["router"], "router")
    probs = mb.softmax(x=logits, axis=-1, name="router_probs")
    vals, _ = mb.topk(x=probs, k=cfg.top_k, axis=-1, name="router_topk")
    wsum = mb.reduce_sum(x=vals, axes=[-1], keep_dims=True, name="router_topk_sum")
    kth = mb.slice_by_index(x=vals, begin=[0, 0, cfg.top_k - 1], end=[1, S, cfg.top_k],
                            name="router_kth")
    norm = mb.real_div(x=probs, y=wsum, name="router_renorm")
    chosen = mb.greater_equal(x=probs, y=kth, name="router_chosen")
    gates = mb.select(cond=chosen, a=norm, b=np.float16(0.0), name="router_gates")
    if (lo, hi) != (0, E):
        gates = mb.slice_by_index(x=gates, begin=[0, 0, lo], end=[1, S, hi], name="pack_gates")
    g = linear(h, w["gate"][lo * F:hi * F], "experts_gate")
    u = linear(h, w["up"][lo * F:hi * F], "experts_up")
    a = mb.mul(x=mb.silu(x=g, name="experts_silu"), y=u, name="experts_act")
    a = mb.reshape(x=a, shape=[1, S, n, F], name="experts_act_split")
    gw = mb.reshape(x=gates, shape=[1, S, n, 1], name="gates_split")
    a = mb.mul(x=a, y=gw, name="experts_weighted")
    a = mb.reshape(x=a, shape=[1, S, n * F], name="experts_weighted_merged")
    return linear(a, w["down"][:, lo * F:hi * F], down_name)


def moe_program(cfg, w):
    S = cfg.seq

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, S, cfg.d_model), dtype=types.fp16)],
                opset_version=OPSET)
    def prog(hidden):
        y = _moe_body(hidden, w, cfg, S, 0, cfg.n_experts, "experts_down")
        return mb.add(x=hidden, y=y, name="hidden_out")

    return prog


def moe_pack_program(cfg, w, pack):
    """One MoE pack: experts [pack*E/P, (pack+1)*E/P), output without the residual."""
    S = cfg.seq
    per = cfg.n_experts // cfg.n_packs

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, S, cfg.d_model), dtype=types.fp16)],
                opset_version=OPSET)
    def prog(hidden):
        return _moe_body(hidden, w, cfg, S, pack * per, (pack + 1) * per, "moe_out")

    return prog


def lm_head_program(cfg, head, part):
    S, V = cfg.seq, cfg.vocab_split

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, S, cfg.d_model), dtype=types.fp16)],
                opset_version=OPSET)
    def prog(hidden):
        h = rmsnorm(hidden, head["norm"], cfg.eps, "final_norm")
        return linear(h, head["w"][part * V:(part + 1) * V], "logits")

    return prog


def embed_program(cfg, table):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, cfg.seq), dtype=types.int32)],
                opset_version=OPSET)
    def prog(input_ids):
        return mb.gather(x=_h(table), indices=input_ids, axis=0, name="hidden")

    return prog
