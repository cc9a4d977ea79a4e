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

# gru / rnn, written from coremltools' own numpy references (tests/iOS14/test_recurrent.py:
# gate order r, o, z; reset applied to h before the output weight; "reverse" runs the flipped
# sequence and keeps the states in processing order) and, for iOS18 reset_after=True with an
# input_bias, from PyTorch's GRU equations (n = tanh(W_in x + b_in + r * (W_hn h + b_hn))).
from numpy_ref import LSTM_ACTS as ACTS  # noqa: E402
ACTS = dict(ACTS, sigmoid_hard=ACTS["hard_sigmoid"])
w.rng = np.random.default_rng(909)  # new cases draw from their own stream


def gru_case(cid, s, b, I, H, direction=None, output_sequence=None, bias=True, input_bias=False, reset_after=None,
             ra=None, act=None, prec="fp32", opset=None):
    x, h0 = w.rand([s, b, I], "fp32"), w.rand([b, H], "fp32")
    wih, whh = w.rand([3 * H, I], "fp32"), w.rand([3 * H, H], "fp32")
    bb = w.rand([3 * H], "fp32") if bias else np.zeros(3 * H, np.float32)
    ib = w.rand([3 * H], "fp32") if input_bias else np.zeros(3 * H, np.float32)
    inputs = {"x": T(f"{cid}_x", x, "fp32"), "initial_h": T(f"{cid}_h0", h0, "fp32"),
              "weight_ih": T(f"{cid}_wih", wih, "fp32"), "weight_hh": T(f"{cid}_whh", whh, "fp32")}
    if bias:
        inputs["bias"] = T(f"{cid}_b", bb, "fp32")
    if input_bias:
        inputs["input_bias"] = T(f"{cid}_ib", ib, "fp32")
    for name, val, dt in (("direction", direction, "string"), ("output_sequence", output_sequence, "bool"),
                          ("reset_after", reset_after, "bool"), ("recurrent_activation", ra, "string"),
                          ("activation", act, "string")):
        if val is not None:
            inputs[name] = V(val, dt)
    fr, fa = ACTS[ra or "sigmoid"], ACTS[act or "tanh"]
    Wr, Wo, Wz = (f64(wih[k * H:(k + 1) * H]) for k in range(3))
    Rr, Ro, Rz = (f64(whh[k * H:(k + 1) * H]) for k in range(3))
    br, bo, bz = (f64(bb[k * H:(k + 1) * H]) for k in range(3))
    ir, io, iz = (f64(ib[k * H:(k + 1) * H]) for k in range(3))
    xs = f64(x)[::-1] if direction == "reverse" else f64(x)
    h = f64(h0)
    outs = []
    for t in range(s):
        xt = xs[t]
        r = fr(xt @ Wr.T + ir + h @ Rr.T + br)
        z = fr(xt @ Wz.T + iz + h @ Rz.T + bz)
        if reset_after:
            o = fa(xt @ Wo.T + io + r * (h @ Ro.T + bo))
        else:
            o = fa(xt @ Wo.T + (h * r) @ Ro.T + bo + io)
        h = (1 - z) * o + z * h
        outs.append(h)
    seq = np.stack(outs) if output_sequence else h[None]
    w.add(cid, "gru", inputs, [(seq, "fp32"), (h, "fp32")], precision=prec,
          **({"opset": opset} if opset else {}))


gru_case("gru_defaults", 4, 2, 3, 5)
gru_case("gru_sequence_reverse", 5, 1, 2, 3, direction="reverse", output_sequence=True)
gru_case("gru_no_bias_acts", 3, 2, 4, 2, output_sequence=True, bias=False, ra="tanh", act="sigmoid")
gru_case("gru_hard_sigmoid_relu", 3, 1, 2, 4, output_sequence=True, ra="sigmoid_hard", act="relu")
gru_case("gru_reset_after_pytorch", 4, 2, 3, 3, output_sequence=True, input_bias=True, reset_after=True, opset="ios18")
gru_case("gru_input_bias_reset_before", 3, 1, 2, 2, output_sequence=True, input_bias=True, reset_after=False,
         opset="ios18")


def rnn_case(cid, s, b, I, H, direction=None, output_sequence=None, bias=True, act=None):
    x, h0 = w.rand([s, b, I], "fp32"), w.rand([b, H], "fp32")
    wih, whh = w.rand([H, I], "fp32"), w.rand([H, H], "fp32")
    bb = w.rand([H], "fp32") if bias else np.zeros(H, np.float32)
    inputs = {"x": T(f"{cid}_x", x, "fp32"), "initial_h": T(f"{cid}_h0", h0, "fp32"),
              "weight_ih": T(f"{cid}_wih", wih, "fp32"), "weight_hh": T(f"{cid}_whh", whh, "fp32")}
    if bias:
        inputs["bias"] = T(f"{cid}_b", bb, "fp32")
    for name, val, dt in (("direction", direction, "string"), ("output_sequence", output_sequence, "bool"),
                          ("activation", act, "string")):
        if val is not None:
            inputs[name] = V(val, dt)
    fa = ACTS[act or "tanh"]
    xs = f64(x)[::-1] if direction == "reverse" else f64(x)
    h = f64(h0)
    outs = []
    for t in range(s):
        h = fa(xs[t] @ f64(wih).T + h @ f64(whh).T + f64(bb))
        outs.append(h)
    seq = np.stack(outs) if output_sequence else h[None]
    w.add(cid, "rnn", inputs, [(seq, "fp32"), (h, "fp32")], precision="fp32")


rnn_case("rnn_defaults", 4, 2, 3, 5)
rnn_case("rnn_reverse_sequence", 5, 2, 2, 3, direction="reverse", output_sequence=True)
for a in ("relu", "sigmoid", "sigmoid_hard", "linear"):
    rnn_case(f"rnn_{a}", 3, 1, 2, 3, output_sequence=True, act=a, bias=(a != "linear"))
w.error("gru_bad_weight", "gru", {"x": T("badg_x", w.rand([2, 1, 3], "fp32"), "fp32"),
                                  "initial_h": T("badg_h0", np.zeros([1, 2], np.float32), "fp32"),
                                  "weight_ih": T("badg_wih", w.rand([6, 4], "fp32"), "fp32"),
                                  "weight_hh": T("badg_whh", w.rand([6, 2], "fp32"), "fp32")}, 2, "shape", "weight_ih")
w.error("rnn_bidirectional", "rnn", {"x": T("badr_x", w.rand([2, 1, 3], "fp32"), "fp32"),
                                     "initial_h": T("badr_h0", np.zeros([1, 2], np.float32), "fp32"),
                                     "weight_ih": T("badr_wih", w.rand([2, 3], "fp32"), "fp32"),
                                     "weight_hh": T("badr_whh", w.rand([2, 2], "fp32"), "fp32"),
                                     "direction": V("bidirectional", "string")}, 2, "unsupported", "direction")

w.write()
