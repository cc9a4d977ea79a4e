#!/usr/bin/env python3
"""Writes metrics_cases.json: inputs and numpy-computed expected values for the fidelity
metrics (tests/metrics/metrics_oracle_test.cpp reads it). numpy is the independent oracle: the
C++ code under test never produced any of these numbers.

Run: /opt/ctvenv/bin/python tests/data/metrics/gen_metrics_cases.py
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20240611)


def softmax_log(x):
    m = np.max(x)
    return x - (m + np.log(np.sum(np.exp(x - m))))


def row_metrics(c, r, logits, k):
    c = np.asarray(c, dtype=np.float64)
    r = np.asarray(r, dtype=np.float64)
    nc, nr = np.linalg.norm(c), np.linalg.norm(r)
    out = {
        "cosine": float(np.dot(c, r) / (nc * nr)),
        "norm_ratio": float(nc / nr),
        "rel_l2": float(np.linalg.norm(c - r) / nr),
        "max_abs": float(np.max(np.abs(c - r))),
        "snr_db": float(10 * np.log10(np.sum(r * r) / np.sum((r - c) ** 2))),
    }
    if logits:
        out["top1"] = 1.0 if int(np.argmax(c)) == int(np.argmax(r)) else 0.0
        tc = set(np.argsort(-c, kind="stable")[:k].tolist())
        tr = set(np.argsort(-r, kind="stable")[:k].tolist())
        out["topk_overlap"] = len(tc & tr) / min(k, len(r))
        lp, lq = softmax_log(r), softmax_log(c)
        out["kl"] = float(np.sum(np.exp(lp) * (lp - lq)))
    return out


def vector_cases():
    cases = []
    r = rng.standard_normal(64)
    cases.append(("small_noise", r + 0.01 * rng.standard_normal(64), r, False, 5))
    cases.append(("large_noise", r + 0.5 * rng.standard_normal(64), r, False, 5))
    cases.append(("scaled_0.5", 0.5 * r, r, False, 5))
    cases.append(("negated", -r, r, False, 5))
    cases.append(("orthogonal_ish", rng.standard_normal(64), r, False, 5))
    big = 1e4 * rng.standard_normal(32)
    cases.append(("large_magnitude", big * (1 + 1e-3 * rng.standard_normal(32)), big, False, 5))
    logits = 4 * rng.standard_normal(50)
    cases.append(("logits_close", logits + 0.05 * rng.standard_normal(50), logits, True, 5))
    cases.append(("logits_far", logits + 2.0 * rng.standard_normal(50), logits, True, 5))
    cases.append(("logits_shifted", logits + 3.0, logits, True, 5))  # softmax-invariant
    cases.append(("logits_k10", logits + 1.0 * rng.standard_normal(50), logits, True, 10))
    huge = 300 * rng.standard_normal(40)  # exp() would overflow without max subtraction
    cases.append(("logits_huge", huge + 5 * rng.standard_normal(40), huge, True, 3))
    out = []
    for name, c, r, logits, k in cases:
        out.append({"name": name, "candidate": [float(x) for x in c],
                    "reference": [float(x) for x in r], "logits": logits, "topk": k,
                    "expected": row_metrics(c, r, logits, k)})
    return out


def percentile_cases():
    out = []
    for n, p in [(8, 5.0), (8, 25.0), (3, 10.0), (17, 5.0), (1, 5.0), (10, 0.0), (10, 100.0)]:
        v = rng.uniform(0.9, 1.0, n)
        out.append({"values": [float(x) for x in v], "p": p,
                    "expected": float(np.percentile(v, p))})
    return out


def tensor_cases():
    """Whole tensors split along a position axis, expected per-row metrics."""
    out = []
    specs = [
        ("hidden_b1", [1, 4, 16], 1, "hidden", 5),
        ("hidden_b2_pos1", [2, 3, 8], 1, "hidden", 5),  # a row gathers both batch entries
        ("hidden_pos0", [5, 6], 0, "hidden", 5),
        ("logits_b1", [1, 3, 32], 1, "logits", 5),
        ("whole_tensor", [3, 7], None, "output", 5),
    ]
    for name, shape, pa, kind, k in specs:
        r = rng.standard_normal(shape)
        c = r + 0.2 * rng.standard_normal(shape)
        rows = []
        if pa is None:
            rows.append(dict(position=None, **row_metrics(c.ravel(), r.ravel(), kind == "logits", k)))
        else:
            for p in range(shape[pa]):
                cr = np.take(c, p, axis=pa).ravel()
                rr = np.take(r, p, axis=pa).ravel()
                rows.append(dict(position=p, **row_metrics(cr, rr, kind == "logits", k)))
        out.append({"name": name, "shape": shape, "position_axis": pa, "kind": kind, "topk": k,
                    "candidate": [float(x) for x in c.ravel()],
                    "reference": [float(x) for x in r.ravel()], "rows": rows})
    return out


def main():
    doc = {"generator": "tests/data/metrics/gen_metrics_cases.py", "numpy": np.__version__,
           "vectors": vector_cases(), "percentiles": percentile_cases(),
           "tensors": tensor_cases()}
    with open(os.path.join(HERE, "metrics_cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
