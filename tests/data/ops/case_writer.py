"""Writes tests/data/ops/<family>/cases.json and its .npy files for the oracle case driver
(tests/ops/oracle_cases_test.cpp). Used by the gen_<family>.py scripts of the compute-heavy
families; run a script with /opt/ctvenv/bin/python from anywhere, it writes beside itself.

Expected values are numpy computations in float64 on the values the runtime actually sees
(fp16 inputs are rounded to fp16 first), then cast to the declared output dtype.
"""
import json
import os

import numpy as np

NP_DTYPES = {
    "fp16": np.float16, "fp32": np.float32, "int32": np.int32, "int16": np.int16,
    "uint16": np.uint16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_,
}

# fp16 outputs: ours is an fp32 result rounded to fp16, numpy's a float64 result rounded to
# fp16, so they may differ by one fp16 ulp (2^-10 relative); 1e-3 relative plus 1e-3 absolute
# (for results near 0, where cancellation leaves fp32 noise above the fp16 ulp) covers it.
TOL_FP16 = dict(atol=1e-3, rtol=1e-3)
# fp32 outputs: fp32 accumulation against float64 over at most a few hundred terms.
TOL_FP32 = dict(atol=1e-5, rtol=1e-5)


class CaseWriter:
    def __init__(self, script_file, seed):
        self.dir = os.path.dirname(os.path.abspath(script_file))
        self.family = os.path.basename(self.dir)
        self.cases = []
        self.files = set()
        self.rng = np.random.default_rng(seed)

    # Random values of a dtype, already rounded to what the runtime stores.
    def rand(self, shape, dtype="fp16", lo=-1.0, hi=1.0):
        a = self.rng.uniform(lo, hi, size=shape)
        return a.astype(NP_DTYPES[dtype])

    def tensor(self, name, arr, dtype):
        fname = f"{name}.npy"
        assert fname not in self.files, fname
        self.files.add(fname)
        np.save(os.path.join(self.dir, fname), np.asarray(arr).astype(NP_DTYPES[dtype]))
        return {"npy": fname, "dtype": dtype}

    @staticmethod
    def value(v, dtype):
        if isinstance(v, np.ndarray):
            v = v.tolist()
        return {"value": v, "dtype": dtype}

    def add(self, cid, op, inputs, outputs, precision="fp16", tol=None, **extra):
        """outputs: list of (array or None, dtype). Arrays are saved as <cid>_out<i>.npy."""
        outs = []
        for i, (arr, dtype) in enumerate(outputs):
            if arr is None:
                outs.append({"dtype": dtype})
            else:
                outs.append(self.tensor(f"{cid}_out{i}", arr, dtype))
        case = {"id": cid, "op": op, "precision": precision, "inputs": inputs, "outputs": outs}
        if tol is None and any(a is not None for a, _ in outputs):
            tol = TOL_FP16 if any(d == "fp16" for _, d in outputs) and precision == "fp16" else TOL_FP32
        if tol:
            case.update(tol)
        case.update(extra)
        self.cases.append(case)

    def error(self, cid, op, inputs, n_outputs, code, contains=None, out_dtype="fp32"):
        extra = {"expect_error": code}
        if contains:
            extra["error_contains"] = contains
        self.add(cid, op, inputs, [(None, out_dtype)] * n_outputs, tol={}, **extra)

    def write(self):
        for f in os.listdir(self.dir):
            if f.endswith(".npy") and f not in self.files:
                os.remove(os.path.join(self.dir, f))
        with open(os.path.join(self.dir, "cases.json"), "w") as fh:
            json.dump({"cases": self.cases}, fh, indent=1)
            fh.write("\n")
        total = sum(os.path.getsize(os.path.join(self.dir, f)) for f in self.files)
        print(f"{self.family}: {len(self.cases)} cases, {len(self.files)} npy files, {total} bytes")


def f64(a):
    return np.asarray(a).astype(np.float64)


def out_cast(a, dtype):
    return np.asarray(a).astype(NP_DTYPES[dtype])
