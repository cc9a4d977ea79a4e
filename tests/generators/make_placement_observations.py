#!/usr/bin/env python3
"""Reproduces the public placement observations of the evaluation set as small Core ML models.

  /opt/ctvenv/bin/python tests/generators/make_placement_observations.py

Writes tests/data/placement/observations/: one .mlpackage per reproduced case (coremltools MIL
builder, converted on Linux; nothing compiled) and observations.json with, per entry, the
placement observed on a Mac as the expected value (op rows by op type, a model verdict), the
source, and why an entry is not reproduced. tests/placement/observations_test.cpp scores the
predictor against it. Tiny dimensions except where the observation depends on a size; weights
are seeded random fp16 (seed 7) and stay small (the largest file is the vocabulary-wide head).
"""
import json
import os
import shutil
import sys

os.environ.setdefault("TQDM_DISABLE", "1")

import numpy as np  # noqa: E402
import coremltools as ct  # noqa: E402
from coremltools.converters.mil import Builder as mb  # noqa: E402
from coremltools.converters.mil.mil import types, get_new_symbol  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from sgfix import package  # noqa: E402

OUT = os.path.join(REPO, "tests/data/placement/observations")
RNG = np.random.default_rng(7)
F16, F32, I32 = types.fp16, types.fp32, types.int32


def w16(*shape, zeros=False):
    if zeros:
        return np.zeros(shape, dtype=np.float16)
    return (RNG.standard_normal(shape) * 0.05).astype(np.float16)


def w32(*shape):
    return (RNG.standard_normal(shape) * 0.05).astype(np.float32)


def convert(prog, name, precision=ct.precision.FLOAT16, target=ct.target.iOS18, inputs=None,
            states=None, compress=None):
    kw = {}
    if inputs:
        kw["inputs"] = inputs
    m = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=target,
                   compute_precision=precision, **kw)
    if compress:
        m = compress(m)
    path = os.path.join(OUT, name + ".mlpackage")
    package.GENERATOR = "shardgate tests/generators/make_placement_observations.py"
    package.save(m, path, f"placement observation reproduction {name}")
    return name + ".mlpackage"


def spec(shape, dtype=F16):
    return mb.TensorSpec(shape, dtype=dtype)


# --- the models ---------------------------------------------------------------------------

def attention_block(x, d, heads, seq, conv=True):
    """ANE-style (B, C, 1, S) attention + FFN block on x [1, d, 1, seq] (ml-ane-transformers)."""
    hd = d // heads
    def proj(t, i, o):
        return mb.conv(x=t, weight=w16(o, i, 1, 1))
    q, k, v = proj(x, d, d), proj(x, d, d), proj(x, d, d)
    qh = mb.reshape(x=q, shape=[1, heads, hd, seq])
    kh = mb.reshape(x=k, shape=[1, heads, hd, seq])
    vh = mb.reshape(x=v, shape=[1, heads, hd, seq])
    s = mb.matmul(x=qh, y=kh, transpose_x=True)
    p = mb.softmax(x=s, axis=-1)
    o = mb.matmul(x=vh, y=p, transpose_y=True)
    o = mb.reshape(x=o, shape=[1, d, 1, seq])
    h = mb.add(x=x, y=proj(o, d, d))
    h = mb.layer_norm(x=h, axes=[1], epsilon=np.float16(1e-5))
    f = mb.gelu(x=proj(h, d, 4 * d))
    return mb.add(x=h, y=proj(f, 4 * d, d))


def e02_distilbert():
    seq, d = 128, 64
    @mb.program(input_specs=[spec((1, seq), I32)], opset_version=ct.target.iOS18)
    def prog(ids):
        e = mb.gather(x=w16(512, d), indices=ids, axis=0)             # word embedding
        pe = mb.gather(x=w16(seq, d), indices=np.arange(seq, dtype=np.int32)[None, :], axis=0)
        e = mb.add(x=e, y=pe)
        e = mb.layer_norm(x=e, axes=[-1], epsilon=np.float16(1e-5))
        x = mb.expand_dims(x=mb.transpose(x=e, perm=[0, 2, 1]), axes=[2])  # [1, d, 1, seq]
        return attention_block(x, d, 4, seq)
    return convert(prog, "e02_distilbert_ane")


def gpt2_like(name, vocab=512, d=64, seq=64):
    @mb.program(input_specs=[spec((1, seq), I32)], opset_version=ct.target.iOS18)
    def prog(ids):
        e = mb.gather(x=w16(vocab, d), indices=ids, axis=0)
        x = mb.expand_dims(x=mb.transpose(x=e, perm=[0, 2, 1]), axes=[2])
        mask = np.triu(np.full((seq, seq), -3e4, dtype=np.float16), 1)
        h = mb.layer_norm(x=x, axes=[1], epsilon=np.float16(1e-5))
        q = mb.conv(x=h, weight=w16(d, d, 1, 1))
        k = mb.conv(x=h, weight=w16(d, d, 1, 1))
        s = mb.matmul(x=mb.reshape(x=q, shape=[1, 1, d, seq]), y=mb.reshape(x=k, shape=[1, 1, d, seq]),
                      transpose_x=True)
        p = mb.softmax(x=mb.add(x=s, y=mask[None, None]), axis=-1)
        v = mb.conv(x=h, weight=w16(d, d, 1, 1))
        o = mb.matmul(x=mb.reshape(x=v, shape=[1, 1, d, seq]), y=p, transpose_y=True)
        x = mb.add(x=x, y=mb.conv(x=mb.reshape(x=o, shape=[1, d, 1, seq]), weight=w16(d, d, 1, 1)))
        f = mb.gelu(x=mb.conv(x=mb.layer_norm(x=x, axes=[1], epsilon=np.float16(1e-5)),
                              weight=w16(4 * d, d, 1, 1)))
        return mb.add(x=x, y=mb.conv(x=f, weight=w16(d, 4 * d, 1, 1)))
    return convert(prog, name)


def e06_mask(dtype):
    seq = 64
    @mb.program(input_specs=[spec((1, 1, seq, seq)), spec((1, 1, seq, seq), dtype)],
                opset_version=ct.target.iOS18)
    def prog(scores, mask):
        if dtype == F32:
            s32 = mb.cast(x=scores, dtype="fp32")
            m = mb.add(x=s32, y=mask, name="masked")
            m = mb.cast(x=m, dtype="fp16")
        else:
            m = mb.add(x=scores, y=mask, name="masked")
        return mb.softmax(x=m, axis=-1)
    return convert(prog, "e06_mask_" + ("fp32" if dtype == F32 else "fp16"),
                   precision=ct.precision.FLOAT32 if dtype == F32 else ct.precision.FLOAT16)


def lm_head(name, vocab, d=1, seq=8):
    @mb.program(input_specs=[spec((1, seq, d))], opset_version=ct.target.iOS18)
    def prog(h):
        return mb.linear(x=h, weight=w16(vocab, d, zeros=True), name="lm_head")
    return convert(prog, name)


def e08_band_part():
    seq = 32
    @mb.program(input_specs=[spec((1, 1, seq, seq))], opset_version=ct.target.iOS18)
    def prog(s):
        tri = mb.band_part(x=s, lower=-1, upper=0)  # causal part of runtime scores
        return mb.softmax(x=tri, axis=-1)
    return convert(prog, "e08_band_part")


def e09_cond():
    @mb.program(input_specs=[spec((1, 64)), spec((1,), F32)], opset_version=ct.target.iOS18)
    def prog(x, flag):
        pred = mb.squeeze(x=mb.greater(x=flag, y=np.float32(0.0)))
        def then_fn():
            return mb.mul(x=x, y=np.float16(2.0))
        def else_fn():
            return mb.relu(x=x)
        return mb.cond(pred=pred, _true_fn=then_fn, _false_fn=else_fn)
    return convert(prog, "e09_cond")


def e10_dynamic():
    @mb.program(input_specs=[spec((1, 64, 16)), spec((1,), I32), spec((4,), I32)],
                opset_version=ct.target.iOS18)
    def prog(x, start, idx):
        begin = mb.concat(values=[np.array([0, 0], np.int32), start], axis=0)
        end = mb.add(x=begin, y=np.array([1, 64, 4], np.int32))
        a = mb.slice_by_index(x=x, begin=begin, end=end, name="dyn_slice_by_index")
        b = mb.slice_by_size(x=x, begin=begin, size=[1, 64, 4], name="dyn_slice_by_size")
        c = mb.gather(x=x, indices=idx, axis=2, name="index_select")
        return mb.add(x=mb.add(x=a, y=b), y=c)
    return convert(prog, "e10_dynamic_slice")


def e20_range_dim():
    s = get_new_symbol()
    @mb.program(input_specs=[spec((1, s, 64))], opset_version=ct.target.iOS18)
    def prog(x):
        h = mb.linear(x=x, weight=w16(64, 64))
        return mb.add(x=x, y=mb.relu(x=h))
    return convert(prog, "e20_range_dim", inputs=[
        ct.TensorType(name="x", shape=ct.Shape((1, ct.RangeDim(1, 512), 64)), dtype=np.float16)])


def e24_lstm_fc_cnn():
    @mb.program(input_specs=[spec((8, 1, 16)), spec((1, 8, 16, 16))], opset_version=ct.target.iOS18)
    def prog(seq, img):
        h, _, _ = mb.lstm(x=seq, initial_h=w16(1, 16, zeros=True), initial_c=w16(1, 16, zeros=True),
                          weight_ih=w16(4 * 16, 16), weight_hh=w16(4 * 16, 16), output_sequence=False)
        fc = mb.linear(x=mb.reshape(x=h, shape=[1, 16]), weight=w16(16, 16), name="fc")
        c = mb.relu(x=mb.conv(x=img, weight=w16(8, 8, 3, 3), pad_type="same"))
        return fc, c
    return convert(prog, "e24_lstm_fc_cnn")


def stateful_attention(name, seq, ctx, heads, hd):
    @mb.program(input_specs=[spec((1, heads, seq, hd)), spec((1, heads, seq, hd)),
                             mb.StateTensorSpec((1, heads, ctx, hd), dtype=F16)],
        opset_version=ct.target.iOS18)
    def prog(q, knew, cache):
        cur = mb.read_state(input=cache)
        upd = mb.slice_update(x=cur, update=knew, begin=[0, 0, 0, 0], end=[1, heads, seq, hd])
        mb.coreml_update_state(state=cache, value=upd)
        k = mb.read_state(input=cache)
        s = mb.matmul(x=q, y=k, transpose_y=True)
        p = mb.softmax(x=s, axis=-1)
        return mb.matmul(x=p, y=k)
    return convert(prog, name, states=[ct.StateType(wrapped_type=ct.TensorType(
        shape=(1, heads, ctx, hd), dtype=np.float16), name="cache")])


def e27_state_conv(width):
    @mb.program(input_specs=[spec((1, 8, 1, width)), mb.StateTensorSpec((1, 8, 1, width), dtype=F16)],
                opset_version=ct.target.iOS18)
    def prog(x, h):
        prev = mb.read_state(input=h)
        nxt = mb.tanh(x=mb.add(x=mb.conv(x=x, weight=w16(8, 8, 1, 1)),
                                y=mb.conv(x=prev, weight=w16(8, 8, 1, 1))))
        mb.coreml_update_state(state=h, value=nxt)
        return nxt
    return convert(prog, f"e27_state_width{width}", states=[ct.StateType(
        wrapped_type=ct.TensorType(shape=(1, 8, 1, width), dtype=np.float16), name="h")])


def e35_fp32_input():
    @mb.program(input_specs=[spec((1, 3, 32, 32), F32)], opset_version=ct.target.iOS18)
    def prog(img):
        x = mb.add(x=mb.mul(x=img, y=np.float32(1 / 127.5)), y=np.float32(-1.0), name="normalize")
        x = mb.cast(x=x, dtype="fp16", name="to_fp16")
        x = mb.relu(x=mb.conv(x=x, weight=w16(16, 3, 3, 3), pad_type="same"))
        y = mb.relu(x=mb.conv(x=x, weight=w16(16, 16, 1, 1)))
        return mb.add(x=x, y=y)
    return convert(prog, "e35_fp32_input", precision=ct.precision.FLOAT32)


def encoder(name, precision, compress=None):
    dt = F32 if precision == ct.precision.FLOAT32 else F16
    wf = w32 if dt == F32 else w16
    @mb.program(input_specs=[spec((1, 3, 32, 32), dt)], opset_version=ct.target.iOS18)
    def prog(img):
        x = mb.conv(x=img, weight=wf(64, 3, 4, 4), strides=[4, 4])       # patchify
        x = mb.reshape(x=x, shape=[1, 64, 1, 64])
        h = mb.layer_norm(x=x, axes=[1], epsilon=1e-5 if dt == F32 else np.float16(1e-5))
        h = mb.gelu(x=mb.conv(x=h, weight=wf(128, 64, 1, 1)))
        return mb.add(x=x, y=mb.conv(x=h, weight=wf(64, 128, 1, 1)))
    return convert(prog, name, precision=precision, compress=compress)


def int8_per_tensor(m):
    from coremltools.optimize.coreml import OpLinearQuantizerConfig, OptimizationConfig, linear_quantize_weights
    cfg = OptimizationConfig(global_config=OpLinearQuantizerConfig(
        mode="linear_symmetric", dtype="int8", granularity="per_tensor", weight_threshold=0))
    return linear_quantize_weights(m, cfg)


def int8_per_channel(m):
    from coremltools.optimize.coreml import OpLinearQuantizerConfig, OptimizationConfig, linear_quantize_weights
    cfg = OptimizationConfig(global_config=OpLinearQuantizerConfig(
        mode="linear_symmetric", dtype="int8", granularity="per_channel", weight_threshold=0))
    return linear_quantize_weights(m, cfg)


def int4_per_block(m):
    from coremltools.optimize.coreml import OpLinearQuantizerConfig, OptimizationConfig, linear_quantize_weights
    cfg = OptimizationConfig(global_config=OpLinearQuantizerConfig(
        mode="linear_symmetric", dtype="int4", granularity="per_block", block_size=32,
        weight_threshold=0))
    return linear_quantize_weights(m, cfg)


def lut4(m):
    from coremltools.optimize.coreml import OpPalettizerConfig, OptimizationConfig, palettize_weights
    cfg = OptimizationConfig(global_config=OpPalettizerConfig(
        nbits=4, granularity="per_grouped_channel", group_size=16, weight_threshold=0))
    return palettize_weights(m, cfg)


def qwen_shard(name, compress, layers=2, d=64):
    @mb.program(input_specs=[spec((1, d, 1, 8))], opset_version=ct.target.iOS18)
    def prog(x):
        for _ in range(layers):
            g = mb.conv(x=x, weight=w16(2 * d, d, 1, 1))
            u = mb.conv(x=x, weight=w16(2 * d, d, 1, 1))
            h = mb.mul(x=mb.mul(x=g, y=mb.sigmoid(x=g)), y=u)
            x = mb.add(x=x, y=mb.conv(x=h, weight=w16(d, 2 * d, 1, 1)))
            x = mb.add(x=x, y=mb.conv(x=x, weight=w16(d, d, 1, 1)))
        return x
    return convert(prog, name, compress=compress)


def e42_stateful_lut4():
    d, ctx = 64, 32
    @mb.program(input_specs=[spec((1, d, 1, 1)), mb.StateTensorSpec((1, d, 1, ctx), dtype=F16)],
                opset_version=ct.target.iOS18)
    def prog(x, kv):
        k = mb.conv(x=x, weight=w16(d, d, 1, 1))
        cache = mb.read_state(input=kv)
        upd = mb.slice_update(x=cache, update=k, begin=[0, 0, 0, 0], end=[1, d, 1, 1])
        mb.coreml_update_state(state=kv, value=upd)
        a = mb.reduce_mean(x=mb.read_state(input=kv), axes=[3], keep_dims=True)
        return mb.conv(x=mb.add(x=a, y=x), weight=w16(d, d, 1, 1))
    return convert(prog, "e42_stateful_lut4", compress=lut4, states=[ct.StateType(
        wrapped_type=ct.TensorType(shape=(1, d, 1, ctx), dtype=np.float16), name="kv")])


def e49_matmul(n, precision):
    dt = F32 if precision == ct.precision.FLOAT32 else F16
    @mb.program(input_specs=[spec((n, n), F32), spec((n, n), F32)], opset_version=ct.target.iOS18)
    def prog(a, b):
        return mb.matmul(x=a, y=b, name="mm")
    tag = "fp32" if dt == F32 else "fp16"
    return convert(prog, f"e49_matmul{n}_{tag}", precision=precision)


def e50_sdpa(shape, precision):
    dt = F32 if precision == ct.precision.FLOAT32 else F16
    @mb.program(input_specs=[spec(shape, dt), spec(shape, dt), spec(shape, dt)], opset_version=ct.target.iOS18)
    def prog(q, k, v):
        return mb.scaled_dot_product_attention(query=q, key=k, value=v)
    tag = ("fp32" if dt == F32 else "fp16") + "_" + "x".join(str(s) for s in shape)
    return convert(prog, f"e50_sdpa_{tag}", precision=precision)


def mlp(name, layers, kind="linear", d=64, compress=None):
    @mb.program(input_specs=[spec((1, d))], opset_version=ct.target.iOS18)
    def prog(x):
        for _ in range(layers):
            if kind == "linear":
                x = mb.relu(x=mb.linear(x=x, weight=w16(d, d)))
            else:
                x = mb.relu(x=mb.matmul(x=x, y=w16(d, d)))
        return x
    return convert(prog, name, compress=compress)


def e52_projection(k, n=8):
    @mb.program(input_specs=[spec((1, k))], opset_version=ct.target.iOS18)
    def prog(x):
        return mb.linear(x=x, weight=w16(n, k), name="proj")
    return convert(prog, f"e52_projection_k{k}")


def e55_logsumexp(topology):
    @mb.program(input_specs=[spec((1, 16, 8, 8))], opset_version=ct.target.iOS18)
    def prog(x):
        if topology == "conv_linear":
            x = mb.conv(x=x, weight=w16(16, 16, 3, 3), pad_type="same")
            x = mb.transpose(x=x, perm=[0, 2, 3, 1])
            x = mb.linear(x=x, weight=w16(16, 16))
            x = mb.transpose(x=x, perm=[0, 3, 1, 2])
        return mb.reduce_log_sum_exp(x=x, axes=[1], keep_dims=True)
    return convert(prog, f"e55_logsumexp_{topology}")


def e56_mobilenet_nn():
    @mb.program(input_specs=[spec((1, 16, 28, 28))], opset_version=ct.target.iOS18)
    def prog(x):
        pooled = mb.avg_pool(x=x, kernel_sizes=[28, 28], strides=[1, 1], pad_type="valid",
                             name="global_pool")
        gate = mb.sigmoid(x=mb.conv(x=pooled, weight=w16(16, 16, 1, 1)))
        se = mb.mul(x=x, y=gate, name="channel_scale")
        p4 = mb.max_pool(x=se, kernel_sizes=[4, 4], strides=[4, 4], pad_type="valid", name="pool_s4")
        up = mb.upsample_nearest_neighbor(x=mb.avg_pool(x=se, kernel_sizes=[28, 28], strides=[1, 1],
                                                        pad_type="valid"),
                                          scale_factor_height=28, scale_factor_width=28, name="up28")
        return p4, up
    return convert(prog, "e56_mobilenet_nn_layers")


def e57_prefill(history):
    heads, hd, seq = 2, 32, 8
    @mb.program(input_specs=[spec((1, heads, seq, hd)), mb.StateTensorSpec((1, heads, history, hd), dtype=F16)],
                opset_version=ct.target.iOS18)
    def prog(q, cache):
        k = mb.read_state(input=cache)
        s = mb.matmul(x=q, y=k, transpose_y=True)
        p = mb.softmax(x=s, axis=-1)
        return mb.matmul(x=p, y=k)
    return convert(prog, f"e57_prefill_history{history}", states=[ct.StateType(
        wrapped_type=ct.TensorType(shape=(1, heads, history, hd), dtype=np.float16), name="cache")])


def e37_fp32_dit():
    @mb.program(input_specs=[spec((1, 64, 1, 16), F32)], opset_version=ct.target.iOS18)
    def prog(x):
        h = mb.layer_norm(x=x, axes=[1], epsilon=1e-6)
        h = mb.conv(x=h, weight=w32(64, 64, 1, 1))
        h = mb.gelu(x=h)
        return mb.add(x=x, y=mb.conv(x=h, weight=w32(64, 64, 1, 1)))
    return convert(prog, "e37_fp32_mmdit_block", precision=ct.precision.FLOAT32)


# --- the expectations ----------------------------------------------------------------------

def op(type_, observed, name=None):
    row = {"type": type_, "observed": observed}
    if name:
        row["output_contains"] = name
    return row


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    entries = [
        {"entry": 2, "what": "ANE-optimized DistilBERT: embedding lookups on CPU, the rest on NE",
         "source": "apple/ml-ane-transformers README + xcode_performance_report_comparison.png",
         "cases": [{"model": e02_distilbert(), "observed_model": "off",
                    "ops": [op("gather", "off"), op("conv", "ane"), op("softmax", "ane"),
                            op("layer_norm", "ane")]}]},
        {"entry": 3, "what": "GPT-2 all fp16, CPU_AND_NE: CPU 8 / ANE 1315",
         "source": "smpanaro/more-ane-transformers NOTES.md (Mar 25 2023)",
         "cases": [{"model": gpt2_like("e03_gpt2_fp16"), "observed_model": "off", "ops": []}]},
        {"entry": 5, "what": "GPT-2 on iPhone 12 Pro: CPU only",
         "source": "smpanaro/more-ane-transformers NOTES.md (Mar 26 2023)",
         "cases": [{"model": "e03_gpt2_fp16.mlpackage", "observed_model": "off", "ops": []}]},
        {"entry": 6, "what": "fp32 causal mask on CPU, fp16 mask stays on ANE",
         "source": "smpanaro/more-ane-transformers NOTES.md (Mar 26 2023)",
         "cases": [{"model": e06_mask(F32), "observed_model": None, "ops": [op("add", "off", "masked")]},
                   {"model": e06_mask(F16), "observed_model": None, "ops": [op("add", "ane", "masked")]}]},
        {"entry": 7, "what": "GPT-2-XL lm_head (vocab 50257) on CPU: output blob exceeds the ANE limit",
         "source": "smpanaro/more-ane-transformers NOTES.md (Apr 2, Sep 30 2023)",
         "cases": [{"model": lm_head("e07_lm_head_vocab50257", 50257), "observed_model": None,
                    "ops": [op("linear", "off")]}]},
        {"entry": 8, "what": "band_part not on ANE",
         "source": "smpanaro/more-ane-transformers NOTES.md (Apr 4 2023)",
         "cases": [{"model": e08_band_part(), "observed_model": None, "ops": [op("band_part", "off")]}]},
        {"entry": 9, "what": "cond (if/else) on CPU",
         "source": "smpanaro/more-ane-transformers NOTES.md (Apr 16 2023); zero_matmul_test.py",
         "cases": [{"model": e09_cond(), "observed_model": None, "ops": [op("cond", "off")]}]},
        {"entry": 10, "what": "dynamic slice_by_index / slice_by_size and index_select (gather) on CPU",
         "source": "smpanaro/more-ane-transformers NOTES.md (Oct 25 2023); select_with_tensor.py",
         "cases": [{"model": e10_dynamic(), "observed_model": None,
                    "ops": [op("slice_by_index", "off", "dyn_slice_by_index"),
                            op("slice_by_size", "off", "dyn_slice_by_size"),
                            op("gather", "off", "index_select")]}]},
        {"entry": 20, "what": "RangeDim input: MLE5Engine not supported on the NE",
         "source": "https://github.com/apple/coremltools/issues/1029",
         "cases": [{"model": e20_range_dim(), "observed_model": "off", "ops": []}]},
        {"entry": 24, "what": "LSTM on CPU (BNNS), fully connected on ANE, CNN on GPU",
         "source": "https://github.com/apple/coremltools/issues/337",
         "cases": [{"model": e24_lstm_fc_cnn(), "observed_model": None,
                    "ops": [op("lstm", "off"), op("linear", "ane", "fc"), op("conv", "off")]}]},
        {"entry": 26, "what": "stateful KV attention: SEQ 128 fails on ANE, SEQ 16/32 works",
         "source": "coremltools #2553; Anemll #27",
         "cases": [{"model": stateful_attention("e26_kv_seq128", 128, 1024, 16, 128), "observed_model": "off", "ops": []},
                   {"model": stateful_attention("e26_kv_seq16", 16, 1024, 16, 128), "observed_model": "ane", "ops": []}]},
        {"entry": 27, "what": "stateful conv RNN: state width 270 fails on ANE, 256 works",
         "source": "https://github.com/apple/coremltools/issues/2631",
         "cases": [{"model": e27_state_conv(270), "observed_model": "off", "ops": []},
                   {"model": e27_state_conv(256), "observed_model": "ane", "ops": []}]},
        {"entry": 35, "what": "fp32 input: mul/add/cast on CPU; conv/relu/add on ANE",
         "source": "https://github.com/freedomtan/coreml_modelc_profling",
         "cases": [{"model": e35_fp32_input(), "observed_model": None,
                    "ops": [op("mul", "off"), op("add", "off", "normalize"), op("cast", "off", "to_fp16"),
                            op("conv", "ane"), op("relu", "ane")]}]},
        {"entry": 37, "what": "SD3 MMDiT needs fp32: CPU_AND_GPU only",
         "source": "apple/ml-stable-diffusion README",
         "cases": [{"model": e37_fp32_dit(), "observed_model": "off", "ops": []}]},
        {"entry": 38, "what": "UForm encoders: fp32 mostly GPU; quantized (i8/f16) mostly ANE",
         "source": "https://github.com/unum-cloud/UForm/pull/97",
         "cases": [{"model": encoder("e38_encoder_fp32", ct.precision.FLOAT32), "observed_model": "off", "ops": []},
                   {"model": encoder("e38_encoder_fp16", ct.precision.FLOAT16), "observed_model": "ane", "ops": []},
                   {"model": encoder("e38_encoder_int8", ct.precision.FLOAT16, int8_per_channel),
                    "observed_model": "ane", "ops": []}]},
        {"entry": 41, "what": "Qwen 2-layer shard, INT8 per tensor: 8/8 conv on ANE",
         "source": "https://alvaro-videla.com/ane-book/03-quantization.html",
         "cases": [{"model": qwen_shard("e41_qwen_int8_per_tensor", int8_per_tensor), "observed_model": None,
                    "ops": [op("conv", "ane")]}]},
        {"entry": 42, "what": "Qwen 0.5B stateful INT4 (palettized): 97/97 conv on ANE",
         "source": "https://alvaro-videla.com/ane-book/03-quantization.html",
         "cases": [{"model": e42_stateful_lut4(), "observed_model": None, "ops": [op("conv", "ane")]}]},
        {"entry": 46, "what": "static Llama: final linear (vocab 32000) on CPU",
         "source": "https://github.com/pytorch/executorch/issues/8445",
         "cases": [{"model": lm_head("e46_final_linear_vocab32000", 32000), "observed_model": None,
                    "ops": [op("linear", "off")]}]},
        {"entry": 49, "what": "512x512 fp16 matmul on ANE; 384 fp16 on CPU; fp32 never ANE",
         "source": "https://github.com/vx-lang/Vx/issues/435",
         "cases": [{"model": e49_matmul(512, ct.precision.FLOAT16), "observed_model": None,
                    "ops": [op("matmul", "ane")]},
                   {"model": e49_matmul(384, ct.precision.FLOAT16), "observed_model": None,
                    "ops": [op("matmul", "off")]},
                   {"model": e49_matmul(512, ct.precision.FLOAT32), "observed_model": None,
                    "ops": [op("matmul", "off")]}]},
        {"entry": 50, "what": "fused SDPA: fp16 from 2^21 elements per tensor on ANE; smaller and fp32 on CPU",
         "source": "https://github.com/vx-lang/Vx/issues/437",
         "cases": [{"model": e50_sdpa((1, 16, 2048, 64), ct.precision.FLOAT16), "observed_model": None,
                    "ops": [op("scaled_dot_product_attention", "ane")]},
                   {"model": e50_sdpa((1, 32, 1024, 128), ct.precision.FLOAT16), "observed_model": None,
                    "ops": [op("scaled_dot_product_attention", "ane")]},
                   {"model": e50_sdpa((1, 8, 512, 64), ct.precision.FLOAT16), "observed_model": None,
                    "ops": [op("scaled_dot_product_attention", "off")]},
                   {"model": e50_sdpa((1, 16, 2048, 64), ct.precision.FLOAT32), "observed_model": None,
                    "ops": [op("scaled_dot_product_attention", "off")]}]},
        {"entry": 51, "what": "int4/int8 constexpr weights CPU only; fp16 4-layer MLP ANE; 1-2 layer graphs CPU",
         "source": "https://github.com/kasper0406/stablehlo-coreml/pull/110",
         "cases": [{"model": mlp("e51_mlp1_fp16", 1), "observed_model": None, "ops": [op("linear", "off")]},
                   {"model": mlp("e51_mlp4_fp16", 4), "observed_model": None, "ops": [op("linear", "ane")]},
                   {"model": mlp("e51_mlp4_matmul_fp16", 4, "matmul"), "observed_model": None,
                    "ops": [op("matmul", "ane")]},
                   {"model": mlp("e51_mlp4_int8", 4, compress=int8_per_channel), "observed_model": None,
                    "ops": [op("linear", "off")]},
                   {"model": mlp("e51_mlp4_int4", 4, compress=int4_per_block), "observed_model": None,
                    "ops": [op("linear", "off")]}]},
        {"entry": 52, "what": "decode projection: ANE admissible for k <= 16384",
         "source": "https://github.com/chrishayuk/larql/pull/312",
         "cases": [{"model": e52_projection(8192), "observed_model": None, "ops": [op("linear", "ane", "proj")]},
                   {"model": e52_projection(16400), "observed_model": None, "ops": [op("linear", "off", "proj")]}]},
        {"entry": 55, "what": "reduce_log_sum_exp: small topology CPU; after conv + linear ANE",
         "source": "https://github.com/apple/coremltools/issues/2690",
         "cases": [{"model": e55_logsumexp("small"), "observed_model": None,
                    "ops": [op("reduce_log_sum_exp", "off")]},
                   {"model": e55_logsumexp("conv_linear"), "observed_model": None,
                    "ops": [op("reduce_log_sum_exp", "ane")]}]},
        {"entry": 56, "what": "NN era: avg-pool kernel 28, channel-broadcast mul, pool stride 4, upsample x28 rejected",
         "source": "https://github.com/hollance/neural-engine/issues/2",
         "cases": [{"model": e56_mobilenet_nn(), "observed_model": None,
                    "ops": [op("avg_pool", "off", "global_pool"), op("mul", "off", "channel_scale"),
                            op("max_pool", "off", "pool_s4"),
                            op("upsample_nearest_neighbor", "off", "up28")]}]},
        {"entry": 57, "what": "prefill with history 32768 fails ANE compile; 8192 compiles",
         "source": "https://github.com/Pummelchen/NVMAI/issues/7",
         "cases": [{"model": e57_prefill(32768), "observed_model": "off", "ops": []},
                   {"model": e57_prefill(8192), "observed_model": "ane", "ops": []}]},
    ]
    not_reproduced = [
        {"entry": 13, "why": "a budget over several large models loaded together (~3 GB of ANE memory on "
                             "M1): a property of a process, not of one shard"},
        {"entry": 30, "why": "an ANECCompile failure of one specific model (MobileViT-v2) with no stated "
                             "mechanism to reproduce in a small model"},
        {"entry": 31, "why": "GFPGAN fails on the ANE with no stated mechanism"},
        {"entry": 34, "why": "an OS-beta regression (macOS 26.4 beta) of specific Whisper encoders: a device/OS "
                             "condition (G9), not a property of the model"},
        {"entry": 58, "why": "NeuralNetwork-era fp16 weight conversion on macOS 10.15: no ML-program equivalent"},
        {"entry": 60, "why": "the same model on two devices (MacBook yes, iPad no): a device condition (G9)"},
    ]
    doc = {"schema": "shardgate/placement-observations@1",
           "generator": "tests/generators/make_placement_observations.py",
           "coremltools": ct.__version__,
           "observed": "ane = placed on the Neural Engine; off = CPU or GPU (or failed to compile for the NE)",
           "entries": entries, "not_reproduced": not_reproduced}
    with open(os.path.join(OUT, "observations.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", sum(len(e["cases"]) for e in entries), "cases")


if __name__ == "__main__":
    main()
