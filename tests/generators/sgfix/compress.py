"""Conversion to Core ML, weight compression with coremltools.optimize, and numpy decoding of
the compressed weights read back from the compressed program.

The decoders below are our own numpy code written from the op definitions (runtime/ops/README.md,
Compile-time weights): they read the raw arrays (int8/int4 data + scales, uint4 indices + LUTs) that
coremltools put into the program and never call coremltools' own decompression helpers.
"""
import coremltools as ct
import coremltools.optimize.coreml as cto
import numpy as np
from coremltools.converters.mil.mil import types

VARIANTS = ("fp16", "int8", "lut4", "int4blk")

# Every projection (linear) and the embedding table (gather) is compressed; small tensors
# (norm gains, RoPE tables, masks) are left alone because only linear/gather weights are
# selected. The threshold is below the smallest projection of the fixtures (router 16x64).
WEIGHT_THRESHOLD = 256


def op_config(variant):
    if variant == "int8":
        return cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8",
                                           granularity="per_tensor",
                                           weight_threshold=WEIGHT_THRESHOLD)
    if variant == "int8pc":
        # Benchmark shards only (--full-variants): one scale per output channel.
        return cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8",
                                           granularity="per_channel",
                                           weight_threshold=WEIGHT_THRESHOLD)
    if variant == "lut4":
        return cto.OpPalettizerConfig(nbits=4, granularity="per_grouped_channel", group_size=32,
                                      weight_threshold=WEIGHT_THRESHOLD)
    if variant == "int4blk":
        return cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int4",
                                           granularity="per_block", block_size=32,
                                           weight_threshold=WEIGHT_THRESHOLD)
    raise ValueError(variant)


def convert(prog, stateful=False):
    pipeline = ct.PassPipeline.DEFAULT
    if stateful:
        # coremltools 9.0's canonicalize_inplace_pattern pass fails (KeyError) on two
        # read_state -> slice_update -> coreml_update_state chains; the graph is already in
        # the canonical form it would produce.
        pipeline.remove_passes(["common::canonicalize_inplace_pattern"])
    return ct.convert(prog, minimum_deployment_target=ct.target.iOS18,
                      compute_precision=ct.precision.FLOAT16, skip_model_load=True,
                      pass_pipeline=pipeline)


def _router_consts(model):
    return [op.weight.op.name for op in model._mil_program.functions["main"].operations
            if op.op_type == "linear" and op.name == "router"]


def compress(model, variant, router_rows=None, keep_fp16=()):
    """`keep_fp16`: names of weight const ops left uncompressed (coremltools' op_name_configs
    set to None), the re-conversion `golden-validator advise` recommends."""
    if variant == "fp16":
        return model
    cfg = op_config(variant)
    by_name = {}
    if variant == "lut4" and router_rows and router_rows % 32:
        # The router has fewer rows (one per expert) than a 32-row group: it gets one
        # 16-entry LUT per `router_rows` rows, i.e. a single table, instead of being skipped.
        rcfg = cto.OpPalettizerConfig(nbits=4, granularity="per_grouped_channel",
                                      group_size=router_rows, weight_threshold=WEIGHT_THRESHOLD)
        by_name = {n: rcfg for n in _router_consts(model)}
    consts = {op.name for f in model._mil_program.functions.values() for op in f.operations
              if op.op_type == "const"}
    for n in keep_fp16:
        if n not in consts:
            raise ValueError(f"keep_fp16: no const op '{n}' in the model")
        by_name[n] = None
    oc = cto.OptimizationConfig(op_type_configs={"linear": cfg, "gather": cfg},
                                op_name_configs=by_name)
    if variant == "lut4":
        return cto.palettize_weights(model, oc)
    return cto.linear_quantize_weights(model, oc)


def _expand_blocks(small, shape):
    """Repeat a per-block tensor (same rank as `shape`, each dim dividing it) to `shape`."""
    out = small
    for d, (n, m) in enumerate(zip(shape, small.shape)):
        if n % m:
            raise ValueError(f"block dim {m} does not divide {n}")
        out = np.repeat(out, n // m, axis=d)
    return out


def decode_blockwise_shift_scale(data, scale, offset=None):
    """out = scale * (data - offset) per block, computed as fp16 (exact: |data| < 2048 and a
    product of two fp16 values is exact in fp32, so rounding once to fp16 matches fp16 math)."""
    q = data.astype(np.float32)
    if offset is not None:
        q = q - _expand_blocks(offset.astype(np.float32), data.shape)
        q = q.astype(np.float16).astype(np.float32)
    s = _expand_blocks(scale.astype(np.float32), data.shape)
    return (q * s).astype(np.float16)


def decode_lut_to_dense(indices, lut):
    """Scalar palettization: out[p] = lut[p_0 // b_0, ..., p_{K-1} // b_{K-1}, indices[p], 0]."""
    if lut.shape[-1] != 1:
        raise ValueError("vector palettization not used by the fixtures")
    K = indices.ndim
    groups = lut.shape[:K]
    coords = np.indices(indices.shape)
    gidx = tuple(coords[d] // (indices.shape[d] // groups[d]) for d in range(K))
    return lut[gidx + (indices.astype(np.int64), 0)].astype(np.float16)


def _val(op, name):
    v = op.inputs.get(name)
    return None if v is None else np.asarray(v.val)


def _dtype_name(op, name):
    v = op.inputs.get(name)
    return None if v is None else types.builtin_to_string(v.dtype)


def describe_weight(wop):
    """Raw arrays and numpy-decoded fp16 weight of the op producing a linear/gather weight."""
    t = wop.op_type
    if t == "const":
        w = np.asarray(wop.outputs[0].val)
        return {"op_type": t, "name": wop.name, "decoded": w.astype(np.float16), "raw": {}}
    if t == "constexpr_blockwise_shift_scale":
        data, scale, offset = _val(wop, "data"), _val(wop, "scale"), _val(wop, "offset")
        return {"op_type": t, "name": wop.name,
                "decoded": decode_blockwise_shift_scale(data, scale, offset),
                "raw": {"data": (_dtype_name(wop, "data"), data),
                        "scale": (_dtype_name(wop, "scale"), scale),
                        **({"offset": (_dtype_name(wop, "offset"), offset)}
                           if offset is not None else {})}}
    if t == "constexpr_lut_to_dense":
        idx, lut = _val(wop, "indices"), _val(wop, "lut")
        return {"op_type": t, "name": wop.name, "decoded": decode_lut_to_dense(idx, lut),
                "raw": {"indices": (_dtype_name(wop, "indices"), idx),
                        "lut": (_dtype_name(wop, "lut"), lut)}}
    raise ValueError(f"unexpected weight producer {t} ({wop.name})")


def weights_by_consumer(model):
    """{linear/gather op name: describe_weight(...)} for the main function of `model`."""
    prog = model._mil_program
    out = {}
    for op in prog.functions["main"].operations:
        if op.op_type == "linear":
            out[op.name] = describe_weight(op.weight.op)
        elif op.op_type == "gather" and op.x.op is not None \
                and op.x.op.op_type.startswith("const"):
            out[op.name] = describe_weight(op.x.op)
    return out


def op_types(model):
    """Sorted {op type: count} of the main function (what the shard holds on disk)."""
    counts = {}
    for op in model._mil_program.functions["main"].operations:
        counts[op.op_type] = counts.get(op.op_type, 0) + 1
    return dict(sorted(counts.items()))
