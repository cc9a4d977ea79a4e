#!/usr/bin/env python3
"""Reproduces the public placement observations of the evaluation set as small Core ML models.

  /opt/ctvenv/bin/python tests/generators/make_placement_observations.py

Writes tests/data/placement/observations/: one .mlpackage per reproduced case (coremltools MIL
builder, converted on Linux; nothing compiled) and observations.json with, per entry, the
placement observed on a Mac as the expected value (op rows by op type, a model verdict), the
source, why an entry is not reproduced, and (per case or op row) where sources disagree, so
that the table's ANE_RISK is the sanctioned answer. tests/placement/observations_test.cpp
scores the predictor against it.

Sizes: a model is built at the size of the observed model wherever the source states or
implies one (placement reads value types and shapes only, and rule G5 is a size floor, so a
reproduction built smaller would test the floor instead of the observation). Such models have
all-zero weights: their weight.bin is committed as weight.bin.zeros.json (its size and its
non-zero 64-byte chunks: the blob storage header and metadata records) and the test writes it
back as a sparse file (tests/placement/zero_filled.h), so the data stays small. Small models
keep seeded random fp16 weights (seed 7).
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


ZEROS_SUFFIX = ".zeros.json"


def zero_fill(package_path):
    """Replaces every weight file of a package whose weights are all zero by its zero-filled
    description: {"schema", "size", "chunks": [{"offset", "hex"}]} with the non-zero 64-byte
    chunks (coalesced). Returns the size of the replaced files."""
    total = 0
    for root, _, files in os.walk(package_path):
        for f in files:
            if f != "weight.bin":
                continue
            p = os.path.join(root, f)
            data = open(p, "rb").read()
            chunks = []
            for off in range(0, len(data), 64):
                piece = data[off:off + 64]
                if not any(piece):
                    continue
                if chunks and chunks[-1][0] + len(chunks[-1][1]) == off:
                    chunks[-1][1] += piece
                else:
                    chunks.append([off, bytearray(piece)])
            doc = {"schema": "shardgate/zero-filled-file@1",
                   "what": "weight.bin with its all-zero bytes left out: tests write it back as a sparse file",
                   "size": len(data),
                   "chunks": [{"offset": o, "hex": bytes(c).hex()} for o, c in chunks]}
            with open(p + ZEROS_SUFFIX, "w") as fh:
                json.dump(doc, fh, indent=0)
                fh.write("\n")
            os.remove(p)
            total += len(data)
    return total


def convert(prog, name, precision=ct.precision.FLOAT16, target=ct.target.iOS18, inputs=None,
            states=None, compress=None, zeros=False):
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
    if zeros:
        zero_fill(path)
    return name + ".mlpackage"


def spec(shape, dtype=F16):
    return mb.TensorSpec(shape, dtype=dtype)


# --- the models ---------------------------------------------------------------------------

def attention_block(x, d, heads, seq, zeros=False):
    """ANE-style (B, C, 1, S) attention + FFN block on x [1, d, 1, seq] (ml-ane-transformers)."""
    hd = d // heads
    def proj(t, i, o):
        return mb.conv(x=t, weight=w16(o, i, 1, 1, zeros=zeros))
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
    h = mb.add(x=h, y=proj(f, 4 * d, d))
    return mb.layer_norm(x=h, axes=[1], epsilon=np.float16(1e-5))


def e02_distilbert():
    """DistilBERT base at seq 128 (the report's input): vocabulary 30522, 512 positions, d 768,
    12 heads, 6 layers, FFN 3072; ml-ane-transformers' (B, C, 1, S) layout."""
    seq, d, vocab, layers = 128, 768, 30522, 6
    @mb.program(input_specs=[spec((1, seq), I32)], opset_version=ct.target.iOS18)
    def prog(ids):
        e = mb.gather(x=w16(vocab, d, zeros=True), indices=ids, axis=0)   # word embedding
        pe = mb.gather(x=w16(512, d, zeros=True), indices=np.arange(seq, dtype=np.int32)[None, :], axis=0)
        e = mb.add(x=e, y=pe)
        e = mb.layer_norm(x=e, axes=[-1], epsilon=np.float16(1e-5))
        x = mb.expand_dims(x=mb.transpose(x=e, perm=[0, 2, 1]), axes=[2])  # [1, d, 1, seq]
        for _ in range(layers):
            x = attention_block(x, d, 12, seq, zeros=True)
        return x
    return convert(prog, "e02_distilbert_ane", zeros=True)


def gpt2_like(name, vocab=50257, d=768, seq=512, heads=12, layers=12):
    """GPT-2 small at 512 context, all fp16 (the NOTES' model): vocabulary 50257, d 768, 12 heads,
    12 layers; the causal mask is an fp16 input (entry 6: an fp16 mask stays on the NE)."""
    hd = d // heads
    @mb.program(input_specs=[spec((1, seq), I32), spec((1, 1, seq, seq))], opset_version=ct.target.iOS18)
    def prog(ids, mask):
        e = mb.gather(x=w16(vocab, d, zeros=True), indices=ids, axis=0)
        x = mb.expand_dims(x=mb.transpose(x=e, perm=[0, 2, 1]), axes=[2])
        for _ in range(layers):
            h = mb.layer_norm(x=x, axes=[1], epsilon=np.float16(1e-5))
            q = mb.conv(x=h, weight=w16(d, d, 1, 1, zeros=True))
            k = mb.conv(x=h, weight=w16(d, d, 1, 1, zeros=True))
            v = mb.conv(x=h, weight=w16(d, d, 1, 1, zeros=True))
            s = mb.matmul(x=mb.reshape(x=q, shape=[1, heads, hd, seq]),
                          y=mb.reshape(x=k, shape=[1, heads, hd, seq]), transpose_x=True)
            p = mb.softmax(x=mb.add(x=s, y=mask), axis=-1)
            o = mb.matmul(x=mb.reshape(x=v, shape=[1, heads, hd, seq]), y=p, transpose_y=True)
            x = mb.add(x=x, y=mb.conv(x=mb.reshape(x=o, shape=[1, d, 1, seq]),
                                      weight=w16(d, d, 1, 1, zeros=True)))
            f = mb.gelu(x=mb.conv(x=mb.layer_norm(x=x, axes=[1], epsilon=np.float16(1e-5)),
                                  weight=w16(4 * d, d, 1, 1, zeros=True)))
            x = mb.add(x=x, y=mb.conv(x=f, weight=w16(d, 4 * d, 1, 1, zeros=True)))
        return x
    return convert(prog, name, zeros=True)


def e06_mask(dtype):
    """The masked attention scores of GPT-2 at 512 context (12 heads of 64): the mask add between
    QK^T and softmax, with the mask in fp32 or fp16."""
    seq, heads, hd = 512, 12, 64
    qkv = (1, heads, seq, hd)
    @mb.program(input_specs=[spec(qkv), spec(qkv), spec(qkv), spec((1, 1, seq, seq), dtype)],
                opset_version=ct.target.iOS18)
    def prog(q, k, v, mask):
        scores = mb.matmul(x=q, y=k, transpose_y=True)
        if dtype == F32:
            s32 = mb.cast(x=scores, dtype="fp32")
            m = mb.add(x=s32, y=mask, name="masked")
            m = mb.cast(x=m, dtype="fp16")
        else:
            m = mb.add(x=scores, y=mask, name="masked")
        return mb.matmul(x=mb.softmax(x=m, axis=-1), y=v)
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
    """#337 states no sizes; built at a phone-vision size (a 32-channel 3x3 CNN on 128x128, a
    512-wide fully connected layer, an LSTM of 128) so the small-graph floor (G5) does not decide
    it."""
    @mb.program(input_specs=[spec((16, 1, 64)), spec((1, 512)), spec((1, 32, 128, 128))],
                opset_version=ct.target.iOS18)
    def prog(seq, feat, img):
        h, _, _ = mb.lstm(x=seq, initial_h=w16(1, 128, zeros=True), initial_c=w16(1, 128, zeros=True),
                          weight_ih=w16(4 * 128, 64, zeros=True), weight_hh=w16(4 * 128, 128, zeros=True),
                          output_sequence=False)
        fc = mb.linear(x=feat, weight=w16(512, 512, zeros=True), name="fc")
        c = mb.relu(x=mb.conv(x=img, weight=w16(32, 32, 3, 3, zeros=True), pad_type="same"))
        return h, fc, c
    return convert(prog, "e24_lstm_fc_cnn", zeros=True)


def stateful_attention(name, seq, proj, ctx=1024, heads=16, hd=128):
    """#2553: stateful self-attention, KV cache of 16 heads x 1024 x 128 written with
    slice_update; SEQ 128 with Linear projections, SEQ 16 with Conv2d (1x1 conv) projections."""
    d = heads * hd
    x_shape = (1, d, 1, seq) if proj == "conv" else (1, seq, d)
    @mb.program(input_specs=[spec(x_shape), mb.StateTensorSpec((1, heads, ctx, hd), dtype=F16)],
                opset_version=ct.target.iOS18)
    def prog(x, cache):
        def project(t):
            if proj == "conv":
                y = mb.conv(x=t, weight=w16(d, d, 1, 1, zeros=True))
                return mb.transpose(x=mb.reshape(x=y, shape=[1, heads, hd, seq]), perm=[0, 1, 3, 2])
            y = mb.linear(x=t, weight=w16(d, d, zeros=True))
            return mb.transpose(x=mb.reshape(x=y, shape=[1, seq, heads, hd]), perm=[0, 2, 1, 3])
        q, knew = project(x), project(x)
        cur = mb.read_state(input=cache)
        upd = mb.slice_update(x=cur, update=knew, begin=[0, 0, 0, 0], end=[1, heads, seq, hd])
        mb.coreml_update_state(state=cache, value=upd)
        k = mb.read_state(input=cache)
        s = mb.matmul(x=q, y=k, transpose_y=True)
        p = mb.softmax(x=s, axis=-1)
        o = mb.matmul(x=p, y=k)                                     # [1, heads, seq, hd]
        if proj == "conv":
            o = mb.reshape(x=mb.transpose(x=o, perm=[0, 1, 3, 2]), shape=[1, d, 1, seq])
            return mb.conv(x=o, weight=w16(d, d, 1, 1, zeros=True))
        o = mb.reshape(x=mb.transpose(x=o, perm=[0, 2, 1, 3]), shape=[1, seq, d])
        return mb.linear(x=o, weight=w16(d, d, zeros=True))
    return convert(prog, name, zeros=True, states=[ct.StateType(wrapped_type=ct.TensorType(
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
    """MobilenetEdgeTPU's input and first blocks at its 224x224 input: the fp32 normalisation, the
    cast, a 3x3 stride-2 conv to 32 channels, a 3x3 conv and a 1x1 conv at 112x112."""
    @mb.program(input_specs=[spec((1, 3, 224, 224), F32)], opset_version=ct.target.iOS18)
    def prog(img):
        x = mb.add(x=mb.mul(x=img, y=np.float32(1 / 127.5)), y=np.float32(-1.0), name="normalize")
        x = mb.cast(x=x, dtype="fp16", name="to_fp16")
        x = mb.relu(x=mb.conv(x=x, weight=w16(32, 3, 3, 3, zeros=True), strides=[2, 2], pad_type="same"))
        y = mb.relu(x=mb.conv(x=x, weight=w16(32, 32, 3, 3, zeros=True), pad_type="same"))
        y = mb.conv(x=y, weight=w16(32, 32, 1, 1, zeros=True))
        return mb.add(x=x, y=y)
    return convert(prog, "e35_fp32_input", precision=ct.precision.FLOAT32, zeros=True)


def encoder(name, weights):
    """A UForm image-encoder block at its size (ViT-B/16 at 224: 196 patches of 768, FFN 3072);
    weights fp32, fp16, or int8 per channel (constexpr_blockwise_shift_scale, what coremltools
    writes for per-channel int8 on iOS18)."""
    dt = F32 if weights == "fp32" else F16
    def w(o, i, k=1):
        if weights == "fp32":
            return np.zeros((o, i, k, k), dtype=np.float32)
        if weights == "fp16":
            return w16(o, i, k, k, zeros=True)
        return mb.constexpr_blockwise_shift_scale(data=np.zeros((o, i, k, k), dtype=np.int8),
                                                  scale=np.ones((o, 1, 1, 1), dtype=np.float16))
    @mb.program(input_specs=[spec((1, 3, 224, 224), dt)], opset_version=ct.target.iOS18)
    def prog(img):
        x = mb.conv(x=img, weight=w(768, 3, 16), strides=[16, 16])      # patchify: 14 x 14
        x = mb.reshape(x=x, shape=[1, 768, 1, 196])
        h = mb.layer_norm(x=x, axes=[1], epsilon=1e-5 if dt == F32 else np.float16(1e-5))
        h = mb.gelu(x=mb.conv(x=h, weight=w(3072, 768)))
        return mb.add(x=x, y=mb.conv(x=h, weight=w(768, 3072)))
    precision = ct.precision.FLOAT32 if weights == "fp32" else ct.precision.FLOAT16
    return convert(prog, name, precision=precision, zeros=True)


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
    """Qwen2.5 0.5B decode step at its size: d 896, 24 layers of 4 convs (fused QKV 896 -> 1152,
    output 896, fused gate/up 896 -> 2 x 4864, down 4864 -> 896), int4 LUT per grouped channel
    (group 16, constexpr_lut_to_dense), a KV state of 2 heads x 64 updated with slice_update."""
    d, kv, ffn, layers, ctx = 896, 128, 4864, 24, 512
    def lut4(o, i):
        return mb.constexpr_lut_to_dense(indices=np.zeros((o, i, 1, 1), dtype=types.np_uint4_dtype),
                                         lut=np.zeros((o // 16, 1, 1, 1, 16, 1), dtype=np.float16))
    @mb.program(input_specs=[spec((1, d, 1, 1)), mb.StateTensorSpec((1, kv, 1, ctx), dtype=F16)],
                opset_version=ct.target.iOS18)
    def prog(x, cache):
        a = None
        for _ in range(layers):
            qkv = mb.conv(x=x, weight=lut4(d + 2 * kv, d))
            q = mb.slice_by_index(x=qkv, begin=[0, 0, 0, 0], end=[1, d, 1, 1])
            k = mb.slice_by_index(x=qkv, begin=[0, d, 0, 0], end=[1, d + kv, 1, 1])
            upd = mb.slice_update(x=mb.read_state(input=cache), update=k, begin=[0, 0, 0, 0],
                                  end=[1, kv, 1, 1])
            mb.coreml_update_state(state=cache, value=upd)
            a = mb.reduce_mean(x=mb.read_state(input=cache), axes=[3], keep_dims=True)
            h = mb.add(x=x, y=mb.conv(x=q, weight=lut4(d, d)))
            gu = mb.conv(x=h, weight=lut4(2 * ffn, d))
            g = mb.slice_by_index(x=gu, begin=[0, 0, 0, 0], end=[1, ffn, 1, 1])
            u = mb.slice_by_index(x=gu, begin=[0, ffn, 0, 0], end=[1, 2 * ffn, 1, 1])
            m = mb.mul(x=mb.mul(x=g, y=mb.sigmoid(x=g)), y=u)
            x = mb.add(x=h, y=mb.conv(x=m, weight=lut4(d, ffn)))
        return x, a
    return convert(prog, "e42_stateful_lut4", zeros=True, states=[ct.StateType(
        wrapped_type=ct.TensorType(shape=(1, kv, 1, ctx), dtype=np.float16), name="cache")])


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
    """#7 states the history only; the prefill attention of a small LLM (16 heads of 64, a
    64-token prefill chunk) over a KV state of `history` positions."""
    heads, hd, seq = 16, 64, 64
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

def op(type_, observed, name=None, disagree=None):
    row = {"type": type_, "observed": observed}
    if name:
        row["output_contains"] = name
    if disagree:
        row["sources_disagree"] = disagree
    return row


def disagree(entries, why):
    """Where the evaluation set's own entries contradict each other on a row, the rule table's
    ANE_RISK (model: "at risk") is the sanctioned answer; only such rows count it as agreeing."""
    return {"entries": entries, "why": why}


INT8 = disagree([41, 51], "int8 constexpr weights: 8/8 convs of an INT8 per-tensor shard on the NE (41) vs "
                          "int8 constexpr weights supported=[CPU] only at any depth (51); no stated condition "
                          "separates them (placement.md open question 2)")
SMALL = disagree([49, 50, 51, 52, 55], "small fp16 work: a single 512^3 matmul on the NE but 384^3 on the CPU (49), "
                 "an fp16 SDPA of 2^28 MACs on the CPU (50), 1-2 layer graphs on the CPU but a 4-layer MLP on the "
                 "NE, sizes unstated (51), decode projections far below 512^3 MACs preferred on the NE from "
                 "k ~ 4992 (52), reduce_log_sum_exp after a small conv + linear on the NE (55): no work floor "
                 "is consistent with all of them")


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
         "cases": [{"model": stateful_attention("e26_kv_seq128", 128, "linear"), "observed_model": "off", "ops": []},
                   {"model": stateful_attention("e26_kv_seq16", 16, "conv"), "observed_model": "ane", "ops": []}]},
        {"entry": 27, "what": "stateful conv RNN: state width 270 fails on ANE, 256 works",
         "source": "https://github.com/apple/coremltools/issues/2631",
         "cases": [{"model": e27_state_conv(270), "observed_model": "off", "ops": []},
                   {"model": e27_state_conv(256), "observed_model": "ane", "ops": [],
                    "model_sources_disagree": disagree(
                        [27, 49, 51], "a small stateful conv RNN (channels unstated) on the NE (27) vs small graphs "
                        "on the CPU (49: 384^3 matmul; 51: 1-2 layer graphs): no work floor separates them")}]},
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
         "cases": [{"model": encoder("e38_encoder_fp32", "fp32"), "observed_model": "off", "ops": []},
                   {"model": encoder("e38_encoder_fp16", "fp16"), "observed_model": "ane", "ops": []},
                   {"model": encoder("e38_encoder_int8", "int8"), "observed_model": "ane", "ops": [],
                    "model_sources_disagree": INT8}]},
        {"entry": 41, "what": "Qwen 2-layer shard, INT8 per tensor: 8/8 conv on ANE",
         "source": "https://alvaro-videla.com/ane-book/03-quantization.html",
         "cases": [{"model": qwen_shard("e41_qwen_int8_per_tensor", int8_per_tensor), "observed_model": None,
                    "ops": [op("conv", "ane", disagree=INT8)]}]},
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
                    "ops": [op("matmul", "off", disagree=SMALL)]},
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
         "cases": [{"model": mlp("e51_mlp1_fp16", 1), "observed_model": None,
                    "ops": [op("linear", "off", disagree=SMALL)]},
                   {"model": mlp("e51_mlp4_fp16", 4), "observed_model": None,
                    "ops": [op("linear", "ane", disagree=SMALL)]},
                   {"model": mlp("e51_mlp4_matmul_fp16", 4, "matmul"), "observed_model": None,
                    "ops": [op("matmul", "ane", disagree=SMALL)]},
                   {"model": mlp("e51_mlp4_int8", 4, compress=int8_per_channel), "observed_model": None,
                    "ops": [op("linear", "off", disagree=INT8)]},
                   {"model": mlp("e51_mlp4_int4", 4, compress=int4_per_block), "observed_model": None,
                    "ops": [op("linear", "off")]}]},
        {"entry": 52, "what": "decode projection: ANE admissible for k <= 16384",
         "source": "https://github.com/chrishayuk/larql/pull/312",
         "cases": [{"model": e52_projection(8192), "observed_model": None, "ops": [op("linear", "ane", "proj", disagree=SMALL)]},
                   {"model": e52_projection(16400), "observed_model": None, "ops": [op("linear", "off", "proj")]}]},
        {"entry": 55, "what": "reduce_log_sum_exp: small topology CPU; after conv + linear ANE",
         "source": "https://github.com/apple/coremltools/issues/2690",
         "cases": [{"model": e55_logsumexp("small"), "observed_model": None,
                    "ops": [op("reduce_log_sum_exp", "off")]},
                   {"model": e55_logsumexp("conv_linear"), "observed_model": None,
                    "ops": [op("reduce_log_sum_exp", "ane", disagree=SMALL)]}]},
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
    doc = {"schema": "shardgate/placement-observations@2",
           "generator": "tests/generators/make_placement_observations.py",
           "coremltools": ct.__version__,
           "observed": "ane = placed on the Neural Engine; off = CPU or GPU (or failed to compile for the NE)",
           "sources_disagree": "per op row (sources_disagree) or case (model_sources_disagree): the entries of "
                               "this set that contradict each other on that row; there, and only there, ANE_RISK "
                               "(at risk) counts as agreeing",
           "entries": entries, "not_reproduced": not_reproduced}
    with open(os.path.join(OUT, "observations.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", sum(len(e["cases"]) for e in entries), "cases")


if __name__ == "__main__":
    main()
