"""Independent oracle for `golden-validator weights` (runtime/diagnose/).

Loads each model with coremltools' own MIL loader, takes every compressed weight a runtime op
reads (the output of a constexpr_* op), decodes it with coremltools
(`materialized_val_inference`) and computes the statistics of runtime/diagnose/README.md with
numpy: the pooled code entropy and share of codes used, the per-group outlier ratio, the
quantization step and the rounding-error estimate of linear forms, and the error against the
FP16 baseline's weight with the same use. Writes tests/data/diagnose/expected_weight_stats.json,
which tests/diagnose/weight_diagnostics_test.cpp compares with the C++ values.

Run: /opt/ctvenv/bin/python tests/generators/make_weight_diagnostics_oracle.py
"""
import json
import logging
import os
import shutil
import sys
import tempfile

import numpy as np

logging.disable(logging.WARNING)
import coremltools as ct  # noqa: E402
from coremltools.converters.mil.frontend.milproto.load import load as milload  # noqa: E402
from coremltools.converters.mil.mil import types  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = "tests/data/constexpr"
SAMPLE = "goldens/sample/shards"
CORPUS = "tests/data/corpus/silero-vad"
# (model, baseline or None). Paths relative to the repository root.
MODELS = [(f"{CASES}/{n}.mlpackage", None) for n in [
    "affine_int8_ios16_axis1", "bss_int4_block", "bss_int4_block_offset", "bss_int8_block_offset",
    "bss_int8_per_channel", "bss_uint4_offset", "bss_uint8_fp32_scale", "lut_uint1_axis0",
    "lut_uint2_axis1", "lut_uint3_axis0", "lut_uint4_conv", "lut_uint4_int8", "lut_uint6_axis1",
    "lut_uint8_fp32", "lut_vector_axis0", "cast_fp16_to_fp32"]] + [
    (f"{SAMPLE}/L0_moe_p0_int8.mlpackage", f"{SAMPLE}/L0_moe_p0_fp16.mlpackage"),
    (f"{SAMPLE}/L0_moe_p0_lut4.mlpackage", f"{SAMPLE}/L0_moe_p0_fp16.mlpackage"),
    (f"{SAMPLE}/L1_attn_int8.mlpackage", f"{SAMPLE}/L1_attn_fp16.mlpackage"),
    (f"{SAMPLE}/L1_attn_lut4.mlpackage", f"{SAMPLE}/L1_attn_fp16.mlpackage"),
    (f"{CORPUS}/unified_int8.mlpackage", None),
    (f"{CORPUS}/unified_palette_4bit.mlpackage", None),
]


def load(path):
    # coremltools rewrites an .mlpackage's Manifest.json when it opens one: load a copy so the
    # committed models stay byte-identical.
    tmp = tempfile.mkdtemp()
    copy = os.path.join(tmp, os.path.basename(path))
    shutil.copytree(os.path.join(ROOT, path), copy)
    m = ct.models.MLModel(copy, skip_model_load=True)
    spec = m.get_spec()
    prog = milload(spec, specification_version=spec.specificationVersion,
                   file_weights_dir=m.weights_dir)
    prog._sg_tmp = tmp  # removed by main() once the weights have been read
    return prog


def uses(fn):
    """First runtime use of each compile-time value: {var name: (op, key)} in program order."""
    out = {}
    for op in fn.operations:
        if op.op_type == "const" or op.op_type.startswith("constexpr_"):
            continue
        for param in sorted(op.inputs):
            v = op.inputs[param]
            for var in (v if isinstance(v, (list, tuple)) else [v]):
                p = var.op
                if p is None or var.name in out:
                    continue
                if p.op_type == "const" or p.op_type.startswith("constexpr_"):
                    out[var.name] = (p, f"{op.outputs[0].name}.{param}")
    return out


def bits_of(var):
    name = types.builtin_to_string(var.dtype)  # e.g. "int4", "uint8"
    return int("".join(ch for ch in name if ch.isdigit()))


def group_ids(shape, block):
    idx = np.indices(shape).reshape(len(shape), -1)
    gshape = [s // b for s, b in zip(shape, block)]
    return np.ravel_multi_index(tuple(i // b for i, b in zip(idx, block)), gshape), int(np.prod(gshape))


def code_layout(op):
    """(codes flat, bits, group id per element, groups, step per group or None) or None."""
    t = op.op_type
    if t == "constexpr_blockwise_shift_scale":
        data = op.inputs["data"]
        if types.builtin_to_string(data.dtype) not in ("int4", "uint4", "int8", "uint8"):
            return None
        shape = data.val.shape
        block = [s // g for s, g in zip(shape, op.inputs["scale"].val.shape)]
        gid, groups = group_ids(shape, block)
        step = np.abs(op.inputs["scale"].val.astype(np.float64)).ravel()
        return data.val.astype(np.int64).ravel(), bits_of(data), gid, groups, step, block
    if t == "constexpr_affine_dequantize":
        q = op.inputs["quantized_data"].val
        scale = np.atleast_1d(op.inputs["scale"].val)
        zp = np.atleast_1d(op.inputs["zero_point"].val)
        axis = int(op.inputs["axis"].val) % q.ndim
        block = list(q.shape)
        if scale.size > 1 or zp.size > 1:
            block[axis] = 1
        gid, groups = group_ids(q.shape, block)
        step = np.abs(scale.astype(np.float64))
        if step.size == 1:
            step = np.repeat(step, groups)
        return q.astype(np.int64).ravel(), 8, gid, groups, step, block
    if t == "constexpr_lut_to_dense":
        lut = op.inputs["lut"].val
        if "shape" in op.inputs:  # iOS16: packed indices, one table
            shape = [int(s) for s in op.inputs["shape"].val]
            nbits = int(np.log2(lut.size))
            n = int(np.prod(shape))
            bits = np.unpackbits(op.inputs["indices"].val.astype(np.uint8), bitorder="little")
            codes = bits[: n * nbits].reshape(n, nbits) @ (1 << np.arange(nbits))
            return codes.astype(np.int64), nbits, np.zeros(n, np.int64), 1, None, shape
        idx = op.inputs["indices"]
        k = idx.val.ndim
        if lut.shape[-1] != 1:
            return None  # vector palettes: no code per element
        block = [s // g for s, g in zip(idx.val.shape, lut.shape[:k])]
        gid, groups = group_ids(idx.val.shape, block)
        return idx.val.astype(np.int64).ravel(), bits_of(idx), gid, groups, None, block
    return None


def stats(op, w):
    out = {"op_type": op.op_type, "shape": list(w.shape), "elements": int(w.size)}
    v = w.astype(np.float64).ravel()
    layout = code_layout(op)
    if layout is None:
        rms = float(np.sqrt(np.mean(v * v)))
        out.update(code_bits=0, rms=rms, tensor_outlier_ratio=float(np.max(np.abs(v)) / rms))
        out["outlier_ratio"] = out["tensor_outlier_ratio"]
        return out
    codes, bits, gid, groups, step, block = layout
    _, counts = np.unique(codes, return_counts=True)
    p = counts / codes.size
    sumsq_g = np.bincount(gid, weights=v * v, minlength=groups)
    n_g = np.bincount(gid, minlength=groups)
    max_g = np.zeros(groups)
    np.maximum.at(max_g, gid, np.abs(v))
    ok = (n_g > 0) & (sumsq_g > 0)
    ratio = np.where(ok, max_g / np.sqrt(np.where(ok, sumsq_g, 1) / np.maximum(n_g, 1)), -1)
    rms = float(np.sqrt(np.sum(v * v) / v.size))
    out.update(code_bits=bits, groups=groups, group_elements=int(np.prod(block)),
               effective_bits=float(-np.sum(p * np.log2(p))), codes_used=len(counts) / 2 ** bits,
               outlier_ratio=float(ratio.max()), outlier_group=int(np.argmax(ratio)), rms=rms,
               tensor_outlier_ratio=float(np.max(np.abs(v)) / rms))
    if step is not None:
        noise = float(np.sum(n_g * step * step / 12.0))
        s = np.sort(step)
        out.update(step_min=float(s[0]), step_median=float(s[len(s) // 2]), step_max=float(s[-1]),
                   est_rel_error=float(np.sqrt(noise / np.sum(v * v))),
                   typical_steps=float(np.sqrt(np.sum(v * v) / (12 * noise))))
    return out


def decoded(op):
    return np.asarray(op.val.val if op.op_type == "const" else op.materialized_val_inference())


def main():
    result = {}
    for path, base in MODELS:
        prog = load(path)
        base_prog = load(base) if base else None
        entry = []
        for fname, fn in prog.functions.items():
            base_uses = uses(base_prog.functions[fname]) if base_prog else {}
            base_by_key = {key: p for _, (p, key) in base_uses.items()}
            for var, (p, key) in uses(fn).items():
                if not p.op_type.startswith("constexpr_"):
                    continue
                w = decoded(p)
                s = stats(p, w)
                s.update(function=fname, name=var, key=key)
                if base_prog and key in base_by_key:
                    ref = decoded(base_by_key[key]).astype(np.float64).ravel()
                    d = w.astype(np.float64).ravel() - ref
                    s["rel_error"] = float(np.linalg.norm(d) / np.linalg.norm(ref))
                    s["sqnr_db"] = float(10 * np.log10(np.sum(ref * ref) / np.sum(d * d)))
                entry.append(s)
        result[path] = {"baseline": base, "weights": entry}
        for p in (prog, base_prog):
            if p is not None:
                shutil.rmtree(p._sg_tmp)
    out = os.path.join(ROOT, "tests/data/diagnose/expected_weight_stats.json")
    with open(out, "w") as f:
        json.dump({"generator": "tests/generators/make_weight_diagnostics_oracle.py",
                   "coremltools": ct.__version__, "models": result}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"wrote {out}: {sum(len(m['weights']) for m in result.values())} weights")


if __name__ == "__main__":
    sys.exit(main())
