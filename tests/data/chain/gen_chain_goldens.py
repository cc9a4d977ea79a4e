"""Writes tests/data/chain/goldens/: the expected values of the small test chains, from the numpy
oracle outputs of the LLM fixtures (tests/data/fixtures/llm/cases/, computed by
tests/generators/generate_fixtures.py in float32 numpy on the decoded weights).

  hidden     the input every fixture case shares          (kind input)
  sum        attention(hidden) + moe(hidden), elementwise  (fan-out + sum wiring)
  logits     concat(lm_head_p0, p1, p2) along the vocab     (split-head concat wiring)
  attn_full  attention_fp16 on all 8 tokens                 (two stateful calls must equal it)

Run from the repository root: /opt/ctvenv/bin/python tests/data/chain/gen_chain_goldens.py
"""
import hashlib
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "..", "fixtures", "llm", "cases")
OUT = os.path.join(HERE, "goldens")


def load(case, name):
    return np.load(os.path.join(CASES, case, name))


def main():
    hidden = load("attention_fp16", "input_hidden.npy")
    for case in ("moe_fp16", "lm_head_p0_fp16", "lm_head_p1_fp16", "lm_head_p2_fp16"):
        assert np.array_equal(hidden, load(case, "input_hidden.npy")), case
    attn = load("attention_fp16", "expected_hidden_out.npy").astype(np.float32)
    moe = load("moe_fp16", "expected_hidden_out.npy").astype(np.float32)
    logits = np.concatenate(
        [load(f"lm_head_p{i}_fp16", "expected_logits.npy").astype(np.float32) for i in range(3)],
        axis=-1)
    tensors = [
        ("hidden", "input", None, hidden),
        ("sum", "output", None, attn + moe),
        ("logits", "logits", None, logits),
        ("attn_full", "hidden", 0, attn),
    ]
    os.makedirs(OUT, exist_ok=True)
    entries = []
    for name, kind, layer, arr in tensors:
        path = os.path.join(OUT, name + ".npy")
        np.save(path, np.ascontiguousarray(arr))
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        entries.append({
            "name": name, "kind": kind, "layer": layer, "position_axis": 1,
            "shape": list(arr.shape),
            "dtype": {"float16": "fp16", "float32": "fp32"}[str(arr.dtype)],
            "file": name + ".npy", "sha256": sha,
        })
    manifest = {"schema": "shardgate/golden-dump@1", "model": "llm-fixtures", "dtype": "fp32",
                "prompt_token_ids": [], "tensors": entries}
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
