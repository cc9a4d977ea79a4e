"""Numerics fixture: fp16 subnormals and an fp16 overflow that later ops wash out, written by
coremltools (pinned in tests/generators/requirements.txt) as two .mlpackages, with the numpy
results of the same fp16 computation for the committed input, subnormals kept and flushed:
the oracle of tests/exec/numerics_test.cpp and the exec CLI tests.

Program (fp16 input and values, iOS17 opset; every op's result is stored as fp16):
    tiny     = (x * 2^-8) * 2^-8        # |x| < 4: |tiny| < 2^-14, an fp16 subnormal
    restored = tiny * 2^8 * 2^8          # kept: x to subnormal precision; flushed: 0
    big      = x * 2^14                  # |x| >= 4: |big| >= 65536 > fp16 max: +-inf
    clipped  = clip(big, -1000, 1000)    # finite again: the overflow is washed out
    raw      = big + 1                   # the overflow reaches this output
overflow_recovers.mlpackage has the same ops and only `clipped` (and `restored`) as outputs,
numerics.mlpackage has restored, clipped and raw. Every constant is a normal fp16 number, so
the weights themselves hold no subnormal.

Run: /opt/ctvenv/bin/python gen_numerics.py
"""
import json
import os

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPE = (1, 4, 8)
F16 = np.float16


def body(x):
    a = mb.mul(x=x, y=F16(2.0 ** -8), name="scaled_down")
    tiny = mb.mul(x=a, y=F16(2.0 ** -8), name="tiny")
    b = mb.mul(x=tiny, y=F16(2.0 ** 8), name="scaled_up")
    restored = mb.mul(x=b, y=F16(2.0 ** 8), name="restored")
    big = mb.mul(x=x, y=F16(2.0 ** 14), name="big")
    clipped = mb.clip(x=big, alpha=F16(-1000.0), beta=F16(1000.0), name="clipped")
    raw = mb.add(x=big, y=F16(1.0), name="raw")
    return restored, clipped, raw


@mb.program(input_specs=[mb.TensorSpec(shape=SHAPE, dtype=types.fp16)],
            opset_version=ct.target.iOS17)
def numerics(x):
    restored, clipped, raw = body(x)
    return restored, clipped, raw


@mb.program(input_specs=[mb.TensorSpec(shape=SHAPE, dtype=types.fp16)],
            opset_version=ct.target.iOS17)
def overflow_recovers(x):
    restored, clipped, _ = body(x)
    return restored, clipped


def flush(v):
    """fp16 storage that flushes subnormal results to a zero of the same sign."""
    v = v.astype(F16)
    return np.where(np.abs(v) < F16(2.0 ** -14), np.copysign(F16(0), v), v).astype(F16)


def reference(x, ftz):
    store = flush if ftz else (lambda v: v.astype(F16))
    # numpy's float16 multiply computes in float32 and rounds once, like one fp16 op.
    x = store(x)
    a = store(x * F16(2.0 ** -8))
    tiny = store(a * F16(2.0 ** -8))
    b = store(tiny * F16(2.0 ** 8))
    restored = store(b * F16(2.0 ** 8))
    with np.errstate(over="ignore"):
        big = store(x.astype(np.float32) * np.float32(2.0 ** 14))
    clipped = store(np.clip(big, F16(-1000.0), F16(1000.0)))
    raw = store(big.astype(np.float32) + np.float32(1.0))
    return {"restored": restored, "clipped": clipped, "raw": raw, "tiny": tiny}


def main():
    for name, prog in (("numerics", numerics), ("overflow_recovers", overflow_recovers)):
        model = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17,
                           compute_precision=ct.precision.FLOAT16, skip_model_load=True)
        model.save(os.path.join(HERE, name + ".mlpackage"))
    rng = np.random.default_rng(20261123)
    # The first half in [4.5, 7.5] (normal after scaling down, overflow when scaled up), the
    # second half in [0.3, 3.5] (subnormal after scaling down), signs mixed.
    mags = np.concatenate([rng.uniform(4.5, 7.5, 16), rng.uniform(0.3, 3.5, 16)])
    signs = np.where(rng.uniform(size=32) < 0.5, -1.0, 1.0)
    x = (mags * signs).reshape(SHAPE).astype(F16)
    np.save(os.path.join(HERE, "x.npy"), x)
    summary = {"input": "x.npy", "outputs": {}}
    for mode, ftz in (("keep", False), ("flush", True)):
        ref = reference(x, ftz)
        for out in ("restored", "clipped", "raw"):
            fname = f"{mode}_{out}.npy"
            np.save(os.path.join(HERE, fname), ref[out])
            summary["outputs"][f"{mode}_{out}"] = {
                "file": fname,
                "nonfinite": int((~np.isfinite(ref[out].astype(np.float32))).sum()),
                "zeros": int((ref[out] == 0).sum()),
            }
        summary[f"{mode}_tiny_subnormals"] = int(((ref["tiny"] != 0) & (np.abs(ref["tiny"]) < F16(2.0 ** -14))).sum())
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
