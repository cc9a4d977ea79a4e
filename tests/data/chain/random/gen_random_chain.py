"""Writes tests/data/chain/random/: a chain whose first shard draws noise with random_normal, for
the rule that checks depending on a random op are excluded from fidelity gates (a device draws
other numbers than shardgate's documented seeded generator, so no comparison proves anything).

  noisy.mlpackage   y = x + random_normal(shape [1, 4, 8], stddev 0.5, seed 5);  z = 2 x
  affine.mlpackage  out = 2 x + 1
  chain.json        noisy, then affine on y (down_y: depends on the noise through the chain)
                    and affine on z (down_z: reproducible)
  goldens/          numpy float32 values: x, z, down_z exact; y and down_y from numpy's own
                    generator (deliberately different numbers: gated, they would fail)

Run from the repository root: /opt/ctvenv/bin/python tests/data/chain/random/gen_random_chain.py
"""
import hashlib
import json
import os
import shutil

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = (1, 4, 8)


@mb.program(input_specs=[mb.TensorSpec(shape=SHAPE)], opset_version=ct.target.iOS17)
def noisy(x):
    noise = mb.random_normal(shape=np.array(SHAPE, np.int32), mean=0.0, stddev=0.5, seed=5,
                             name="noise")
    y = mb.add(x=x, y=noise, name="y")
    z = mb.mul(x=x, y=2.0, name="z")
    return y, z


@mb.program(input_specs=[mb.TensorSpec(shape=SHAPE)], opset_version=ct.target.iOS17)
def affine(x):
    return mb.add(x=mb.mul(x=x, y=2.0), y=1.0, name="out")


def save_model(prog, name):
    path = os.path.join(HERE, name + ".mlpackage")
    shutil.rmtree(path, ignore_errors=True)
    model = ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT16,
                       minimum_deployment_target=ct.target.iOS17)
    model.save(path)


def main():
    save_model(noisy, "noisy")
    save_model(affine, "affine")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float16).astype(np.float32)
    y = x + 0.5 * rng.standard_normal(SHAPE).astype(np.float32)
    z = 2 * x
    tensors = [("x", "input", x), ("y", "output", y), ("z", "output", z),
               ("down_y", "output", 2 * y + 1), ("down_z", "output", 2 * z + 1)]
    out = os.path.join(HERE, "goldens")
    os.makedirs(out, exist_ok=True)
    entries = []
    for name, kind, arr in tensors:
        path = os.path.join(out, name + ".npy")
        np.save(path, np.ascontiguousarray(arr.astype(np.float32)))
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        entries.append({"name": name, "kind": kind, "layer": None, "position_axis": 1,
                        "shape": list(arr.shape), "dtype": "fp32", "file": name + ".npy",
                        "sha256": sha})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"schema": "shardgate/golden-dump@1", "model": "random-chain", "dtype": "fp32",
                   "prompt_token_ids": [], "tensors": entries}, f, indent=2)
        f.write("\n")
    chain = {
        "schema": "shardgate/chain@1",
        "name": "random-chain",
        "goldens": "goldens",
        "inputs": {"x": "golden:x"},
        "steps": [
            {"id": "noisy", "shard": "noisy.mlpackage", "inputs": {"x": "x"},
             "outputs": {"y": "y", "z": "z"}},
            {"id": "affine_y", "shard": "affine.mlpackage", "inputs": {"x": "y"},
             "outputs": {"out": "down_y"}},
            {"id": "affine_z", "shard": "affine.mlpackage", "inputs": {"x": "z"},
             "outputs": {"out": "down_z"}},
        ],
        "checkpoints": [{"tensor": t, "golden": t, "kind": "output"}
                        for t in ("y", "z", "down_y", "down_z")],
    }
    with open(os.path.join(HERE, "chain.json"), "w") as f:
        json.dump(chain, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
