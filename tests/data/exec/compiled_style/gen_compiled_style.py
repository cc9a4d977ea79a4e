"""Writes a hand-made model in the style of Apple's compiled iOS18 text (an .mlmodelc as the
compiler leaves it: model.mil in program(1.3) with the bare scalar spelling, inline-constant
shape arithmetic, weights in weights/weight.bin) plus numpy expected outputs.

The forms come from Apple-compiled models, not from coremltools (which never writes them):
  - shapes built at run time from rank-0 values: shape -> cast to int16 -> gather with a
    rank-0 uint16 index -> cast to int32 -> mul -> concat(axis = 0, values = (scalar, scalar))
    producing a rank-1 int32 shape for reshape (all-MiniLM-L6-v2.mlmodelc, 25 such concats);
  - W8A8: quantize / dequantize of the activations around every linear, per tensor (int8) and
    per channel (uint8, axis);
  - constexpr_blockwise_shift_scale weights with inputs (iOS18), per output channel and per
    block of 4 input channels with an int8 offset;
  - a FlexibleShapeInformation function attribute with DefaultShapes and RangeDims.
All scales are powers of two and every integer is small, so each linear sum is exact in both
fp32 and float64 and rounds once to fp16: the expected values are exact, compared bit for bit.

Weights are written by coremltools' own blob writer (libmilstoragepython). Expected values are
numpy, written from the op definitions (coremltools iOS17 quantization_ops.py, iOS18
compression.py blockwise_shift_scale, iOS15 linear), never from shardgate.
Run: /opt/ctvenv/bin/python gen_compiled_style.py
"""
import json
import os

import numpy as np
from coremltools.libmilstoragepython import _BlobStorageWriter

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "compiled_style.mlmodelc")
D, H = 8, 16
rng = np.random.default_rng(2026)

# ---- weights -----------------------------------------------------------------------------
w1_data = rng.integers(-16, 17, (H, D)).astype(np.int8)
w1_scale = (2.0 ** -rng.integers(5, 8, (H, 1))).astype(np.float16)  # per output channel
b1 = (rng.integers(-64, 65, (H,)) * 2.0 ** -8).astype(np.float16)
w2_data = rng.integers(-20, 21, (D, H)).astype(np.int8)
w2_scale = (2.0 ** -rng.integers(5, 8, (D, H // 4))).astype(np.float16)  # blocks of 4 inputs
w2_offset = rng.integers(-4, 5, (D, H // 4)).astype(np.int8)
b2 = (rng.integers(-64, 65, (D,)) * 2.0 ** -8).astype(np.float16)

q1_scale, q1_zp = np.float16(2.0 ** -5), np.int8(3)  # per tensor, int8
q2_scale = (2.0 ** -rng.integers(3, 6, (H,))).astype(np.float16)  # per channel, uint8
q2_zp = rng.integers(0, 4, (H,)).astype(np.uint8)

os.makedirs(os.path.join(MODEL, "weights"), exist_ok=True)
blob_file = os.path.join(MODEL, "weights", "weight.bin")
if os.path.exists(blob_file):
    os.remove(blob_file)
writer = _BlobStorageWriter(blob_file)
off = {
    "w1_data": writer.write_int8_data(w1_data.ravel()),
    "w1_scale": writer.write_fp16_data(w1_scale.view(np.uint16).ravel()),
    "b1": writer.write_fp16_data(b1.view(np.uint16).ravel()),
    "w2_data": writer.write_int8_data(w2_data.ravel()),
    "w2_scale": writer.write_fp16_data(w2_scale.view(np.uint16).ravel()),
    "w2_offset": writer.write_int8_data(w2_offset.ravel()),
    "b2": writer.write_fp16_data(b2.view(np.uint16).ravel()),
    "q2_scale": writer.write_fp16_data(q2_scale.view(np.uint16).ravel()),
    "q2_zp": writer.write_uint8_data(q2_zp.ravel()),
}
del writer  # flushes the file


def blob(dtype, shape, key):
    dims = ", ".join(str(d) for d in shape)
    return (f'tensor<{dtype}, [{dims}]>(BLOBFILE(path = string("@model_path/weights/weight.bin"), '
            f'offset = uint64({off[key]})))')


def hexf(v):
    return float(v).hex()


# ---- program text (the compiler's spelling: one const per parameter, names as it makes them)
L = []


def op(line):
    L.append("            " + line)


def const(ty, name, val):
    op(f'{ty} {name} = const()[name = string("{name}"), val = {ty}({val})];')


op('tensor<int32, [3]> var_5_shape = shape(x = x)[name = string("op_5_shape")];')
const("string", "var_5_shape_to_int16_dtype_0", '"int16"')
op('tensor<int16, [3]> var_5_shape_to_int16 = cast(dtype = var_5_shape_to_int16_dtype_0, '
   'x = var_5_shape)[name = string("cast_0")];')
const("int32", "gather_axis_0", 0)
const("int32", "gather_batch_dims_0", 0)
const("bool", "gather_validate_indices_0", "false")
const("string", "gather_cast_uint16_to_int32_dtype_0", '"int32"')
for k in (0, 1):
    const("uint16", f"gather_{k}_indices_0_to_uint16", k)
    op(f'int16 gather_{k}_cast_uint16 = gather(axis = gather_axis_0, batch_dims = gather_batch_dims_0, '
       f'indices = gather_{k}_indices_0_to_uint16, validate_indices = gather_validate_indices_0, '
       f'x = var_5_shape_to_int16)[name = string("gather_{k}_cast_uint16")];')
    op(f'int32 gather_{k} = cast(dtype = gather_cast_uint16_to_int32_dtype_0, '
       f'x = gather_{k}_cast_uint16)[name = string("cast_{k + 1}")];')
op('int32 var_12 = mul(x = gather_0, y = gather_1)[name = string("op_12")];')
const("int32", "concat_axis_0", 0)
const("bool", "concat_interleave_0", "false")
const("int32", "concat_0_values1_0", D)
op('tensor<int32, [2]> concat_0 = concat(axis = concat_axis_0, interleave = concat_interleave_0, '
   'values = (var_12, concat_0_values1_0))[name = string("concat_0")];')
op(f'tensor<fp16, [?, {D}]> x_2d = reshape(shape = concat_0, x = x)[name = string("x_2d")];')
# W8A8 around linear 1: per-tensor int8.
const("fp16", "x_q_scale_0", hexf(q1_scale))
const("int8", "x_q_zero_point_0", int(q1_zp))
const("string", "x_q_output_dtype_0", '"int8"')
op(f'tensor<int8, [?, {D}]> x_q = quantize(input = x_2d, output_dtype = x_q_output_dtype_0, '
   f'scale = x_q_scale_0, zero_point = x_q_zero_point_0)[name = string("x_q")];')
op(f'tensor<fp16, [?, {D}]> x_dq = dequantize(input = x_q, scale = x_q_scale_0, '
   f'zero_point = x_q_zero_point_0)[name = string("x_dq")];')
op(f'tensor<fp16, [{H}, {D}]> fc1_weight_to_fp16_quantized = constexpr_blockwise_shift_scale('
   f'data = {blob("int8", [H, D], "w1_data")}, scale = {blob("fp16", [H, 1], "w1_scale")})'
   f'[name = string("fc1_weight_to_fp16_quantized")];')
op(f'tensor<fp16, [{H}]> fc1_bias_to_fp16 = const()[name = string("fc1_bias_to_fp16"), '
   f'val = {blob("fp16", [H], "b1")}];')
op(f'tensor<fp16, [?, {H}]> linear_0_cast_fp16 = linear(bias = fc1_bias_to_fp16, '
   f'weight = fc1_weight_to_fp16_quantized, x = x_dq)[name = string("linear_0_cast_fp16")];')
op(f'tensor<fp16, [?, {H}]> h_relu = relu(x = linear_0_cast_fp16)[name = string("h_relu")];')
# W8A8 around linear 2: per-channel uint8 on axis 1.
op(f'tensor<fp16, [{H}]> h_q_scale_0 = const()[name = string("h_q_scale_0"), '
   f'val = {blob("fp16", [H], "q2_scale")}];')
op(f'tensor<uint8, [{H}]> h_q_zero_point_0 = const()[name = string("h_q_zero_point_0"), '
   f'val = {blob("uint8", [H], "q2_zp")}];')
const("int32", "h_q_axis_0", 1)
const("string", "h_q_output_dtype_0", '"uint8"')
op(f'tensor<uint8, [?, {H}]> h_q = quantize(axis = h_q_axis_0, input = h_relu, '
   f'output_dtype = h_q_output_dtype_0, scale = h_q_scale_0, zero_point = h_q_zero_point_0)'
   f'[name = string("h_q")];')
op(f'tensor<fp16, [?, {H}]> h_dq = dequantize(axis = h_q_axis_0, input = h_q, scale = h_q_scale_0, '
   f'zero_point = h_q_zero_point_0)[name = string("h_dq")];')
op(f'tensor<fp16, [{D}, {H}]> fc2_weight_to_fp16_quantized = constexpr_blockwise_shift_scale('
   f'data = {blob("int8", [D, H], "w2_data")}, offset = {blob("int8", [D, H // 4], "w2_offset")}, '
   f'scale = {blob("fp16", [D, H // 4], "w2_scale")})[name = string("fc2_weight_to_fp16_quantized")];')
op(f'tensor<fp16, [{D}]> fc2_bias_to_fp16 = const()[name = string("fc2_bias_to_fp16"), '
   f'val = {blob("fp16", [D], "b2")}];')
op(f'tensor<fp16, [?, {D}]> linear_1_cast_fp16 = linear(bias = fc2_bias_to_fp16, '
   f'weight = fc2_weight_to_fp16_quantized, x = h_dq)[name = string("linear_1_cast_fp16")];')
const("int32", "concat_1_values2_0", D)
op('tensor<int32, [3]> concat_1 = concat(axis = concat_axis_0, interleave = concat_interleave_0, '
   'values = (gather_0, gather_1, concat_1_values2_0))[name = string("concat_1")];')
op(f'tensor<fp16, [?, ?, {D}]> y = reshape(shape = concat_1, x = linear_1_cast_fp16)[name = string("y")];')

flex = ('[FlexibleShapeInformation = tuple<tuple<string, dict<string, tensor<int32, [?]>>>, '
        'tuple<string, dict<string, list<tensor<int32, [2]>, ?>>>>((("DefaultShapes", '
        f'{{{{"x", [1, 4, {D}]}}}}), ("RangeDims", {{{{"x", [[1, 4], [1, 64], [{D}, {D}]]}}}})))]')
text = ("program(1.3)\n"
        '[buildInfo = dict<string, string>({{"coremlc-component-MIL", "3510.2.1"}, '
        '{"coremlc-version", "3500.32.1"}})]\n'
        "{\n"
        f"    func main<ios18>(tensor<fp16, [?, ?, {D}]> x) {flex} {{\n"
        + "\n".join(L) + "\n"
        "    } -> (y);\n"
        "}\n")
with open(os.path.join(MODEL, "model.mil"), "w") as fh:
    fh.write(text)


# ---- numpy reference ----------------------------------------------------------------------
def quantize(x, scale, zp, lo, hi):
    return np.clip(np.round(x.astype(np.float64) / scale.astype(np.float64)) + zp, lo, hi)


def dequantize(q, scale, zp):
    return ((q.astype(np.float64) - zp) * scale.astype(np.float64)).astype(np.float16)


def blockwise(data, scale, offset=None):
    """constexpr_blockwise_shift_scale: each scale (and offset) entry covers a block of
    data.shape[d] // scale.shape[d] elements along every dim d; (data - offset) * scale."""
    reps = [a // b for a, b in zip(data.shape, scale.shape)]
    s = np.kron(scale.astype(np.float64), np.ones(reps))
    o = 0 if offset is None else np.kron(offset.astype(np.float64), np.ones(reps))
    return ((data.astype(np.float64) - o) * s).astype(np.float16)


def reference(x):
    n, s, _ = x.shape
    x2 = x.reshape(n * s, D)
    xq = quantize(x2, q1_scale, int(q1_zp), -128, 127)
    xd = dequantize(xq, q1_scale, int(q1_zp))
    w1 = blockwise(w1_data, w1_scale)
    h = (xd.astype(np.float64) @ w1.astype(np.float64).T + b1.astype(np.float64)).astype(np.float16)
    h = np.maximum(h, np.float16(0))
    hq = quantize(h, q2_scale[None, :], q2_zp[None, :].astype(np.float64), 0, 255)
    hd = dequantize(hq, q2_scale[None, :], q2_zp[None, :].astype(np.float64))
    w2 = blockwise(w2_data, w2_scale, w2_offset)
    y = (hd.astype(np.float64) @ w2.astype(np.float64).T + b2.astype(np.float64)).astype(np.float16)
    return y.reshape(n, s, D), xq.astype(np.int8), hq.astype(np.uint8)


cases = []
for name, shape in (("default_shape", (1, 4, D)), ("batch2", (2, 3, D)), ("one_token", (1, 1, D)),
                    ("long", (1, 64, D))):
    x = (rng.standard_normal(shape) * 1.5).astype(np.float16)
    if name == "default_shape":
        x.ravel()[:4] = np.array([0.5, 1.5, -2.5, 4.0], np.float16) * np.float16(q1_scale)  # ties
    y, xq, hq = reference(x)
    files = {}
    for key, a in (("x", x), ("y", y), ("x_q", xq), ("h_q", hq)):
        files[key] = f"{name}_{key}.npy"
        np.save(os.path.join(HERE, files[key]), a, allow_pickle=False)
    cases.append({"name": name, "inputs": {"x": files["x"]},
                  "outputs": {"y": files["y"]}, "captures": {"x_q": files["x_q"], "h_q": files["h_q"]}})
with open(os.path.join(HERE, "cases.json"), "w") as fh:
    json.dump({"shard": "compiled_style.mlmodelc", "function": "main",
               "default_shapes": {"x": [1, 4, D]}, "cases": cases}, fh, indent=1)
    fh.write("\n")
print("wrote", MODEL, "and", len(cases), "cases")
