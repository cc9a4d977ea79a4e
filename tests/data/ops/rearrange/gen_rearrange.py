"""Oracle cases for the rearrangement family (coremltools 9.0 defs: iOS15/iOS16/iOS17
tensor_transformation.py). The numpy references are the frameworks' own reshape/transpose
recipes, not index arithmetic: TensorFlow's depth_to_space / space_to_batch_nd (done in NHWC and
transposed, as coremltools' TF frontend feeds them), PyTorch's pixel_shuffle, numpy's
sliding_window_view and a plain loop for tf.reverse_sequence.
Run: /opt/ctvenv/bin/python gen_rearrange.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out, tup  # noqa: E402

c = Cases(__file__)
rng = c.rng


def h(*shape):
    return rng.standard_normal(shape).astype(np.float16)


def nchw(a):
    return a.transpose(0, 3, 1, 2)


def nhwc(a):
    return a.transpose(0, 2, 3, 1)


def tf_depth_to_space(x, bs):  # x NHWC
    n, hh, ww, cc = x.shape
    y = x.reshape(n, hh, ww, bs, bs, cc // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, hh * bs, ww * bs, cc // (bs * bs))


def tf_space_to_depth(x, bs):  # x NHWC
    n, hh, ww, cc = x.shape
    y = x.reshape(n, hh // bs, bs, ww // bs, bs, cc).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, hh // bs, ww // bs, bs * bs * cc)


def torch_pixel_shuffle(x, f):  # x NCHW
    n, cc, hh, ww = x.shape
    y = x.reshape(n, cc // (f * f), f, f, hh, ww).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, cc // (f * f), hh * f, ww * f)


def torch_pixel_unshuffle(x, f):
    n, cc, hh, ww = x.shape
    y = x.reshape(n, cc, hh // f, f, ww // f, f).transpose(0, 1, 3, 5, 2, 4)
    return y.reshape(n, cc * f * f, hh // f, ww // f)


def tf_space_to_batch(x, block, pads):  # x NHWC
    x = np.pad(x, [(0, 0), tuple(pads[0]), tuple(pads[1]), (0, 0)])
    n, hh, ww, cc = x.shape
    y = x.reshape(n, hh // block[0], block[0], ww // block[1], block[1], cc).transpose(2, 4, 0, 1, 3, 5)
    return y.reshape(n * block[0] * block[1], hh // block[0], ww // block[1], cc)


def tf_batch_to_space(x, block, crops):  # x NHWC
    nb, hh, ww, cc = x.shape
    n = nb // (block[0] * block[1])
    y = x.reshape(block[0], block[1], n, hh, ww, cc).transpose(2, 3, 0, 4, 1, 5)
    y = y.reshape(n, hh * block[0], ww * block[1], cc)
    return y[:, crops[0][0]:hh * block[0] - crops[0][1], crops[1][0]:ww * block[1] - crops[1][1]]


# depth_to_space / space_to_depth (TF order) and pixel_shuffle / pixel_unshuffle (PyTorch order).
for bs, shape in ((2, (1, 8, 3, 2)), (3, (2, 9, 2, 2)), (1, (1, 3, 2, 2))):
    x = h(*shape)
    c.add(f"depth_to_space_bs{bs}", "depth_to_space", {"x": arr(x, "fp16"), "block_size": lit(bs, "int32")},
          [out(nchw(tf_depth_to_space(nhwc(x), bs)), "fp16")])
    c.add(f"pixel_shuffle_f{bs}", "pixel_shuffle", {"x": arr(x, "fp16"), "upscale_factor": lit(bs, "int32")},
          [out(torch_pixel_shuffle(x, bs), "fp16")])
for bs, shape in ((2, (1, 3, 4, 6)), (3, (2, 2, 3, 6))):
    x = h(*shape)
    c.add(f"space_to_depth_bs{bs}", "space_to_depth", {"x": arr(x, "fp16"), "block_size": lit(bs, "int32")},
          [out(nchw(tf_space_to_depth(nhwc(x), bs)), "fp16")])
    c.add(f"pixel_unshuffle_f{bs}", "pixel_unshuffle", {"x": arr(x, "fp16"), "downscale_factor": lit(bs, "uint32")},
          [out(torch_pixel_unshuffle(x, bs), "fp16")])
xi = rng.integers(-100, 100, (1, 4, 2, 2)).astype(np.int32)
c.add("depth_to_space_int32", "depth_to_space", {"x": arr(xi, "int32"), "block_size": lit(2, "int32")},
      [out(nchw(tf_depth_to_space(nhwc(xi), 2)), "int32")])
x = h(1, 4, 2, 2)
c.add("pixel_shuffle_fp32_mode", "pixel_shuffle", {"x": arr(x, "fp32"), "upscale_factor": lit(2, "int32")},
      [out(torch_pixel_shuffle(x.astype(np.float32), 2), "fp32")], precision="fp32")
c.error("depth_to_space_channels", "depth_to_space", {"x": arr(h(1, 6, 2, 2), "fp16"), "block_size": lit(2, "int32")},
        ["fp16"], contains="divisible")
c.error("space_to_depth_spatial", "space_to_depth", {"x": arr(h(1, 2, 3, 4), "fp16"), "block_size": lit(2, "int32")},
        ["fp16"], contains="divisible")
c.error("pixel_shuffle_rank3", "pixel_shuffle", {"x": arr(h(4, 2, 2), "fp16"), "upscale_factor": lit(2, "int32")},
        ["fp16"], contains="rank 4")
c.error("depth_to_space_zero_block", "depth_to_space", {"x": arr(h(1, 4, 2, 2), "fp16"), "block_size": lit(0, "int32")},
        ["fp16"], contains="block_size")

# space_to_batch / batch_to_space.
for k, (shape, block, pads) in enumerate((((1, 2, 4, 4), [2, 2], [[0, 0], [0, 0]]),
                                          ((2, 3, 3, 5), [2, 3], [[1, 0], [0, 1]]),
                                          ((1, 1, 2, 2), [1, 2], [[0, 2], [1, 1]]))):
    x = h(*shape)
    y = nchw(tf_space_to_batch(nhwc(x), block, pads))
    c.add(f"space_to_batch_{k}", "space_to_batch",
          {"x": arr(x, "fp16"), "block_shape": lit(block, "int32"), "paddings": lit(pads, "int32")}, [out(y, "fp16")])
    c.add(f"batch_to_space_{k}", "batch_to_space",
          {"x": arr(y, "fp16"), "block_shape": lit(block, "int32"), "crops": lit(pads, "int32")},
          [out(nchw(tf_batch_to_space(nhwc(y), block, pads)), "fp16")])
c.error("space_to_batch_not_divisible", "space_to_batch",
        {"x": arr(h(1, 1, 3, 4), "fp16"), "block_shape": lit([2, 2], "int32"), "paddings": lit([[0, 0], [0, 0]], "int32")},
        ["fp16"], contains="divisible")
c.error("batch_to_space_batch", "batch_to_space",
        {"x": arr(h(3, 1, 2, 2), "fp16"), "block_shape": lit([2, 1], "int32"), "crops": lit([[0, 0], [0, 0]], "int32")},
        ["fp16"], contains="batch")
c.error("space_to_batch_paddings_shape", "space_to_batch",
        {"x": arr(h(1, 1, 4, 4), "fp16"), "block_shape": lit([2, 2], "int32"), "paddings": lit([0, 0], "int32")},
        ["fp16"], contains="paddings")

# sliding_windows: numpy's sliding_window_view, then every stride-th window.
for k, (shape, axis, size, stride) in enumerate((((10,), 0, 3, 1), ((2, 9, 3), 1, 4, 2), ((2, 5, 7), -1, 7, 3),
                                                 ((3, 4), -2, 2, None))):
    x = h(*shape)
    ax = axis % len(shape)
    v = np.lib.stride_tricks.sliding_window_view(x, size, axis=ax)  # window dim appended last
    v = np.take(v, np.arange(0, v.shape[ax], stride or 1), axis=ax)
    v = np.moveaxis(v, -1, ax + 1)
    inputs = {"x": arr(x, "fp16"), "axis": lit(axis, "int32"), "size": lit(size, "int32")}
    if stride is not None:
        inputs["stride"] = lit(stride, "int32")
    c.add(f"sliding_windows_{k}", "sliding_windows", inputs, [out(v, "fp16")])
xi = np.arange(12, dtype=np.int32).reshape(3, 4)
c.add("sliding_windows_int32", "sliding_windows", {"x": arr(xi, "int32"), "axis": lit(1, "int32"), "size": lit(2, "int32"),
                                                   "stride": lit(2, "int32")},
      [out(np.stack([xi[:, 0:2], xi[:, 2:4]], axis=1), "int32")])
c.error("sliding_windows_too_big", "sliding_windows", {"x": arr(h(4), "fp16"), "axis": lit(0, "int32"), "size": lit(5, "int32")},
        ["fp16"], contains="size")


# reverse_sequence: tf.reverse_sequence by a loop.
def reverse_sequence(x, lengths, seq_axis, batch_axis):
    y = x.copy()
    for b, n in enumerate(lengths):
        idx = [slice(None)] * x.ndim
        idx[batch_axis] = b
        src = x[tuple(idx)]
        sa = seq_axis - (1 if seq_axis > batch_axis else 0)
        part = np.take(src, np.arange(n)[::-1], axis=sa)
        dst = y[tuple(idx)]
        sl = [slice(None)] * dst.ndim
        sl[sa] = slice(0, n)
        dst[tuple(sl)] = part
    return y


for k, (shape, lengths, seq, batch) in enumerate((((3, 5), [5, 2, 0], 1, 0), ((4, 2, 3), [1, 4], 0, 1),
                                                  ((2, 3, 4, 2), [3, 1, 2], -2, 1), ((3, 4), [3, 2, 1, 0], None, 1))):
    x = h(*shape)
    inputs = {"x": arr(x, "fp16"), "lengths": arr(np.array(lengths, np.int32), "int32")}
    if seq is not None:
        inputs["seq_axis"] = lit(seq, "int32")
    if batch is not None:
        inputs["batch_axis"] = lit(batch, "int32")
    y = reverse_sequence(x, lengths, (0 if seq is None else seq) % x.ndim, batch % x.ndim)
    c.add(f"reverse_sequence_{k}", "reverse_sequence", inputs, [out(y, "fp16")])
xb = rng.integers(0, 2, (2, 3)).astype(np.bool_)
c.add("reverse_sequence_bool", "reverse_sequence", {"x": arr(xb, "bool"), "lengths": lit([3, 2], "int32"),
                                                   "seq_axis": lit(1, "int32"), "batch_axis": lit(0, "int32")},
      [out(reverse_sequence(xb, [3, 2], 1, 0), "bool")])
c.error("reverse_sequence_length_too_long", "reverse_sequence",
        {"x": arr(h(2, 3), "fp16"), "lengths": lit([4, 1], "int32"), "seq_axis": lit(1, "int32")}, ["fp16"], contains="lengths")
c.error("reverse_sequence_same_axes", "reverse_sequence",
        {"x": arr(h(2, 3), "fp16"), "lengths": lit([1, 1], "int32"), "seq_axis": lit(0, "int32"), "batch_axis": lit(0, "int32")},
        ["fp16"], contains="axis")

# reshape_like: the output shape is the concatenation of ref_tensors[i].shape[begins[i]:ends[i]].
x = h(2, 3, 5, 6)
r0, r1 = h(2, 3, 4), h(1, 5, 6)
c.add("reshape_like_doc_example", "reshape_like",
      {"x": arr(x, "fp16"), "ref_tensors": tup([arr(r0, "fp16"), arr(r1, "fp16")]),
       "begins": tup([lit(0, "int32"), lit(1, "int32")]), "ends": tup([lit(2, "int32"), lit(0, "int32")]),
       "end_masks": tup([lit(False, "bool"), lit(True, "bool")])},
      [out(x.reshape(r0.shape[0:2] + r1.shape[1:]), "fp16")])
xi = np.arange(24, dtype=np.int32)
ri = np.zeros((4, 6), np.int32)
c.add("reshape_like_int32_one_ref", "reshape_like",
      {"x": arr(xi, "int32"), "ref_tensors": tup([arr(ri, "int32")]), "begins": tup([lit(0, "int32")]),
       "ends": tup([lit(2, "int32")]), "end_masks": tup([lit(False, "bool")])}, [out(xi.reshape(4, 6), "int32")])
c.error("reshape_like_count", "reshape_like",
        {"x": arr(h(5), "fp16"), "ref_tensors": tup([arr(h(2, 3), "fp16")]), "begins": tup([lit(0, "int32")]),
         "ends": tup([lit(2, "int32")]), "end_masks": tup([lit(False, "bool")])}, ["fp16"], contains="elements")

c.write()
