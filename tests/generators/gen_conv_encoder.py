#!/usr/bin/env python3
"""The conv-heavy fixture of issue 11 ("Done means"): a 1-D conv encoder over 1024 frames, like
the 256 ms-window audio encoders of the corpus, in fp16, int8 per tensor and int8 per channel.

  /opt/ctvenv/bin/python tests/generators/gen_conv_encoder.py [OUTDIR]

OUTDIR defaults to tests/data/fixtures/conv_encoder/. Writes {fp16,int8,int8pc}.mlpackage and
cases/: input_x.npy, per variant expected_<variant>_fp32.npy (numpy fp32 math on the numpy-
decoded weights) and expected_<variant>_fp16ops.npy (the same with every op output rounded to
fp16, what the interpreter stores in fp16 mode), and cases.json. The int8 weights are decoded by
our own numpy code (sgfix/compress.py) from the int8 data and scales coremltools wrote, never by
coremltools or by the interpreter. Reproducible: fixed seeds, stable package manifests.
"""
import json
import os
import sys

os.environ.setdefault("TQDM_DISABLE", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import coremltools as ct  # noqa: E402
import coremltools.optimize.coreml as cto  # noqa: E402
from coremltools.converters.mil import Builder as mb  # noqa: E402

from sgfix import compress, npyio, package  # noqa: E402

SEED = 2011
INPUT_SEED = 2012
FRAMES = 1024
# (C_in, C_out, kernel): 64 -> 128 channels, then two 128-channel layers, back to 64.
LAYERS = [(64, 128, 5), (128, 128, 3), (128, 128, 3), (128, 64, 3)]
VARIANTS = ("fp16", "int8", "int8pc")


def make_weights():
    rng = np.random.default_rng(SEED)
    ws = []
    for cin, cout, k in LAYERS:
        w = rng.standard_normal((cout, cin, k)) * np.sqrt(2.0 / (cin * k))
        b = 0.1 * rng.standard_normal(cout)
        ws.append((w.astype(np.float16), b.astype(np.float16)))
    return ws


def make_program(ws):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, LAYERS[0][0], FRAMES), dtype=ct.converters.mil.mil.types.fp16)],
                opset_version=ct.target.iOS18)
    def prog(x):
        h = x
        for i, (w, b) in enumerate(ws):
            h = mb.conv(x=h, weight=w, bias=b, pad_type="same", name=f"conv{i}")
            if i + 1 < len(ws):
                h = mb.relu(x=h, name=f"relu{i}")
        return mb.identity(x=h, name="y")
    return prog


def compress_variant(model, variant):
    if variant == "fp16":
        return model
    gran = "per_tensor" if variant == "int8" else "per_channel"
    cfg = cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", granularity=gran,
                                      weight_threshold=1024)
    return cto.linear_quantize_weights(model, cto.OptimizationConfig(op_type_configs={"conv": cfg}))


def conv_weights(model):
    """[(decoded fp16 weight, bias, producer op type, scale shape)] per conv, in program order;
    int8 weights decoded by numpy from the raw arrays."""
    out = []
    for op in model._mil_program.functions["main"].operations:
        if op.op_type != "conv":
            continue
        d = compress.describe_weight(op.weight.op)
        scale = d["raw"].get("scale")
        out.append((d["decoded"], np.asarray(op.bias.val), d["op_type"],
                    None if scale is None else list(scale[1].shape)))
    return out


def conv1d_same(x, w, b):
    """x [C_in, T], w [C_out, C_in, K] (odd K), 'same' padding, fp32 math."""
    cout, cin, k = w.shape
    t = x.shape[1]
    pad = (k - 1) // 2
    xp = np.pad(x, ((0, 0), (pad, k - 1 - pad)))
    cols = np.stack([xp[:, j:j + t] for j in range(k)], axis=1)  # [C_in, K, T]
    return (np.einsum("oik,ikt->ot", w.astype(np.float32), cols.astype(np.float32),
                      dtype=np.float64) + b.astype(np.float64)[:, None]).astype(np.float32)


def forward(x, convs, fp16ops):
    r = (lambda a: a.astype(np.float16).astype(np.float32)) if fp16ops else (lambda a: a)
    h = x[0].astype(np.float32)
    for i, (w, b, _, _) in enumerate(convs):
        h = r(conv1d_same(h, w, b))
        if i + 1 < len(convs):
            h = r(np.maximum(h, 0))
    return h[None]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "tests/data/fixtures/conv_encoder")
    os.makedirs(os.path.join(out, "cases"), exist_ok=True)
    ws = make_weights()
    base = ct.convert(make_program(ws), minimum_deployment_target=ct.target.iOS18,
                      compute_precision=ct.precision.FLOAT16, skip_model_load=True)
    x = np.random.default_rng(INPUT_SEED).standard_normal((1, LAYERS[0][0], FRAMES)).astype(np.float16)
    npyio.save(os.path.join(out, "cases", "input_x.npy"), x)
    cases = {"generator": "tests/generators/gen_conv_encoder.py", "frames": FRAMES,
             "layers": [list(l) for l in LAYERS], "input": "input_x.npy", "variants": []}
    for variant in VARIANTS:
        model = compress_variant(base, variant)
        path = os.path.join(out, f"{variant}.mlpackage")
        package.save(model, path, f"1-D conv encoder over {FRAMES} frames ({variant})",
                     {"com.shardgate.variant": variant})
        convs = conv_weights(model)
        entry = {"name": variant, "shard": f"../{variant}.mlpackage", "output": "y",
                 "weights": [{"producer": c[2], "scale_shape": c[3]} for c in convs]}
        for mode in ("fp32", "fp16ops"):
            y = forward(x, convs, mode == "fp16ops")
            f = f"expected_{variant}_{mode}.npy"
            npyio.save(os.path.join(out, "cases", f),
                       y.astype(np.float16 if mode == "fp16ops" else np.float32))
            entry[mode] = f
        entry["package_bytes"] = npyio.dir_size(path)
        cases["variants"].append(entry)
        print(variant, entry["weights"], entry["package_bytes"], "bytes")
    with open(os.path.join(out, "cases", "cases.json"), "w") as f:
        json.dump(cases, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
