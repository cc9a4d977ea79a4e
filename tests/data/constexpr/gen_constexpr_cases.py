#!/usr/bin/env python3
"""Builds the iOS18 constexpr test packages and their expected dense weights.

Each case is a tiny iOS18 program whose weight `w` is produced by constexpr ops (per-grouped
channel LUTs, vector LUTs, blockwise shift-scale, sparse masks and chains of them) and fed
into `add(x, w)` so it is kept. coremltools writes the package; the expected dense weight is
computed here with plain numpy from the same random arrays, without coremltools' decoders.

Outputs (next to this script): <case>.mlpackage and <case>.npy.
Run with /opt/ctvenv/bin/python (coremltools 9.0). CI never runs this; outputs are committed.
"""
import os
import shutil

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20260805)

NP_SUBBYTE = {
    1: types.np_uint1_dtype,
    2: types.np_uint2_dtype,
    3: types.np_uint3_dtype,
    4: types.np_uint4_dtype,
    6: types.np_uint6_dtype,
    8: np.uint8,
}


# ------------------------------------------------------------------------------------------
# numpy oracles (independent of coremltools' decompress helpers)

def lut_dense(indices, lut, vector_axis=None):
    """out[p] = lut[p // block, indices[p], v], vector lanes laid along vector_axis."""
    k = indices.ndim
    groups = lut.shape[:k]
    vsize = lut.shape[-1]
    block = [indices.shape[d] // groups[d] for d in range(k)]
    coords = np.indices(indices.shape)
    group_idx = tuple(coords[d] // block[d] for d in range(k))
    # values[..., v]: the vector each index position expands to
    values = lut[group_idx + (indices.astype(np.int64),)]
    if vsize == 1:
        return values[..., 0]
    axis = vector_axis % k
    # Move lanes next to the vector axis, then merge (p_axis, v) -> p_axis * V + v.
    values = np.moveaxis(values, -1, axis + 1)
    shape = list(indices.shape)
    shape[axis] *= vsize
    return values.reshape(shape)


def repeat_blocks(param, shape):
    for axis, (full, small) in enumerate(zip(shape, param.shape)):
        param = np.repeat(param, full // small, axis=axis)
    return param


def shift_scale(data, scale, offset=None):
    """numpy float arithmetic in the scale dtype: (data - offset) * scale."""
    d = data.astype(scale.dtype)
    s = repeat_blocks(scale, data.shape)
    if offset is not None:
        o = repeat_blocks(offset, data.shape).astype(scale.dtype)
        d = (d - o).astype(scale.dtype)
    return (s * d).astype(scale.dtype)


def sparse_dense(mask, nonzero):
    out = np.zeros(mask.shape, dtype=nonzero.dtype)
    out[mask.astype(bool)] = nonzero
    return out


# ------------------------------------------------------------------------------------------
# builders

def subbyte(values, nbits):
    return np.asarray(values).astype(NP_SUBBYTE[nbits])


def random_indices(shape, nbits):
    return RNG.integers(0, 2**nbits, size=shape).astype(np.uint8)


def random_lut(shape, dtype=np.float16):
    if dtype in (np.int8, np.uint8):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    return RNG.normal(0, 1, size=shape).astype(dtype)


def random_mask(shape, density=0.4):
    mask = (RNG.random(shape) < density).astype(np.uint8)
    mask.flat[0] = 1  # never empty
    return mask


def save_case(name, build_weight, out_shape, out_dtype, expected, their_decode=None,
              target=ct.target.iOS18):
    in_dtype = types.fp16 if out_dtype == np.float16 else types.fp32
    built = []

    @mb.program(input_specs=[mb.TensorSpec(shape=out_shape, dtype=in_dtype)],
                opset_version=target)
    def prog(x):
        w = build_weight()
        built.append(w)
        if out_dtype not in (np.float16, np.float32):
            w = mb.cast(x=w, dtype="fp32", name="w_fp32")  # integer LUTs: keep them used
        return mb.add(x=x, y=w, name="y")

    model = ct.convert(prog, convert_to="mlprogram",
                       minimum_deployment_target=target,
                       pass_pipeline=ct.PassPipeline.EMPTY,
                       skip_model_load=True)
    path = os.path.join(HERE, name + ".mlpackage")
    if os.path.exists(path):
        shutil.rmtree(path)
    model.save(path)
    assert expected.shape == tuple(out_shape), (name, expected.shape, out_shape)
    assert expected.dtype == out_dtype, (name, expected.dtype)
    np.save(os.path.join(HERE, name + ".npy"), np.ascontiguousarray(expected))
    # Cross-check only (the expected values come from the numpy code above): coremltools'
    # own decoder must agree bit for bit, or the oracle misreads the op semantics.
    theirs = (their_decode or (lambda w: w.op.materialized_val_inference()))(built[0])
    if isinstance(theirs, tuple):
        theirs = theirs[-1]
    assert theirs.shape == expected.shape and np.array_equal(
        np.ascontiguousarray(theirs).view(np.uint8),
        np.ascontiguousarray(expected.astype(theirs.dtype)).view(np.uint8)), name
    # The saved program must still hold the constexpr ops (nothing folded or re-compressed).
    spec = model.get_spec()
    fn = spec.mlProgram.functions["main"]
    saved = [op.type for op in fn.block_specializations[fn.opset].operations]
    wanted = [op.op_type for op in prog.functions["main"].operations
              if op.op_type.startswith("constexpr_")]
    assert [t for t in saved if t.startswith("constexpr_")] == wanted, (name, saved, wanted)
    assert "add" in saved and (wanted or "const" in saved), (name, saved)
    print(f"{name}: {saved} -> {expected.dtype} {expected.shape}")


def lut_case(name, nbits, ishape, groups, vsize=1, vector_axis=None, lut_dtype=np.float16):
    indices = random_indices(ishape, nbits)
    lut = random_lut(tuple(groups) + (2**nbits, vsize), lut_dtype)
    expected = lut_dense(indices, lut, vector_axis)

    def build():
        kwargs = {}
        if vector_axis is not None:
            kwargs["vector_axis"] = np.int32(vector_axis)
        return mb.constexpr_lut_to_dense(indices=subbyte(indices, nbits), lut=lut, name="w",
                                         **kwargs)

    save_case(name, build, expected.shape, lut_dtype, expected)


def shift_scale_case(name, data, scale, offset=None, data_nbits=None, offset_nbits=None):
    expected = shift_scale(data, scale, offset)

    def typed(arr, nbits):
        if nbits == 4:
            return arr.astype(types.np_int4_dtype if arr.dtype == np.int8 else types.np_uint4_dtype)
        return arr

    def build():
        kwargs = {}
        if offset is not None:
            kwargs["offset"] = typed(offset, offset_nbits)
        return mb.constexpr_blockwise_shift_scale(data=typed(data, data_nbits), scale=scale,
                                                  name="w", **kwargs)

    save_case(name, build, data.shape, scale.dtype.type, expected)


def main():
    plain_cases()
    # Per-grouped-channel scalar LUTs, every index width, groups along axis 0 and axis 1.
    lut_case("lut_uint1_axis0", 1, (8, 6), (4, 1))
    lut_case("lut_uint2_axis1", 2, (4, 12), (1, 3))
    lut_case("lut_uint3_axis0", 3, (6, 10), (2, 1))
    lut_case("lut_uint4_conv", 4, (8, 4, 1, 1), (4, 1, 1, 1))
    lut_case("lut_uint6_axis1", 6, (4, 32), (1, 2))
    lut_case("lut_uint8_fp32", 8, (4, 64), (2, 1), lut_dtype=np.float32)
    lut_case("lut_uint4_int8", 4, (6, 8), (3, 2), lut_dtype=np.int8)
    # Vector LUTs (V = 2) along axis 0 and the last axis.
    lut_case("lut_vector_axis0", 2, (4, 6), (1, 1), vsize=2, vector_axis=0)
    lut_case("lut_vector_axis_last", 3, (3, 5), (3, 1), vsize=2, vector_axis=-1)

    # Blockwise shift-scale.
    shift_scale_case("bss_int8_per_channel",
                     RNG.integers(-128, 128, size=(16, 32)).astype(np.int8),
                     (RNG.random((16, 1)) * 0.02 + 0.001).astype(np.float16))
    shift_scale_case("bss_int8_block_offset",
                     RNG.integers(-128, 128, size=(8, 64)).astype(np.int8),
                     (RNG.random((8, 4)) * 0.02 + 0.001).astype(np.float16),
                     RNG.integers(-20, 20, size=(8, 4)).astype(np.int8))
    shift_scale_case("bss_int4_block",
                     RNG.integers(-8, 8, size=(8, 64)).astype(np.int8),
                     (RNG.random((8, 2)) * 0.1 + 0.01).astype(np.float16), data_nbits=4)
    shift_scale_case("bss_int4_block_offset",
                     RNG.integers(-8, 8, size=(8, 64)).astype(np.int8),
                     (RNG.random((8, 2)) * 0.1 + 0.01).astype(np.float16),
                     RNG.integers(-8, 8, size=(8, 2)).astype(np.int8),
                     data_nbits=4, offset_nbits=4)
    shift_scale_case("bss_uint4_offset",
                     RNG.integers(0, 16, size=(8, 32)).astype(np.uint8),
                     (RNG.random((8, 4)) * 0.1 + 0.01).astype(np.float16),
                     RNG.integers(0, 16, size=(8, 4)).astype(np.uint8),
                     data_nbits=4, offset_nbits=4)
    shift_scale_case("bss_uint8_fp32_scale",
                     RNG.integers(0, 256, size=(4, 6, 8)).astype(np.uint8),
                     (RNG.random((2, 3, 1)) * 0.01).astype(np.float32),
                     RNG.integers(100, 156, size=(2, 3, 1)).astype(np.uint8))

    # Sparse masks.
    mask = random_mask((8, 16))
    nonzero = RNG.normal(size=int(mask.sum())).astype(np.float16)
    save_case("sparse_fp16",
              lambda: mb.constexpr_sparse_to_dense(nonzero_data=nonzero,
                                                   mask=subbyte(mask, 1), name="w"),
              mask.shape, np.float16, sparse_dense(mask, nonzero))

    # lut_to_sparse -> sparse_to_dense (scalar and vector LUTs).
    mask = random_mask((8, 12))
    sp_idx = random_indices((int(mask.sum()),), 4)
    lut = random_lut((1, 2, 16, 1))
    dense_idx = sparse_dense(mask, sp_idx)
    expected = np.where(mask != 0, lut_dense(dense_idx, lut), np.float16(0))

    def lut_sparse_chain():
        m, nz = mb.constexpr_lut_to_sparse(indices_mask=subbyte(mask, 1),
                                           indices_nonzero_data=subbyte(sp_idx, 4), lut=lut,
                                           name="lut_sparse")
        return mb.constexpr_sparse_to_dense(nonzero_data=nz, mask=m, name="w")

    save_case("lut_to_sparse_chain", lut_sparse_chain, mask.shape, np.float16, expected)

    vmask = random_mask((4, 6))
    v_idx = random_indices((int(vmask.sum()),), 2)
    vlut = random_lut((1, 1, 4, 2))
    v_dense = lut_dense(sparse_dense(vmask, v_idx), vlut, 0)
    v_expected = np.where(np.repeat(vmask, 2, axis=0) != 0, v_dense, np.float16(0))

    def lut_sparse_vector_chain():
        m, nz = mb.constexpr_lut_to_sparse(indices_mask=subbyte(vmask, 1),
                                           indices_nonzero_data=subbyte(v_idx, 2), lut=vlut,
                                           vector_axis=np.int32(0), name="lut_sparse")
        return mb.constexpr_sparse_to_dense(nonzero_data=nz, mask=m, name="w")

    save_case("lut_to_sparse_vector_chain", lut_sparse_vector_chain, v_expected.shape,
              np.float16, v_expected)

    # sparse_blockwise_shift_scale -> sparse_to_dense.
    smask = random_mask((8, 16))
    s_data = RNG.integers(-128, 128, size=int(smask.sum())).astype(np.int8)
    s_scale = (RNG.random((8, 1)) * 0.02 + 0.001).astype(np.float16)
    s_offset = RNG.integers(-5, 5, size=(8, 1)).astype(np.int8)
    s_expected = np.where(smask != 0, shift_scale(sparse_dense(smask, s_data), s_scale, s_offset),
                          np.float16(0))

    def sparse_shift_chain():
        m, nz = mb.constexpr_sparse_blockwise_shift_scale(
            data_mask=subbyte(smask, 1), nonzero_data=s_data, scale=s_scale, offset=s_offset,
            name="sparse_shift")
        return mb.constexpr_sparse_to_dense(nonzero_data=nz, mask=m, name="w")

    save_case("sparse_blockwise_chain", sparse_shift_chain, smask.shape, np.float16, s_expected)

    # A quantized LUT: blockwise_shift_scale produces the LUT of a lut_to_dense.
    q_lut = RNG.integers(-128, 128, size=(2, 1, 16, 1)).astype(np.int8)
    q_scale = (RNG.random((2, 1, 1, 1)) * 0.02 + 0.001).astype(np.float16)
    q_idx = random_indices((8, 8), 4)
    q_expected = lut_dense(q_idx, shift_scale(q_lut, q_scale))

    def quantized_lut_chain():
        lut_w = mb.constexpr_blockwise_shift_scale(data=q_lut, scale=q_scale, name="lut_q")
        return mb.constexpr_lut_to_dense(indices=subbyte(q_idx, 4), lut=lut_w, name="w")

    def their_quantized_lut(w):
        # coremltools' lut_to_dense cannot follow a chained LUT by itself.
        lut_values = w.op.lut.op.materialized_val_inference()
        return w.op.decompress(w.op.indices.val, lut_values, None)

    save_case("quantized_lut_chain", quantized_lut_chain, q_idx.shape, np.float16, q_expected,
              their_quantized_lut)


def plain_cases():
    # const and constexpr_cast (iOS18 input form), and the iOS16 attribute form of
    # constexpr_affine_dequantize written through the protobuf.
    val = RNG.normal(size=(4, 8)).astype(np.float16)
    save_case("const_fp16", lambda: mb.const(val=val, name="w"), val.shape, np.float16, val,
              lambda w: w.val)

    src = RNG.normal(size=(3, 7)).astype(np.float16)
    save_case("cast_fp16_to_fp32",
              lambda: mb.constexpr_cast(source_val=src, output_dtype="fp32", name="w"),
              src.shape, np.float32, src.astype(np.float32))

    q = RNG.integers(-128, 128, size=(6, 5)).astype(np.int8)
    zp = RNG.integers(-10, 10, size=(5,)).astype(np.int8)
    sc = (RNG.random(5) * 0.05 + 0.001).astype(np.float16)
    expected = ((q.astype(np.float32) - zp.astype(np.float32)) * sc.astype(np.float32)).astype(np.float16)
    save_case("affine_int8_ios16_axis1",
              lambda: mb.constexpr_affine_dequantize(quantized_data=q, zero_point=zp, scale=sc,
                                                     axis=1, name="w"),
              q.shape, np.float16, expected, target=ct.target.iOS16)

    formats_cases()


def formats_cases():
    """Forms the weight-format table names that no case above holds (its own generator, so the
    cases above keep their random data): float data in a blockwise shift-scale, and the iOS16
    affine form with one scale and zero point for the whole tensor."""
    rng = np.random.default_rng(2026)
    shift_scale_case("bss_fp16_data_offset",
                     rng.normal(0, 4, size=(6, 16)).astype(np.float16),
                     (rng.random((6, 2)) * 0.5 + 0.1).astype(np.float16),
                     rng.normal(0, 1, size=(6, 2)).astype(np.float16))
    q = rng.integers(-128, 128, size=(4, 10)).astype(np.int8)
    zp = np.int8(-7)
    sc = np.float16(0.03125)
    expected = ((q.astype(np.float32) - np.float32(zp)) * np.float32(sc)).astype(np.float16)
    save_case("affine_int8_ios16_per_tensor",
              lambda: mb.constexpr_affine_dequantize(quantized_data=q, zero_point=zp, scale=sc,
                                                     axis=0, name="w"),
              q.shape, np.float16, expected, target=ct.target.iOS16)


if __name__ == "__main__":
    main()
