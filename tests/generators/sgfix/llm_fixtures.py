"""Single shards for the residency / interpreter tests and their whole-shard oracle cases:
tests/data/fixtures/llm/{attention,moe,lm_head_p*}_{variant}.mlpackage, attention_kv_fp16,
and cases/ (inputs, expected outputs in two precisions, expected decoded weights)."""
import json
import os

import numpy as np

from . import build, compress, npyio, reference as R, shards as SH, weights as W

SEED = 1234          # weights (shared with the sample chain: layer 0 / the LM head)
INPUT_SEED = 99      # case inputs
MIN_ROUTER_MARGIN = 2e-3


def case_input(cfg, seed):
    """A residual-stream-like hidden state: unit normal plus the outlier channels."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, cfg.seq, cfg.d_model))
    for c, v in zip(cfg.outlier_channels, cfg.outlier_values):
        x[..., c] = v + 0.5 * rng.standard_normal(cfg.seq)
    return x.astype(np.float16)


def _moe_input(cfg, w):
    """First seed whose routing is unambiguous (top-k gap >= MIN_ROUTER_MARGIN) in both
    precisions, so an fp16 executor and the oracle pick the same experts."""
    for k in range(100):
        x = case_input(cfg, INPUT_SEED + k)
        if min(R.router_margin(x, w, cfg, m) for m in ("fp32", "fp16")) >= MIN_ROUTER_MARGIN:
            return x
    raise RuntimeError("no input with a clear routing margin")


def _raw_info(entry):
    return {k: {"dtype": t, "shape": list(a.shape)} for k, (t, a) in entry["raw"].items()}


def _write_case(root, shard, kind, calls, fn_note, expected_weight_ops, extra=None):
    name = shard["name"].removesuffix(".mlpackage")
    cdir = os.path.join(root, "cases", name)
    case = {"name": name, "shard": f"../{shard['name']}", "function": "main",
            "variant": shard["variant"], "kind": kind, "note": fn_note,
            "inputs": shard["inputs"], "outputs": shard["outputs"], "states": shard["states"],
            "op_types": shard["op_types"], "calls": [], "expected_weights": []}
    for ci, call in enumerate(calls):
        entry = {"inputs": {}, "outputs": {}}
        for k, v in call["inputs"].items():
            f = f"{name}/input_{k}{call.get('suffix', '')}.npy"
            npyio.save(os.path.join(root, "cases", f), v)
            entry["inputs"][k] = f
        for k, (v32, v16) in call["outputs"].items():
            f32 = f"{name}/expected_{k}{call.get('suffix', '')}.npy"
            npyio.save(os.path.join(root, "cases", f32), v32.astype(np.float32))
            entry["outputs"][k] = {"fp32": f32}
            if v16 is not None:
                f16 = f"{name}/expected_fp16ops_{k}{call.get('suffix', '')}.npy"
                npyio.save(os.path.join(root, "cases", f16), v16.astype(np.float16))
                entry["outputs"][k]["fp16ops"] = f16
                entry["outputs"][k]["max_abs_fp32_vs_fp16ops"] = float(
                    np.abs(v32.astype(np.float32) - v16.astype(np.float32)).max())
        if "start" in call:
            entry["note"] = f"call {ci}: start={call['start']}, state carried from call {ci - 1}" \
                if ci else f"call 0: start={call['start']}, state starts as zeros"
        case["calls"].append(entry)
    if shard["variant"] != "fp16":
        for op in expected_weight_ops:
            e = shard["weights"][op]
            vname = e["name"]
            f = f"{name}/expected_weights/{vname}.npy"
            npyio.save(os.path.join(root, "cases", f), e["decoded"])
            case["expected_weights"].append({"consumer_op": op, "value": vname,
                                             "op_type": e["op_type"], "raw": _raw_info(e),
                                             "file": f})
    case.update(extra or {})
    return case


def generate(cfg, root, log=print):
    os.makedirs(root, exist_ok=True)
    wts = W.model_weights(cfg, SEED)
    attn_w, moe_w, head_w = wts["layers"][0]["attn"], wts["layers"][0]["moe"], wts["head"]
    cos, sin = W.rope_tables(cfg, cfg.seq)
    mask = W.causal_mask(cfg, cfg.seq)
    x_attn = case_input(cfg, INPUT_SEED)
    x_moe = _moe_input(cfg, moe_w)
    cases, shards = [], []
    md = {"com.shardgate.seed": SEED}

    for v in compress.VARIANTS:
        # attention
        s = build.build_shard(SH.attention_program(cfg, attn_w, cos, sin, mask), v,
                              os.path.join(root, f"attention_{v}.mlpackage"),
                              f"fixture: one attention layer ({v})", cfg, metadata=md)
        w = build.attention_weights(s, attn_w)
        outs = {m: R.attention(x_attn, w, cfg, cos, sin, mask, m) for m in ("fp32", "fp16")}
        cases.append(_write_case(root, s, "attention",
                                 [{"inputs": {"hidden": x_attn},
                                   "outputs": {"hidden_out": (outs["fp32"], outs["fp16"])}}],
                                 "hidden [1,8,64] -> hidden_out = hidden + attention", ["q_proj"]))
        shards.append(s)
        # moe
        s = build.build_shard(SH.moe_program(cfg, moe_w), v,
                              os.path.join(root, f"moe_{v}.mlpackage"),
                              f"fixture: one MoE FFN layer, 16 experts top-2 ({v})", cfg,
                              metadata=md)
        w = build.moe_weights(s, moe_w, "experts_down")
        outs = {m: R.moe(x_moe, w, cfg, m) for m in ("fp32", "fp16")}
        margin = min(R.router_margin(x_moe, w, cfg, m) for m in ("fp32", "fp16"))
        cases.append(_write_case(root, s, "moe",
                                 [{"inputs": {"hidden": x_moe},
                                   "outputs": {"hidden_out": (outs["fp32"], outs["fp16"])}}],
                                 "hidden [1,8,64] -> hidden_out = hidden + MoE(hidden)",
                                 ["experts_gate"], {"router_margin": round(margin, 6)}))
        shards.append(s)
        # LM head parts
        for p in range(cfg.head_splits):
            hp = R.head_part(head_w, cfg, p)
            s = build.build_shard(SH.lm_head_program(cfg, head_w, p), v,
                                  os.path.join(root, f"lm_head_p{p}_{v}.mlpackage"),
                                  f"fixture: final RMSNorm + LM head vocab part {p} ({v})", cfg,
                                  metadata=md)
            w = build.head_weights(s, hp)
            outs = {m: R.lm_head(x_attn, w["norm"], w["w"], cfg, m) for m in ("fp32", "fp16")}
            cases.append(_write_case(root, s, "lm_head",
                                     [{"inputs": {"hidden": x_attn},
                                       "outputs": {"logits": (outs["fp32"], outs["fp16"])}}],
                                     f"hidden [1,8,64] -> logits [1,8,{cfg.vocab_split}] "
                                     f"(vocab {p * cfg.vocab_split}..{(p + 1) * cfg.vocab_split - 1})",
                                     ["logits"]))
            shards.append(s)

    # Stateful attention: two calls of kv_chunk tokens reproduce the 8-token attention layer.
    ctab, stab = W.rope_tables(cfg, cfg.cache_len)
    s = build.build_shard(SH.attention_kv_program(cfg, attn_w, ctab, stab), "fp16",
                          os.path.join(root, "attention_kv_fp16.mlpackage"),
                          "fixture: stateful attention with a KV cache (fp16)", cfg,
                          stateful=True, metadata=md)
    full = R.attention(x_attn, attn_w, cfg, cos, sin, mask, "fp32")
    T = cfg.kv_chunk
    calls = []
    for c in range(cfg.seq // T):
        calls.append({"inputs": {"hidden": x_attn[:, c * T:(c + 1) * T],
                                 "start": np.array([c * T], np.int32)},
                      "outputs": {"hidden_out": (full[:, c * T:(c + 1) * T], None)},
                      "start": c * T, "suffix": f"_call{c}"})
    cases.append(_write_case(root, s, "attention_kv", calls,
                             "calls run in order with k_cache/v_cache carried; their outputs "
                             "concatenated equal attention_fp16 on all 8 tokens "
                             "(cases/attention_fp16); expected = fp32 oracle of that layer",
                             [], {"state_shapes": {n: [1, cfg.n_kv_heads, cfg.cache_len,
                                                        cfg.head_dim] for n in s["states"]}}))
    shards.append(s)

    doc = {"schema": "shardgate/fixture-cases@1",
           "generator": "tests/generators/generate_fixtures.py",
           "coremltools_version": __import__("coremltools").__version__,
           "weights_seed": SEED, "input_seed": INPUT_SEED,
           "note": ("paths are relative to this file. expected_* = numpy float32 math on the "
                    "weights decoded by our numpy code from the compressed arrays; "
                    "expected_fp16ops_* = the same with every fp16-typed op output rounded to "
                    "fp16. expected_weights = decoded fp16 weight values (exact)."),
           "cases": cases}
    with open(os.path.join(root, "cases", "cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for s in shards:
        log(f"  {s['name']:<32} {npyio.dir_size(s['path']):>8} B  in={s['inputs']} "
            f"out={s['outputs']} states={s['states']}")
        log(f"      ops: {s['op_types']}")
    return shards
