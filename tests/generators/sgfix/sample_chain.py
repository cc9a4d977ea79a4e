"""The bundled sample chain (goldens/sample/): shards of every variant, FP16 goldens from the
numpy oracle, chain manifests, and the numpy fidelity tables (expected_metrics.json)."""
import json
import os
import re
import tempfile

import numpy as np

from . import build, npyio, reference as R, shards as SH, weights as W

SEED = 1234
PROMPT = [1, 17, 42, 5, 99, 3, 61, 8]
VARIANTS = ("fp16", "int8", "lut4")
MODEL = "tiny-moe-4l"


def build_variant(cfg, wts, variant, shard_dir, cos, sin, mask, log):
    md = {"com.shardgate.seed": SEED, "com.shardgate.model": MODEL}
    sw = R.shard_weights_from_model(wts, cfg)
    dec = {"layers": [], "heads": []}
    names = {}
    p = lambda n: os.path.join(shard_dir, f"{n}_{variant}.mlpackage")
    s = build.build_shard(SH.embed_program(cfg, wts["embed"]), variant, p("embed"),
                          f"{MODEL} embedding ({variant})", cfg, metadata=md)
    dec["embed"] = build.embed_table(s)
    names["embed"] = s
    for i in range(cfg.n_layers):
        lw = wts["layers"][i]
        s = build.build_shard(SH.attention_program(cfg, lw["attn"], cos, sin, mask), variant,
                              p(f"L{i}_attn"), f"{MODEL} layer {i} attention ({variant})", cfg,
                              metadata=md)
        names[f"L{i}_attn"] = s
        layer = {"attn": build.attention_weights(s, lw["attn"]), "packs": []}
        for k in range(cfg.n_packs):
            s = build.build_shard(SH.moe_pack_program(cfg, lw["moe"], k), variant,
                                  p(f"L{i}_moe_p{k}"),
                                  f"{MODEL} layer {i} MoE pack {k} of {cfg.n_packs} ({variant})",
                                  cfg, metadata=md)
            names[f"L{i}_moe_p{k}"] = s
            layer["packs"].append(build.moe_weights(s, sw["layers"][i]["packs"][k], "moe_out"))
        dec["layers"].append(layer)
    for k in range(cfg.head_splits):
        s = build.build_shard(SH.lm_head_program(cfg, wts["head"], k), variant, p(f"head_p{k}"),
                              f"{MODEL} LM head part {k} ({variant})", cfg, metadata=md)
        names[f"head_p{k}"] = s
        dec["heads"].append(build.head_weights(s, sw["heads"][k]))
    return dec, names


def chain_manifest(cfg, variant):
    steps = [{"id": "embed", "shard": f"../shards/embed_{variant}.mlpackage", "function": "main",
              "inputs": {"input_ids": "input_ids"}, "outputs": {"hidden": "embed"}}]
    prev = "embed"
    for i in range(cfg.n_layers):
        steps.append({"id": f"L{i}.attn", "layer": i,
                      "shard": f"../shards/L{i}_attn_{variant}.mlpackage", "function": "main",
                      "residual_input": "hidden",
                      "inputs": {"hidden": prev}, "outputs": {"hidden_out": f"L{i}.attn_out"}})
        for k in range(cfg.n_packs):
            steps.append({"id": f"L{i}.moe.p{k}", "layer": i,
                          "shard": f"../shards/L{i}_moe_p{k}_{variant}.mlpackage",
                          "function": "main",
                          "inputs": {"hidden": f"L{i}.attn_out"},
                          "outputs": {"moe_out": f"L{i}.moe_p{k}"}})
        steps.append({"id": f"L{i}.combine", "layer": i, "combine": "sum",
                      "inputs": [f"L{i}.attn_out"] + [f"L{i}.moe_p{k}" for k in range(cfg.n_packs)],
                      "output": f"hidden.{i}"})
        prev = f"hidden.{i}"
    for k in range(cfg.head_splits):
        steps.append({"id": f"head.p{k}", "shard": f"../shards/head_p{k}_{variant}.mlpackage",
                      "function": "main", "inputs": {"hidden": prev},
                      "outputs": {"logits": f"logits.p{k}"}})
    steps.append({"id": "head.concat", "combine": "concat", "axis": -1,
                  "inputs": [f"logits.p{k}" for k in range(cfg.head_splits)], "output": "logits"})
    checkpoints = [{"tensor": "embed", "golden": "embed", "kind": "hidden", "layer": -1}]
    checkpoints += [{"tensor": f"hidden.{i}", "golden": f"hidden.{i}", "kind": "hidden",
                     "layer": i} for i in range(cfg.n_layers)]
    checkpoints.append({"tensor": "logits", "golden": "logits", "kind": "logits"})
    return {"schema": "shardgate/chain@1", "name": f"{MODEL}-{variant}", "goldens": "../goldens",
            "inputs": {"input_ids": "golden:input_ids"}, "steps": steps, "states": {},
            "checkpoints": checkpoints}


def write_goldens(cfg, gdir, ref):
    os.makedirs(gdir, exist_ok=True)
    tensors = []

    def add(name, kind, layer, arr, dtype):
        fname = name.replace(".", "_") + ".npy"
        path = os.path.join(gdir, fname)
        npyio.save(path, arr)
        tensors.append({"name": name, "kind": kind, "layer": layer, "position_axis": 1,
                        "shape": list(arr.shape), "dtype": dtype, "file": fname,
                        "sha256": npyio.sha256(path)})

    add("input_ids", "input", None, np.array([PROMPT], np.int32), "int32")
    add("embed", "hidden", -1, ref["embed"].astype(np.float16), "fp16")
    for i in range(cfg.n_layers):
        add(f"hidden.{i}", "hidden", i, ref[f"hidden.{i}"].astype(np.float16), "fp16")
    add("logits", "logits", None, ref["logits"].astype(np.float16), "fp16")
    man = {"schema": "shardgate/golden-dump@1", "model": MODEL, "dtype": "fp16",
           "prompt_token_ids": PROMPT, "tensors": tensors}
    with open(os.path.join(gdir, "manifest.json"), "w") as f:
        json.dump(man, f, indent=2)
        f.write("\n")
    return {t["name"]: np.load(os.path.join(gdir, t["file"])) for t in tensors}


def _cos(a, b, axis=None):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))


def _norm_ratio(a, b, axis=None):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return np.sqrt((a * a).sum(axis)) / np.sqrt((b * b).sum(axis))


def metrics(cfg, out, gold):
    """Cosines of a chain run against the goldens (as stored, fp16), in float64.
    hidden: whole-tensor cosine per checkpoint and per position; logits: per position."""
    r = lambda v: [round(float(x), 6) for x in np.atleast_1d(v)]
    m = {"hidden": [], "logits": {}}
    for name, layer in [("embed", -1)] + [(f"hidden.{i}", i) for i in range(cfg.n_layers)]:
        c, g = out[name][0], gold[name][0]
        m["hidden"].append({"checkpoint": name, "layer": layer, "cosine": r(_cos(c, g))[0],
                            "norm_ratio": r(_norm_ratio(c, g))[0],
                            "cosine_per_position": r(_cos(c, g, axis=-1))})
    c, g = out["logits"][0], gold["logits"][0]
    m["logits"] = {"cosine_per_position": r(_cos(c, g, axis=-1)),
                   "norm_ratio_per_position": r(_norm_ratio(c, g, axis=-1)),
                   "top1_agreement_per_position": [bool(x) for x in c.argmax(-1) == g.argmax(-1)]}
    hid = [h["cosine"] for h in m["hidden"]]
    m["summary"] = {"min_hidden_cosine": min(hid),
                    "min_logits_cosine": min(m["logits"]["cosine_per_position"]),
                    "worst_logits_position": int(np.argmin(m["logits"]["cosine_per_position"])),
                    "router_margin_min": round(float(min(out["router_margins"])), 6)}
    m["summary"]["passes_0_97"] = bool(min(hid) >= 0.97 and
                                       m["summary"]["min_logits_cosine"] >= 0.97)
    return m


def table(variant, mode, m):
    lines = [f"{variant:>5} {mode:<6} hidden: " + " ".join(
        f"{h['checkpoint']}={h['cosine']:.4f}" for h in m["hidden"]),
        f"{'':>12} logits/pos: " + " ".join(f"{c:.4f}" for c in
                                             m["logits"]["cosine_per_position"]) +
        f"   min={m['summary']['min_logits_cosine']:.4f} "
        f"{'PASS' if m['summary']['passes_0_97'] else 'FAIL'} (gate 0.97)"]
    return "\n".join(lines)


def generate(cfg, root, log=print):
    shard_dir = os.path.join(root, "shards")
    chain_dir = os.path.join(root, "chains")
    os.makedirs(shard_dir, exist_ok=True)
    os.makedirs(chain_dir, exist_ok=True)
    wts = W.model_weights(cfg, SEED)
    cos, sin = W.rope_tables(cfg, cfg.seq)
    mask = W.causal_mask(cfg, cfg.seq)
    ids = np.array([PROMPT], np.int32)
    decoded, built = {}, {}
    for v in VARIANTS:
        decoded[v], built[v] = build_variant(cfg, wts, v, shard_dir, cos, sin, mask, log)
        with open(os.path.join(chain_dir, f"chain_{v}.json"), "w") as f:
            json.dump(chain_manifest(cfg, v), f, indent=2)
            f.write("\n")
    ref = R.chain_forward(decoded["fp16"], cfg, ids, cos, sin, mask, "fp32")
    gold = write_goldens(cfg, os.path.join(root, "goldens"), ref)
    result = {"schema": "shardgate/sample-expected-metrics@1", "model": MODEL,
              "note": ("numpy oracle: fp32 = float32 math on weights decoded from each "
                       "variant's shards; fp16 = the same with every fp16-typed op output "
                       "rounded to fp16. Compared against goldens/ as stored (fp16), in "
                       "float64. hidden cosine = whole [1,8,64] tensor."),
               "prompt_token_ids": PROMPT, "variants": {}}
    for v in VARIANTS:
        result["variants"][v] = {}
        for mode in ("fp32", "fp16"):
            out = R.chain_forward(decoded[v], cfg, ids, cos, sin, mask, mode)
            m = metrics(cfg, out, gold)
            result["variants"][v][mode] = m
            log(table(v, mode, m))
    with open(os.path.join(root, "expected_metrics.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    sizes = {v: sum(npyio.dir_size(s["path"]) for s in built[v].values()) for v in VARIANTS}
    log(f"  shard bytes per variant: {sizes}")
    for v in VARIANTS:
        for n in ("embed", "L0_attn", "L0_moe_p0", "head_p0"):
            log(f"  {n}_{v}: ops {built[v][n]['op_types']}")
    return result


def generate_advised(cfg, root, log=print):
    """The INT8 sample chain re-converted as `golden-validator advise` recommends
    (goldens/sample/advice_int8.json): each listed shard is built again from the same program
    and weights, INT8 as before except the listed weights, which coremltools leaves at fp16.
    Only new files are written: shards/<shard>_int8_advised.mlpackage and
    chains/chain_int8_advised.json (the INT8 chain with those shards swapped in)."""
    with open(os.path.join(root, "advice_int8.json")) as f:
        advice = json.load(f)
    keep = {}
    for k in advice["keep_fp16"]:
        keep.setdefault(k["shard"], []).append(k["weight"])
    shard_dir = os.path.join(root, "shards")
    wts = W.model_weights(cfg, SEED)
    cos, sin = W.rope_tables(cfg, cfg.seq)
    mask = W.causal_mask(cfg, cfg.seq)
    md = {"com.shardgate.seed": SEED, "com.shardgate.model": MODEL}
    programs = {"embed": lambda: SH.embed_program(cfg, wts["embed"])}
    for i in range(cfg.n_layers):
        lw = wts["layers"][i]
        programs[f"L{i}_attn"] = (lambda lw=lw: SH.attention_program(cfg, lw["attn"], cos, sin, mask))
        for k in range(cfg.n_packs):
            programs[f"L{i}_moe_p{k}"] = (lambda lw=lw, k=k: SH.moe_pack_program(cfg, lw["moe"], k))
    for k in range(cfg.head_splits):
        programs[f"head_p{k}"] = (lambda k=k: SH.lm_head_program(cfg, wts["head"], k))
    # The numpy oracle of the advised chain: the INT8 variant's decoded weights (built again in
    # a scratch directory, never over the committed shards) with the re-converted shards'
    # weights swapped in.
    with tempfile.TemporaryDirectory() as scratch:
        dec, _ = build_variant(cfg, wts, "int8", scratch, cos, sin, mask, log)
    sw = R.shard_weights_from_model(wts, cfg)
    for name, weights in sorted(keep.items()):
        path = os.path.join(shard_dir, f"{name}_int8_advised.mlpackage")
        s = build.build_shard(programs[name](), "int8", path,
                              f"{MODEL} {name} (int8, {', '.join(weights)} kept fp16 as advised)",
                              cfg, metadata=md, keep_fp16=weights)
        log(f"  {path}: int8, kept fp16: {', '.join(weights)}")
        m = re.fullmatch(r"L(\d+)_(attn|moe_p(\d+))", name)
        if m and m.group(2) == "attn":
            dec["layers"][int(m.group(1))]["attn"] = build.attention_weights(
                s, wts["layers"][int(m.group(1))]["attn"])
        elif m:
            i, k = int(m.group(1)), int(m.group(3))
            dec["layers"][i]["packs"][k] = build.moe_weights(s, sw["layers"][i]["packs"][k], "moe_out")
        elif name.startswith("head_p"):
            k = int(name[len("head_p"):])
            dec["heads"][k] = build.head_weights(s, sw["heads"][k])
        else:
            dec["embed"] = build.embed_table(s)
    ids = np.array([PROMPT], np.int32)
    gdir = os.path.join(root, "goldens")
    with open(os.path.join(gdir, "manifest.json")) as f:
        gold = {t["name"]: np.load(os.path.join(gdir, t["file"])) for t in json.load(f)["tensors"]}
    result = {"schema": "shardgate/sample-expected-metrics@1", "model": MODEL,
              "note": ("numpy oracle of chain_int8_advised.json, as expected_metrics.json: "
                       "weights decoded from the INT8 shards, the advised ones from their "
                       "re-converted shards"),
              "prompt_token_ids": PROMPT, "variants": {"int8_advised": {}}}
    for mode in ("fp32", "fp16"):
        out = R.chain_forward(dec, cfg, ids, cos, sin, mask, mode)
        mt = metrics(cfg, out, gold)
        result["variants"]["int8_advised"][mode] = mt
        log(table("int8_advised", mode, mt))
    with open(os.path.join(root, "expected_metrics_advised.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    man = chain_manifest(cfg, "int8")
    man["name"] = f"{MODEL}-int8-advised"
    for step in man["steps"]:
        for name in keep:
            if step.get("shard") == f"../shards/{name}_int8.mlpackage":
                step["shard"] = f"../shards/{name}_int8_advised.mlpackage"
    with open(os.path.join(root, "chains", "chain_int8_advised.json"), "w") as f:
        json.dump(man, f, indent=2)
        f.write("\n")
