"""Oracle cases for lstm, written from the coremltools iOS15 lstm definition (gate order
i, f, o, z; bias = input + recurrent bias; peephole i, f, o; clip on the cell state), the same
recurrence as coremltools' own numpy test reference. Run: /opt/ctvenv/bin/python gen_recurrent.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from case_writer import CaseWriter, f64  # noqa: E402
from numpy_ref import lstm_direction as run_dir  # noqa: E402

w = CaseWriter(__file__, seed=808)
T, V = w.tensor, w.value

def lstm_case(cid, s, b, I, H, direction="forward", output_sequence=None, bias=True, peephole=False,
              init=True, ra=None, ca=None, act=None, clip=None, prec="fp32"):
    D = 2 if direction == "bidirectional" else 1
    x = w.rand([s, b, I], "fp32")
    inputs = {"x": T(f"{cid}_x", x, "fp32")}
    h0 = w.rand([b, D * H], "fp32") if init else np.zeros([b, D * H], np.float32)
    c0 = w.rand([b, D * H], "fp32") if init else np.zeros([b, D * H], np.float32)
    inputs["initial_h"] = T(f"{cid}_h0", h0, "fp32")
    inputs["initial_c"] = T(f"{cid}_c0", c0, "fp32")
    for name, val in (("direction", direction), ("recurrent_activation", ra), ("cell_activation", ca),
                      ("activation", act)):
        if val is not None:
            inputs[name] = V(val, "string")
    if output_sequence is not None:
        inputs["output_sequence"] = V(output_sequence, "bool")
    if clip is not None:
        inputs["clip"] = V(clip, "fp32")
    seqs, hs, cs = [], [], []
    for di, suffix in enumerate([""] if D == 1 else ["", "_back"]):
        wih = w.rand([4 * H, I], "fp32")
        whh = w.rand([4 * H, H], "fp32")
        inputs["weight_ih" + suffix] = T(f"{cid}_wih{suffix}", wih, "fp32")
        inputs["weight_hh" + suffix] = T(f"{cid}_whh{suffix}", whh, "fp32")
        bb = np.zeros(4 * H)
        pp = np.zeros(3 * H)
        if bias:
            bb = w.rand([4 * H], "fp32")
            inputs["bias" + suffix] = T(f"{cid}_b{suffix}", bb, "fp32")
        if peephole:
            pp = w.rand([3 * H], "fp32")
            inputs["peephole" + suffix] = T(f"{cid}_p{suffix}", pp, "fp32")
        reverse = direction == "reverse" or di == 1
        seq, h, c = run_dir(f64(x), f64(h0[:, di * H:(di + 1) * H]), f64(c0[:, di * H:(di + 1) * H]),
                            f64(wih), f64(whh), f64(bb), f64(pp), reverse, ra or "sigmoid", ca or "tanh",
                            act or "tanh", clip)
        seqs.append(seq)
        hs.append(h)
        cs.append(c)
    seq = np.concatenate(seqs, axis=-1)
    hN = np.concatenate(hs, axis=-1)
    cN = np.concatenate(cs, axis=-1)
    if not output_sequence:
        seq = hN[None]
    w.add(cid, "lstm", inputs, [(seq, "fp32"), (hN, "fp32"), (cN, "fp32")], precision=prec)


# The corpus shape: one step, batch 1, 128 -> 128 would be large; same structure, smaller.
lstm_case("lstm_forward_seq", 4, 2, 5, 3, output_sequence=True)
lstm_case("lstm_forward_last_only_defaults", 3, 1, 4, 6, init=False)
lstm_case("lstm_reverse", 5, 2, 3, 4, direction="reverse", output_sequence=True, bias=False)
lstm_case("lstm_bidirectional_peephole_clip", 4, 2, 3, 5, direction="bidirectional", output_sequence=True,
          peephole=True, clip=0.3)
lstm_case("lstm_bidirectional_last", 3, 1, 2, 3, direction="bidirectional", output_sequence=False)
lstm_case("lstm_other_activations", 3, 2, 4, 3, output_sequence=True, ra="hard_sigmoid", ca="relu",
          act="linear")
lstm_case("lstm_scaled_tanh_fp16_mode", 2, 1, 8, 16, output_sequence=True, ca="scaled_tanh", prec="fp16")
w.error("lstm_bad_weight_shape", "lstm",
        {"x": T("bad_x", w.rand([2, 1, 3], "fp32"), "fp32"),
         "initial_h": T("bad_h0", np.zeros([1, 2], np.float32), "fp32"),
         "initial_c": T("bad_c0", np.zeros([1, 2], np.float32), "fp32"),
         "weight_ih": T("bad_wih", w.rand([8, 4], "fp32"), "fp32"),
         "weight_hh": T("bad_whh", w.rand([8, 2], "fp32"), "fp32")}, 3, "shape", "weight_ih")
w.error("lstm_bad_activation", "lstm",
        {"x": T("bada_x", w.rand([2, 1, 3], "fp32"), "fp32"),
         "initial_h": T("bada_h0", np.zeros([1, 2], np.float32), "fp32"),
         "initial_c": T("bada_c0", np.zeros([1, 2], np.float32), "fp32"),
         "weight_ih": T("bada_wih", w.rand([8, 3], "fp32"), "fp32"),
         "weight_hh": T("bada_whh", w.rand([8, 2], "fp32"), "fp32"),
         "activation": V("gelu", "string")}, 3, "unsupported", "gelu")

w.write()
