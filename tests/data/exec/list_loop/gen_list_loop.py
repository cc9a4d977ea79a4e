"""List-in-loop fixture: lists carried through while_loop bodies, as converters write a
TensorArray or a Python list appended in a loop. Written by coremltools (pinned in
tests/generators/requirements.txt) as an .mlpackage, with numpy results of the same
computation for committed inputs: the oracle of tests/exec/control_flow_test.cpp.

Program (fp32, iOS17 opset), x of shape [3], k a [1] float whose value sets the trip count:
    fixed = make_list(length 4, elem [3])              # list<fp32, 4>
    grown = make_list(length 1, elem [3], dynamic)     # list<fp32, ?>: grows past its end
    i = 0
    while i < 4:
        fixed[i] = x * i
        i += 1
    j = 0
    while j < int(k):                                  # data-dependent, may be zero
        grown[j] = x + j                               # writes past the end grow the list
        j += 1
    return fixed_all = stack(fixed), fixed_n = len(fixed),
           grown_n = len(grown), grown_first = grown[0], fixed_odd = fixed[[1, 3]]

Run: /opt/ctvenv/bin/python gen_list_loop.py
"""
import json
import os

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types

HERE = os.path.dirname(os.path.abspath(__file__))


@mb.program(input_specs=[mb.TensorSpec(shape=(3,), dtype=types.fp32),
                         mb.TensorSpec(shape=(1,), dtype=types.fp32)],
            opset_version=ct.target.iOS17)
def program(x, k):
    fixed = mb.make_list(init_length=4, elem_shape=[3], dtype="fp32", dynamic_length=False,
                         name="fixed")
    grown = mb.make_list(init_length=1, elem_shape=[3], dtype="fp32", dynamic_length=True,
                         name="grown")

    def fixed_cond(i, ls):
        return mb.less(x=i, y=np.int32(4), name="i_below_4")

    def fixed_body(i, ls):
        v = mb.mul(x=x, y=mb.cast(x=i, dtype="fp32", name="i_f"), name="x_times_i")
        return (mb.add(x=i, y=np.int32(1), name="next_i"),
                mb.list_write(ls=ls, index=i, value=v, name="write_fixed"))

    _, fixed_out = mb.while_loop(_cond=fixed_cond, _body=fixed_body,
                                 loop_vars=(np.int32(0), fixed), name="fill_fixed")

    trips = mb.cast(x=mb.squeeze(x=k, name="k_scalar"), dtype="int32", name="trips")

    def grown_cond(j, ls):
        return mb.less(x=j, y=trips, name="j_below_k")

    def grown_body(j, ls):
        v = mb.add(x=x, y=mb.cast(x=j, dtype="fp32", name="j_f"), name="x_plus_j")
        return (mb.add(x=j, y=np.int32(1), name="next_j"),
                mb.list_write(ls=ls, index=j, value=v, name="write_grown"))

    _, grown_out = mb.while_loop(_cond=grown_cond, _body=grown_body,
                                 loop_vars=(np.int32(0), grown), name="fill_grown")
    return (mb.list_gather(ls=fixed_out, indices=np.array([0, 1, 2, 3], np.int32), name="fixed_all"),
            mb.list_length(ls=fixed_out, name="fixed_n"),
            mb.list_length(ls=grown_out, name="grown_n"),
            mb.list_read(ls=grown_out, index=np.int32(0), name="grown_first"),
            mb.list_gather(ls=fixed_out, indices=np.array([1, 3], np.int32), name="fixed_odd"))


def reference(x, k):
    fixed = np.stack([x * np.float32(i) for i in range(4)])
    trips = int(k[0])
    grown = [x + np.float32(j) for j in range(trips)]
    # A dynamic list never written keeps its initial length of one zero element.
    first = grown[0] if grown else np.zeros(3, np.float32)
    return {
        "fixed_all": fixed.astype(np.float32),
        "fixed_n": np.array(4, np.int32),
        "grown_n": np.array(max(trips, 1), np.int32),
        "grown_first": first.astype(np.float32),
        "fixed_odd": fixed[[1, 3]].astype(np.float32),
    }


def main():
    model = ct.convert(program, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                       minimum_deployment_target=ct.target.iOS17)
    model.save(os.path.join(HERE, "list_loop.mlpackage"))
    cases = []
    for name, x, k in (("five", [1.5, -2.0, 0.25], 5.0), ("none", [0.5, 3.0, -1.0], 0.0),
                       ("one", [2.0, 2.0, -4.0], 1.0)):
        xs = np.array(x, np.float32)
        ks = np.array([k], np.float32)
        np.save(os.path.join(HERE, f"{name}_x.npy"), xs)
        np.save(os.path.join(HERE, f"{name}_k.npy"), ks)
        outs = {}
        for out, val in reference(xs, ks).items():
            np.save(os.path.join(HERE, f"{name}_{out}.npy"), val)
            outs[out] = f"{name}_{out}.npy"
        cases.append({"name": name, "inputs": {"x": f"{name}_x.npy", "k": f"{name}_k.npy"},
                      "outputs": outs})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump({"shard": "list_loop.mlpackage", "function": "main",
                   "covers": ["make_list", "list_write", "list_read", "list_gather",
                              "list_length", "while_loop"],
                   "cases": cases}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
