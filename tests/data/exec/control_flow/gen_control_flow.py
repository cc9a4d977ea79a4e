"""Control-flow fixture: a program with cond, while_loop and a cond nested in the loop body,
written by coremltools (pinned in tests/generators/requirements.txt) as an .mlpackage, and
the numpy results of the same computation for a few committed inputs: the oracle of
tests/exec/control_flow_test.cpp.

Program (fp32 throughout, iOS17 opset):
    c = cond(sum(t) > 0, x * 2, x - 1)
    i, acc = 0, c
    while max(acc) < 50:                 # data-dependent trip count, may be zero
        acc = cond(i % 2 == 0, acc * 1.5 + x, acc + 2)
        i = i + 1
    return y = acc, n = i

Run: /opt/ctvenv/bin/python gen_control_flow.py
"""
import json
import os

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HERE = os.path.dirname(os.path.abspath(__file__))


@mb.program(input_specs=[mb.TensorSpec(shape=(2, 3), dtype=types.fp32),
                         mb.TensorSpec(shape=(1,), dtype=types.fp32)],
            opset_version=ct.target.iOS17)
def program(x, t):
    total = mb.reduce_sum(x=t, axes=[0], keep_dims=False, name="total")
    positive = mb.greater(x=total, y=np.float32(0.0), name="positive")
    start = mb.cond(pred=positive,
                    _true_fn=lambda: mb.mul(x=x, y=np.float32(2.0), name="doubled"),
                    _false_fn=lambda: mb.sub(x=x, y=np.float32(1.0), name="lowered"),
                    name="start")

    def keep_going(i, acc):
        peak = mb.reduce_max(x=acc, axes=[0, 1], keep_dims=False, name="peak")
        return mb.less(x=peak, y=np.float32(50.0), name="below_50")

    def step(i, acc):
        even = mb.equal(x=mb.mod(x=i, y=np.int32(2), name="parity"), y=np.int32(0), name="even")
        grown = mb.cond(pred=even,
                        _true_fn=lambda: mb.add(x=mb.mul(x=acc, y=np.float32(1.5), name="scaled"),
                                                y=x, name="scaled_plus_x"),
                        _false_fn=lambda: mb.add(x=acc, y=np.float32(2.0), name="plus_2"),
                        name="grown")
        return mb.add(x=i, y=np.int32(1), name="next_i"), grown

    n, acc = mb.while_loop(_cond=keep_going, _body=step,
                           loop_vars=(np.int32(0), start), name="loop")
    return mb.identity(x=acc, name="y"), mb.identity(x=n, name="n")


def reference(x, t):
    acc = (x * np.float32(2.0)) if t.sum() > 0 else (x - np.float32(1.0))
    i = 0
    while acc.max() < 50.0:
        acc = (acc * np.float32(1.5) + x) if i % 2 == 0 else (acc + np.float32(2.0))
        acc = acc.astype(np.float32)
        i += 1
    return acc.astype(np.float32), np.int32(i)


def main():
    model = ct.convert(program, convert_to="mlprogram",
                       minimum_deployment_target=ct.target.iOS17,
                       compute_precision=ct.precision.FLOAT32, skip_model_load=True)
    model.save(os.path.join(HERE, "control_flow.mlpackage"))
    rng = np.random.default_rng(20261121)
    inputs = {
        "positive": (rng.uniform(0.5, 1.5, (2, 3)).astype(np.float32), np.array([1.0], np.float32)),
        "negative": (rng.uniform(1.5, 3.0, (2, 3)).astype(np.float32), np.array([-2.0], np.float32)),
        "no_iteration": (np.full((2, 3), 60.0, np.float32), np.array([0.5], np.float32)),
    }
    cases = []
    for name, (x, t) in inputs.items():
        y, n = reference(x, t)
        files = {}
        for key, arr in (("x", x), ("t", t), ("y", y), ("n", n)):
            files[key] = f"{name}_{key}.npy"
            np.save(os.path.join(HERE, files[key]), arr)
        cases.append({"name": name, "inputs": {"x": files["x"], "t": files["t"]},
                      "outputs": {"y": files["y"], "n": files["n"]}, "iterations": int(n)})
        print(name, "iterations", int(n))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        # "covers": the ops of ops.def whose value tests these cases are (the op harness cannot
        # run nested blocks; tests/ops/coverage_test.cpp reads this list).
        json.dump({"shard": "control_flow.mlpackage", "function": "main",
                   "covers": ["cond", "while_loop"], "cases": cases}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
