"""Worked example: convert a small language model to Core ML one layer per shard, quantize the
shards, write FP16 goldens from the reference model, build the chain manifest, and run the
fidelity gate and the residency listing, all from Python.

    python validators/python/examples/convert_and_gate.py OUT_DIR

Needs `pip install .` (shardgate) and coremltools 9.0 in the same environment. The reference
model is plain numpy (float32) and the shards are built with coremltools' MIL builder: a CPU
PyTorch wheel is not on PyPI for Linux (torch from PyPI pulls its CUDA build, gigabytes), so
this example does not use torch. With a torch model the steps are the same: trace each layer
with torch.jit.trace and ct.convert it, and hand the torch tensors of the reference forward
pass to GoldenDumpWriter as they are (it detaches and converts them).

Model: vocabulary 96, width 32, 3 pre-norm MLP blocks with residual adds, tied-free LM head;
6 prompt tokens. Shards: embed, L0..L2, head; variants fp16 and 4-bit LUT (per grouped
channel, group 16, uniform LUT).
"""

import json
import sys
from pathlib import Path

import coremltools as ct
import coremltools.optimize.coreml as cto
import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

import shardgate

V, D, H, LAYERS, T = 96, 32, 128, 3, 6
EPS = 1e-5


def weights(seed=0):
    rng = np.random.default_rng(seed)
    w = {"embed": rng.standard_normal((V, D)).astype(np.float32) * 0.5,
         "head": rng.standard_normal((V, D)).astype(np.float32) / np.sqrt(D)}
    for n in range(LAYERS):
        w[f"g{n}"] = (1 + 0.1 * rng.standard_normal(D)).astype(np.float32)
        w[f"up{n}"] = rng.standard_normal((H, D)).astype(np.float32) / np.sqrt(D)
        w[f"down{n}"] = rng.standard_normal((D, H)).astype(np.float32) / np.sqrt(H)
    return w


# The reference model (float32 numpy): what the goldens hold.
def reference(w, ids):
    silu = lambda x: x / (1 + np.exp(-x))
    h = w["embed"][ids]  # [1, T, D]
    states = {"embed": h}
    for n in range(LAYERS):
        norm = h / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + EPS) * w[f"g{n}"]
        h = h + silu(norm @ w[f"up{n}"].T) @ w[f"down{n}"].T
        states[f"hidden.{n}"] = h
    states["logits"] = h @ w["head"].T
    return states


# One Core ML program per shard (MIL builder), fp16 compute.
def embed_program(w):
    @mb.program(input_specs=[mb.TensorSpec((1, T), dtype=types.int32)],
                opset_version=ct.target.iOS18)
    def prog(input_ids):
        return mb.gather(x=w["embed"], indices=input_ids, axis=0, name="hidden")
    return prog


def layer_program(w, n):
    @mb.program(input_specs=[mb.TensorSpec((1, T, D), dtype=types.fp32)],
                opset_version=ct.target.iOS18)
    def prog(hidden):
        sq = mb.mul(x=hidden, y=hidden)
        ms = mb.reduce_mean(x=sq, axes=[-1], keep_dims=True)
        inv = mb.rsqrt(x=mb.add(x=ms, y=np.float32(EPS)))
        norm = mb.mul(x=mb.mul(x=hidden, y=inv), y=w[f"g{n}"])
        up = mb.linear(x=norm, weight=w[f"up{n}"])
        down = mb.linear(x=mb.silu(x=up), weight=w[f"down{n}"])
        return mb.add(x=hidden, y=down, name="hidden_out")
    return prog


def head_program(w):
    @mb.program(input_specs=[mb.TensorSpec((1, T, D), dtype=types.fp32)],
                opset_version=ct.target.iOS18)
    def prog(hidden):
        return mb.linear(x=hidden, weight=w["head"], name="logits")
    return prog


def convert(prog, variant):
    model = ct.convert(prog, minimum_deployment_target=ct.target.iOS18,
                       compute_precision=ct.precision.FLOAT16, skip_model_load=True)
    if variant == "lut4":
        cfg = cto.OpPalettizerConfig(mode="uniform", nbits=4, granularity="per_grouped_channel",
                                     group_size=16, weight_threshold=256)
        model = cto.palettize_weights(model, cto.OptimizationConfig(
            op_type_configs={"linear": cfg, "gather": cfg}))
    return model


def main(out):
    out = Path(out)
    w = weights()
    ids = np.array([[3, 17, 42, 5, 77, 9]], dtype=np.int32)

    # 1. Shards, one per layer, in two variants.
    programs = {"embed": embed_program(w), "head": head_program(w)}
    programs.update({f"L{n}": layer_program(w, n) for n in range(LAYERS)})
    for variant in ("fp16", "lut4"):
        for name, prog in programs.items():
            convert(prog, variant).save(str(out / "shards" / f"{name}_{variant}.mlpackage"))

    # 2. Goldens from the reference model: per layer, positions on axis 1.
    ref = reference(w, ids)
    with shardgate.GoldenDumpWriter(out / "goldens", model="example-mlp", dtype="fp16",
                                    prompt_token_ids=ids) as dump:
        dump.add_input_ids(ids)
        dump.add_embed(ref["embed"])
        for n in range(LAYERS):
            dump.add_hidden(n, ref[f"hidden.{n}"])
        dump.add_logits(ref["logits"])

    # 3. One chain manifest per variant.
    for variant in ("fp16", "lut4"):
        chain = shardgate.ChainBuilder(f"example-mlp-{variant}", goldens=out / "goldens")
        chain.input("input_ids", golden="input_ids")
        chain.shard("embed", out / "shards" / f"embed_{variant}.mlpackage",
                    {"input_ids": "input_ids"}, {"hidden": "embed"}, layer=-1)
        previous = "embed"
        for n in range(LAYERS):
            chain.shard(f"L{n}", out / "shards" / f"L{n}_{variant}.mlpackage",
                        {"hidden": previous}, {"hidden_out": f"hidden.{n}"}, layer=n,
                        residual_input="hidden")
            chain.checkpoint(f"hidden.{n}", kind="hidden", layer=n)
            previous = f"hidden.{n}"
        chain.shard("head", out / "shards" / f"head_{variant}.mlpackage", {"hidden": previous},
                    {"logits": "logits"})
        chain.checkpoint("logits", kind="logits")
        chain.write(out / "chains" / f"chain_{variant}.json")

    # 4. Residency of one quantized shard, then the fidelity gate of each chain.
    shard = shardgate.Shard(str(out / "shards" / "L0_lut4.mlpackage"))
    s = shard.residency()
    print(f"L0_lut4: {s['compute_ops']} compute ops, {s['on_ane']} on ANE "
          f"({s['residency_pct']:.1f} %), {s['compile_time_ops']} compile-time")
    for op in shard.placement():
        if op["op_class"] == "compute":
            print(f"  {op['type']:<12} {op['placement']:<9} {op['rule_id']}")
    verdicts = {}
    for variant in ("fp16", "lut4"):
        report = shardgate.gate_chain(out / "chains" / f"chain_{variant}.json")
        verdicts[variant] = report.verdict
        print(f"chain_{variant}: {report.verdict}")
        for check in report.checks:
            cos = [r["values"]["cosine"] for r in check["rows"] if "cosine" in r["values"]]
            print(f"  {check['id']:<10} {check['verdict']:<5} min cosine {min(cos):.4f}")
        (out / f"report_{variant}.json").write_text(json.dumps(report.data, indent=1))
        assert shardgate.read_report(out / f"report_{variant}.json").verdict == report.verdict
    return 0 if verdicts["fp16"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "example-out"))
