"""shardgate.compare against metrics computed here with numpy (the oracle), and the fixed
rules: degenerate rows, NaN, shape mismatches."""

import math

import numpy as np
import pytest

import shardgate


def np_metrics(c, r):
    c, r = c.astype(np.float64).ravel(), r.astype(np.float64).ravel()
    return {
        "cosine": np.dot(c, r) / (np.linalg.norm(c) * np.linalg.norm(r)),
        "norm_ratio": np.linalg.norm(c) / np.linalg.norm(r),
        "rel_l2": np.linalg.norm(c - r) / np.linalg.norm(r),
        "max_abs": np.max(np.abs(c - r)),
        "snr_db": 10 * np.log10(np.sum(r * r) / np.sum((r - c) ** 2)),
    }


def test_per_position_metrics_match_numpy():
    rng = np.random.default_rng(7)
    ref = rng.standard_normal((1, 6, 32)).astype(np.float16)
    cand = (ref.astype(np.float32) + 0.1 * rng.standard_normal((1, 6, 32))).astype(np.float16)
    rows = shardgate.compare(cand, ref, position_axis=1)["rows"]
    assert [r["position"] for r in rows] == list(range(6))
    for p, row in enumerate(rows):
        want = np_metrics(cand[:, p], ref[:, p])
        for name, value in want.items():
            assert row[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name
    assert "top1" not in rows[0]


def test_logits_metrics_match_numpy():
    rng = np.random.default_rng(3)
    ref = rng.standard_normal((1, 4, 50)).astype(np.float32)
    cand = ref + 0.5 * rng.standard_normal((1, 4, 50)).astype(np.float32)
    rows = shardgate.compare(cand, ref, kind="logits", position_axis=1, topk=5)["rows"]
    for p, row in enumerate(rows):
        c, r = cand[0, p].astype(np.float64), ref[0, p].astype(np.float64)
        assert row["top1"] == float(np.argmax(c) == np.argmax(r))
        top = lambda x: set(np.argsort(-x, kind="stable")[:5])
        assert row["topk_overlap"] == pytest.approx(len(top(c) & top(r)) / 5)
        lp = r - r.max() - np.log(np.sum(np.exp(r - r.max())))
        lq = c - c.max() - np.log(np.sum(np.exp(c - c.max())))
        assert row["kl"] == pytest.approx(np.sum(np.exp(lp) * (lp - lq)), rel=1e-9)


def test_degenerate_rows_and_nonfinite_are_never_a_pass():
    ref = np.zeros((1, 2, 4), np.float16)
    cand = np.zeros((1, 2, 4), np.float16)
    ref[0, 1] = 1
    cand[0, 1] = 1
    rows = shardgate.compare(cand, ref, position_axis=1)["rows"]
    assert rows[0]["degenerate"] and "cosine" not in rows[0]
    assert rows[1]["cosine"] == pytest.approx(1.0)
    assert math.isnan(shardgate.min_cosine(np.zeros(4), np.zeros(4)))  # no evidence
    cand[0, 1, 2] = np.inf
    result = shardgate.compare(cand, ref, position_axis=1)
    assert result["nonfinite"]["tensor"] == "candidate" and result["nonfinite"]["position"] == 1
    assert math.isnan(shardgate.min_cosine(cand, ref, position_axis=1))


def test_shape_mismatch_is_bad_input():
    with pytest.raises(shardgate.Error) as e:
        shardgate.compare(np.zeros((1, 4)), np.zeros((1, 5)))
    assert e.value.exit_code == 2
