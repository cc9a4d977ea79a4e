"""Writes oracle op cases (cases.json + .npy files) for tests/ops/oracle_cases_test.cpp.

Used by the gen_<family>.py scripts in the folders beside this file; see
tests/support/op_cases.h for the case format. Expected values are computed by the calling
script with numpy, never by shardgate.

    from caselib import Cases, arr, lit, tup
    c = Cases(__file__)
    x = c.rng.standard_normal((2, 3)).astype(np.float16)
    c.add("relu_fp16", "relu", {"x": arr(x, "fp16")}, [out(np.maximum(x, 0), "fp16")])
    c.write()
"""
import json
import math
import os
import sys

import numpy as np

NP_OF = {
    "fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "int8": np.int8,
    "uint8": np.uint8, "int16": np.int16, "uint16": np.uint16, "int32": np.int32,
    "int64": np.int64, "bool": np.bool_,
}


class arr:
    """An npy-backed input: the array is written as given dtype `dtype` (MIL name)."""

    def __init__(self, a, dtype, state=False):
        self.a = np.asarray(a).astype(NP_OF[dtype])
        self.dtype = dtype
        self.state = state


class lit:
    """A literal input written inline in the JSON (scalar, list or nested list)."""

    def __init__(self, value, dtype):
        self.value = value
        self.dtype = dtype


class tup:
    """A variadic parameter (several bindings)."""

    def __init__(self, items):
        self.items = items


class out:
    """An expected output: declared dtype plus expected values (None for error cases)."""

    def __init__(self, a, dtype, store=None):
        self.dtype = dtype
        self.a = None if a is None else np.asarray(a)
        self.store = store  # numpy dtype the expected values are stored as


def _json_value(v):
    if isinstance(v, np.ndarray):
        return _json_value(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_json_value(e) for e in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    return v


def stored(a, declared, precision):
    """How the executor stores a float result: fp16 in fp16 mode, fp32 otherwise."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _stored(a, declared, precision)


def _stored(a, declared, precision):
    if declared == "fp16":
        return a.astype(np.float16) if precision == "fp16" else a.astype(np.float32)
    return a.astype(NP_OF[declared])


class Cases:
    def __init__(self, script_path, seed=1234):
        self.dir = os.path.dirname(os.path.abspath(script_path))
        self.family = os.path.basename(self.dir)
        self.rng = np.random.default_rng(seed)
        self.cases = []
        self.files = set()
        self.ids = set()

    def _npy(self, name, a):
        fname = name + ".npy"
        assert fname not in self.files, fname
        np.save(os.path.join(self.dir, fname), a, allow_pickle=False)
        self.files.add(fname)
        return fname

    def _input(self, cid, name, spec):
        if isinstance(spec, tup):
            return {"tuple": [self._input(cid, f"{name}{k}", s) for k, s in enumerate(spec.items)]}
        if isinstance(spec, lit):
            return {"value": _json_value(spec.value), "dtype": spec.dtype}
        d = {"npy": self._npy(f"{cid}_{name}", spec.a), "dtype": spec.dtype}
        if spec.state:
            d["state"] = True
        return d

    def add(self, cid, op, inputs, outputs, precision="fp16", atol=0.0, rtol=0.0, opset=None,
            expect_error=None, error_contains=None, states_out=None):
        assert cid not in self.ids, cid
        self.ids.add(cid)
        case = {"id": cid, "op": op, "precision": precision,
                "inputs": {k: self._input(cid, k, v) for k, v in inputs.items()}, "outputs": []}
        for k, o in enumerate(outputs):
            spec = {"dtype": o.dtype}
            if o.a is not None:
                a = o.a.astype(o.store) if o.store is not None else stored(o.a, o.dtype, precision)
                spec["npy"] = self._npy(f"{cid}_out{k}", a)
            case["outputs"].append(spec)
        if states_out:
            case["states_out"] = {
                k: {"npy": self._npy(f"{cid}_state_{k}", v)} for k, v in states_out.items()}
        if atol:
            case["atol"] = atol
        if rtol:
            case["rtol"] = rtol
        if opset:
            case["opset"] = opset
        if expect_error:
            case["expect_error"] = expect_error
        if error_contains:
            case["error_contains"] = error_contains
        self.cases.append(case)

    def error(self, cid, op, inputs, out_dtypes, expect="shape", contains=None, precision="fp16",
              opset=None):
        self.add(cid, op, inputs, [out(None, d) for d in out_dtypes], precision=precision,
                 expect_error=expect, error_contains=contains, opset=opset)

    def write(self):
        # Drop .npy files of cases that no longer exist.
        for f in os.listdir(self.dir):
            if f.endswith(".npy") and f not in self.files:
                os.remove(os.path.join(self.dir, f))
        with open(os.path.join(self.dir, "cases.json"), "w") as fh:
            json.dump({"cases": self.cases}, fh, indent=1)
            fh.write("\n")
        total = sum(os.path.getsize(os.path.join(self.dir, f)) for f in self.files)
        print(f"{self.family}: {len(self.cases)} cases, {len(self.files)} npy files, "
              f"{total / 1024:.1f} KiB", file=sys.stderr)
