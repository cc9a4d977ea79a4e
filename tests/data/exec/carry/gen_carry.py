"""Explicit-state fixture for exec's sequence mode with --carry: a linear recurrence whose state
is an input/output pair (as Silero VAD's hidden and cell state), written by coremltools (pinned
in tests/generators/requirements.txt) as an .mlpackage that takes one chunk of 4 steps, and
numpy's ONE pass of the recurrence over the whole sequence: the oracle of the carry tests
(tests/cli/golden_exec_sequence_test.cpp). Run as 3 calls with h_out carried into h, the
chunks' outputs must equal the one pass.

Program (fp32, iOS17 opset), per chunk x [1, 4, 8] and state h [1, 8]:
    h_t = A * h_{t-1} + x_t          (A = 0.75, t = 1..4, h_0 = h)
    y   = [h_1, h_2, h_3, h_4]       as L @ x + p * h  (L[i][j] = A^(i-j) for j <= i, p_i = A^(i+1))
    h_out = h_4
Files: x.npy [1, 12, 8] (the whole sequence), y_one_pass.npy [1, 12, 8], h_final.npy [1, 8],
calls.npz (x stacked per call: x[k] is call k's chunk; np.savez, stored members) and
calls_deflate.npz (the same, np.savez_compressed).
recurrence_a070.mlpackage is the same program with A = 0.70: a "candidate build" for probe's
sequence mode against recurrence.mlpackage as its baseline; probe_cosines.json holds numpy's
cosine of every output row (y per position, h_out whole) per call, each shard carrying its own
state, and the same without the carry (every call from h = 0).

Run: /opt/ctvenv/bin/python gen_carry.py
"""
import json
import os

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HERE = os.path.dirname(os.path.abspath(__file__))
A = 0.75
T, D, CALLS = 4, 8, 3

A_CANDIDATE = 0.70


def make_program(a):
    lower = np.array([[a ** (i - j) if j <= i else 0.0 for j in range(T)] for i in range(T)], np.float32)
    powers = np.array([a ** (i + 1) for i in range(T)], np.float32).reshape(1, T, 1)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, T, D), dtype=types.fp32),
                             mb.TensorSpec(shape=(1, D), dtype=types.fp32)],
                opset_version=ct.target.iOS17)
    def recurrence(x, h):
        mixed = mb.matmul(x=lower, y=x, name="mixed")                      # [1, 4, 8]
        carried = mb.mul(x=powers, y=mb.expand_dims(x=h, axes=[1], name="h3"), name="carried")
        y = mb.add(x=mixed, y=carried, name="y")
        h_out = mb.squeeze(x=mb.slice_by_index(x=y, begin=[0, T - 1, 0], end=[1, T, D], name="last"),
                           axes=[1], name="h_out")
        return y, h_out
    return recurrence


def run_calls(a, x, carry):
    """Per call: y [4, 8] and h_out [8], float64, state carried across calls or not."""
    out, h = [], np.zeros(D)
    for k in range(CALLS):
        if not carry:
            h = np.zeros(D)
        ys = []
        for t in range(T):
            h = a * h + x[0, k * T + t].astype(np.float64)
            ys.append(h.copy())
        out.append((np.array(ys), h.copy()))
    return out


def cos(u, v):
    return float(np.dot(u, v) / np.sqrt(np.dot(u, u) * np.dot(v, v)))


def main():
    for name, a in (("recurrence", A), ("recurrence_a070", A_CANDIDATE)):
        model = ct.convert(make_program(a), convert_to="mlprogram",
                           minimum_deployment_target=ct.target.iOS17,
                           compute_precision=ct.precision.FLOAT32, skip_model_load=True)
        model.save(os.path.join(HERE, name + ".mlpackage"))
    rng = np.random.default_rng(20261123)
    x = rng.standard_normal((1, T * CALLS, D)).astype(np.float32)
    # One pass over the whole sequence, step by step in float64.
    h = np.zeros(D)
    ys = []
    for t in range(T * CALLS):
        h = A * h + x[0, t].astype(np.float64)
        ys.append(h.copy())
    y = np.array(ys, np.float32).reshape(1, T * CALLS, D)
    np.save(os.path.join(HERE, "x.npy"), x)
    np.save(os.path.join(HERE, "y_one_pass.npy"), y)
    np.save(os.path.join(HERE, "h_final.npy"), h.astype(np.float32).reshape(1, D))
    chunks = np.stack([x[:, k * T:(k + 1) * T, :] for k in range(CALLS)])  # [3, 1, 4, 8]
    np.savez(os.path.join(HERE, "calls.npz"), x=chunks)
    np.savez_compressed(os.path.join(HERE, "calls_deflate.npz"), x=chunks)
    cosines = {}
    for carry in (True, False):
        base, cand = run_calls(A, x, carry), run_calls(A_CANDIDATE, x, carry)
        cosines["carry" if carry else "no_carry"] = [
            {"y": [cos(cand[k][0][t], base[k][0][t]) for t in range(T)],
             "h_out": cos(cand[k][1], base[k][1])} for k in range(CALLS)]
    with open(os.path.join(HERE, "probe_cosines.json"), "w") as f:
        json.dump(cosines, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
