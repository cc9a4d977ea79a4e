"""numpy forward pass of the three silero-vad corpus models, the oracle of
tests/exec/corpus_run_test.cpp. The graph and the weights come from the .mlpackage through
coremltools (its protobuf loader; constexpr weights materialised by coremltools' own value
inference), and every op is evaluated here with numpy in float64. In "fp16" mode each
fp16-declared op output is rounded to fp16 (what the runtime stores between ops); in "fp32"
mode nothing is rounded. Inputs are seeded and committed beside the expected outputs.

Run: /opt/ctvenv/bin/python gen_silero_oracle.py
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "ops"))
from numpy_ref import conv as conv_ref, conv_pads, lstm_direction  # noqa: E402

import coremltools as ct  # noqa: E402
from coremltools.converters.mil.frontend.milproto.load import load as milproto_load  # noqa: E402
from coremltools.converters.mil.mil import types  # noqa: E402

CORPUS = os.path.join(HERE, "..", "..", "corpus", "silero-vad")
MODELS = ["silero-vad-unified-v6.0.0", "unified_int8", "unified_palette_4bit"]


def load_function(name):
    m = ct.models.MLModel(os.path.join(CORPUS, name + ".mlpackage"), skip_model_load=True)
    spec = m.get_spec()
    prog = milproto_load(spec, specification_version=spec.specificationVersion, file_weights_dir=m.weights_dir)
    return prog.functions["main"]


def py_slices(shape, begin, end, stride, begin_mask, end_mask, squeeze_mask):
    rank = len(shape)
    stride = list(stride) if stride is not None else [1] * rank
    sl = []
    for i in range(rank):
        b = None if begin_mask is not None and begin_mask[i] else int(begin[i])
        e = None if end_mask is not None and end_mask[i] else int(end[i])
        st = int(stride[i])
        if squeeze_mask is not None and squeeze_mask[i]:
            e, st = None, np.iinfo(np.int32).max
        sl.append(slice(b, e, st))
    return tuple(sl)


def run(function, inputs, mode):
    env = {}
    for name, arr in inputs.items():
        env[name] = np.asarray(arr, np.float64)

    def val(op, key, default=None):
        v = op.inputs.get(key)
        if v is None:
            return default
        if v.val is not None and v.name not in env:
            return np.asarray(v.val)
        return env[v.name]

    for op in function.operations:
        t = op.op_type
        if t == "const":
            env[op.outputs[0].name] = np.asarray(op.outputs[0].val)
            continue
        if t.startswith("constexpr_"):
            env[op.outputs[0].name] = np.asarray(op.materialized_val_inference()).astype(np.float64)
            continue
        x = val(op, "x")
        if t == "cast":
            out = x.astype(np.float64)
        elif t == "pad":
            pad = [int(p) for p in val(op, "pad")]
            n = len(pad) // 2
            widths = [(0, 0)] * (x.ndim - n) + [(pad[2 * i], pad[2 * i + 1]) for i in range(n)]
            mode_s = str(val(op, "mode", "constant"))
            if mode_s == "constant":
                out = np.pad(x, widths, mode="constant", constant_values=float(val(op, "constant_val", 0.0)))
            else:
                out = np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge"}[mode_s])
        elif t == "expand_dims":
            out = x
            for a in sorted(int(a) % (x.ndim + len(val(op, "axes"))) for a in val(op, "axes")):
                out = np.expand_dims(out, a)
        elif t == "squeeze":
            out = np.squeeze(x, axis=tuple(int(a) for a in val(op, "axes")))
        elif t == "transpose":
            out = np.transpose(x, [int(p) for p in val(op, "perm")])
        elif t == "slice_by_index":
            sl = py_slices(x.shape, val(op, "begin"), val(op, "end"), val(op, "stride"), val(op, "begin_mask"),
                           val(op, "end_mask"), val(op, "squeeze_mask"))
            out = x[sl]
            sq = val(op, "squeeze_mask")
            if sq is not None and any(sq):
                out = np.squeeze(out, axis=tuple(i for i, s in enumerate(sq) if s))
        elif t == "pow":
            out = np.power(x, val(op, "y"))
        elif t == "add":
            out = x + val(op, "y")
        elif t == "sqrt":
            out = np.sqrt(x)
        elif t == "relu":
            out = np.maximum(x, 0)
        elif t == "sigmoid":
            out = 1 / (1 + np.exp(-x))
        elif t == "clip":
            out = np.minimum(np.maximum(x, float(val(op, "alpha"))), float(val(op, "beta")))
        elif t == "conv":
            w = val(op, "weight").astype(np.float64)
            b = val(op, "bias")
            S = x.ndim - 2
            strides = [int(s) for s in val(op, "strides", [1] * S)]
            dil = [int(d) for d in val(op, "dilations", [1] * S)]
            pads = conv_pads(str(val(op, "pad_type", "valid")), x.shape[2:], w.shape[2:], strides, dil,
                             [int(p) for p in val(op, "pad", [0] * (2 * S))])
            out = conv_ref(x, w, None if b is None else b.astype(np.float64), strides, dil, pads,
                           int(val(op, "groups", 1)))
        elif t == "lstm":
            assert str(val(op, "direction", "forward")) == "forward"
            H = val(op, "weight_hh").shape[1]
            b = val(op, "bias")
            seq, h, c = lstm_direction(
                x, val(op, "initial_h"), val(op, "initial_c"), val(op, "weight_ih").astype(np.float64),
                val(op, "weight_hh").astype(np.float64), np.zeros(4 * H) if b is None else b.astype(np.float64),
                np.zeros(3 * H), False, str(val(op, "recurrent_activation", "sigmoid")),
                str(val(op, "cell_activation", "tanh")), str(val(op, "activation", "tanh")), None)
            if not bool(val(op, "output_sequence", False)):
                seq = h[None]
            outs = [seq, h, c]
            for o, a in zip(op.outputs, outs):
                env[o.name] = a  # lstm outputs are fp32 in this graph
            continue
        else:
            raise NotImplementedError(t)
        if mode == "fp16" and op.outputs[0].dtype == types.fp16:
            out = np.asarray(out).astype(np.float16).astype(np.float64)
        env[op.outputs[0].name] = np.asarray(out, np.float64)
    return {name: env[name] for name in function.outputs_names} if hasattr(function, "outputs_names") \
        else {v.name: env[v.name] for v in function.outputs}


def main():
    rng = np.random.default_rng(20240601)
    t = np.arange(576) / 16000.0
    audio = (0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(576)).astype(np.float32)[None]
    hidden = (0.5 * rng.standard_normal((1, 128))).astype(np.float32)
    cell = (0.5 * rng.standard_normal((1, 128))).astype(np.float32)
    inputs = {"audio_input": audio, "hidden_state": hidden, "cell_state": cell}
    for k, v in inputs.items():
        np.save(os.path.join(HERE, f"input_{k}.npy"), v)
    for model in MODELS:
        fn = load_function(model)
        for mode in ("fp16", "fp32"):
            outs = run(fn, inputs, mode)
            for name, arr in outs.items():
                np.save(os.path.join(HERE, f"expected_{model}_{mode}_{name}.npy"), arr.astype(np.float32))
            print(model, mode, {k: float(np.ravel(v)[0]) for k, v in outs.items()})


if __name__ == "__main__":
    main()
