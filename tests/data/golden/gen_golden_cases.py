#!/usr/bin/env python3
"""Writes small golden dumps for the golden-validator tests (tests/golden, tests/cli):

  ref/             the reference dump: input_ids, embed, hidden.0..3, logits (fp16)
  cand_pass/       reference + small noise: every check passes
  cand_fail/       layer 2 position 5 heavily perturbed, later layers drift: fails there
  cand_nan/        a NaN in hidden.1 at a known flat index
  cand_shape/      hidden.0 with another shape (input error)
  cand_dtype/      hidden.0 stored as int32 (input error)
  cand_prompt/     input_ids differ (input error: not the same prompt)
  cand_pass.safetensors   cand_pass as one .safetensors file (with shardgate metadata)
  expected.json    numpy-computed per-check, per-position cosine / norm ratio for cand_pass and
                   cand_fail, the first failing layer and position, and the NaN location

Every expected number is computed here with numpy (float64 on the fp16 values), independently of
the C++ code. Run: /opt/ctvenv/bin/python tests/data/golden/gen_golden_cases.py
"""
import hashlib
import json
import os
import shutil
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(7)
T, D, V = 8, 16, 32
PROMPT = [1, 17, 42, 5, 99, 3, 61, 8]


def reference_tensors():
    t = {"input_ids": np.array([PROMPT], dtype=np.int32)}
    h = rng.standard_normal((1, T, D))
    t["embed"] = h.astype(np.float16)
    for layer in range(4):
        h = h + 0.5 * rng.standard_normal((1, T, D))
        t[f"hidden.{layer}"] = h.astype(np.float16)
    t["logits"] = (3 * rng.standard_normal((1, T, V))).astype(np.float16)
    return t


def meta(name):
    if name == "input_ids":
        return "input", None
    if name == "embed":
        return "hidden", -1
    if name.startswith("hidden."):
        return "hidden", int(name.split(".")[1])
    return "logits", None


def write_dump(dirname, tensors, dtypes=None):
    path = os.path.join(HERE, dirname)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    entries = []
    for name, arr in tensors.items():
        file = name.replace(".", "_").replace("-", "m") + ".npy"
        np.save(os.path.join(path, file), arr)
        with open(os.path.join(path, file), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        kind, layer = meta(name)
        dtype = {np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32",
                 np.dtype(np.int32): "int32"}[arr.dtype]
        entries.append({"name": name, "kind": kind, "layer": layer, "position_axis": 1,
                        "shape": list(arr.shape), "dtype": dtype, "file": file, "sha256": sha})
    manifest = {"schema": "shardgate/golden-dump@1", "model": "tiny-test-4l", "dtype": "fp16",
                "prompt_token_ids": PROMPT, "tensors": entries}
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")


def write_safetensors(filename, tensors):
    header, blobs, offset = {}, [], 0
    codes = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32", np.dtype(np.int32): "I32"}
    md = {}
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr).tobytes()
        header[name] = {"dtype": codes[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
        kind, layer = meta(name)
        md[name] = {"kind": kind, "layer": layer, "position_axis": 1}
    header["__metadata__"] = {"shardgate": json.dumps(md)}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(HERE, filename), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def per_position(c, r):
    c = c.astype(np.float64)[0]
    r = r.astype(np.float64)[0]
    cos, ratio = [], []
    for p in range(r.shape[0]):
        cos.append(float(np.dot(c[p], r[p]) / (np.linalg.norm(c[p]) * np.linalg.norm(r[p]))))
        ratio.append(float(np.linalg.norm(c[p]) / np.linalg.norm(r[p])))
    return {"cosine": cos, "norm_ratio": ratio}


def main():
    ref = reference_tensors()
    write_dump("ref", ref)

    def noisy(scale_by_name):
        out = {}
        for name, arr in ref.items():
            if name == "input_ids":
                out[name] = arr.copy()
                continue
            x = arr.astype(np.float64)
            out[name] = (x + scale_by_name(name) * rng.standard_normal(x.shape)).astype(np.float16)
        return out

    cand_pass = noisy(lambda name: 0.01)
    write_dump("cand_pass", cand_pass)
    write_safetensors("cand_pass.safetensors", cand_pass)

    cand_fail = noisy(lambda name: 0.01)
    h2 = cand_fail["hidden.2"].astype(np.float64)
    h2[0, 5] = h2[0, 5] + 1.2 * np.linalg.norm(h2[0, 5]) / np.sqrt(D) * rng.standard_normal(D)
    cand_fail["hidden.2"] = h2.astype(np.float16)
    h3 = cand_fail["hidden.3"].astype(np.float64)
    h3 = h3 + 0.45 * rng.standard_normal(h3.shape)
    cand_fail["hidden.3"] = h3.astype(np.float16)
    write_dump("cand_fail", cand_fail)

    cand_nan = {k: v.copy() for k, v in cand_pass.items()}
    h1 = cand_nan["hidden.1"].copy()
    h1[0, 3, 7] = np.nan
    cand_nan["hidden.1"] = h1
    write_dump("cand_nan", cand_nan)

    cand_shape = dict(cand_pass)
    cand_shape["hidden.0"] = cand_pass["hidden.0"][:, :, :8].copy()
    write_dump("cand_shape", cand_shape)

    cand_dtype = dict(cand_pass)
    cand_dtype["hidden.0"] = np.round(cand_pass["hidden.0"].astype(np.float32) * 100).astype(np.int32)
    write_dump("cand_dtype", cand_dtype)

    cand_prompt = dict(cand_pass)
    ids = ref["input_ids"].copy()
    ids[0, 2] = 43
    cand_prompt["input_ids"] = ids
    write_dump("cand_prompt", cand_prompt)

    expected = {"cand_pass": {}, "cand_fail": {}}
    for which, cand in (("cand_pass", cand_pass), ("cand_fail", cand_fail)):
        for name in ref:
            if name == "input_ids":
                continue
            expected[which][name] = per_position(cand[name], ref[name])
    # First failure in layer order (embed, hidden.0..3, logits) under min cosine 0.97 and norm
    # ratio [0.8, 1.25].
    first = None
    for name in ["embed", "hidden.0", "hidden.1", "hidden.2", "hidden.3", "logits"]:
        e = expected["cand_fail"][name]
        bad = [p for p in range(T) if e["cosine"][p] < 0.97 or not 0.8 <= e["norm_ratio"][p] <= 1.25]
        if bad and first is None:
            first = {"checkpoint": name, "layer": meta(name)[1], "position": bad[0]}
    expected["cand_fail_first_failure"] = first
    expected["cand_nan"] = {"checkpoint": "hidden.1", "tensor": "candidate",
                            "flat_index": 3 * D + 7, "position": 3}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
