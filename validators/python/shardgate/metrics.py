"""Fidelity metrics between two tensors, computed by the library's comparison engine (the same
code golden-validator gates with): per row along a position axis, cosine, norm_ratio, rel_l2,
max_abs, snr_db, and for kind "logits" also top1, topk_overlap and kl. Both rows all zero is
`degenerate` (no metric); NaN/Inf marks the row `nonfinite` and names the first one."""

import math

from . import _native
from ._arrays import as_numpy


def compare(candidate, reference, kind="hidden", position_axis=None, topk=5, name="tensor"):
    """Returns {"rows": [{"position", "degenerate", "nonfinite", <metric>: value, ...}],
    "nonfinite": None | {"tensor", "flat_index", "position", "value"}}. Shapes must be equal
    and dtypes of one class (float vs int), else shardgate.Error (exit code 2)."""
    return _native.compare(as_numpy(candidate, "candidate"), as_numpy(reference, "reference"),
                           kind=kind, position_axis=position_axis, topk=topk, name=name)


def min_cosine(candidate, reference, position_axis=None):
    """The gate's view of a pair: the minimum cosine over the non-degenerate rows. NaN when a
    row holds NaN/Inf or every row is degenerate (no evidence is never a pass)."""
    result = compare(candidate, reference, position_axis=position_axis)
    if result["nonfinite"] is not None:
        return math.nan
    values = [row["cosine"] for row in result["rows"] if "cosine" in row]
    return min(values) if values else math.nan
