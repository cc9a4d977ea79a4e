#!/usr/bin/env python3
"""Builds a small two-function shard (prefill over 4 positions, infer over 1, sharing one
fp16 weight) with coremltools, the form of an LLM shard with prefill/infer functions.
tests/mac uses it to check that every function of a multi-function shard gets device info and
that a dump missing a function fails the gate.

Usage (from the repository root, coremltools 9.0 as pinned in tests/mac/requirements.txt):
  /opt/ctvenv/bin/python tests/mac/make_multifunction_shard.py \
      tests/data/placement/mac/prefill_infer.mlpackage
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import types


def program(positions, weight):
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, positions, 64), dtype=types.fp16)],
                opset_version=ct.target.iOS18)
    def prog(hidden):
        x = mb.linear(x=hidden, weight=weight, name="proj")
        x = mb.silu(x=x, name="act")
        x = mb.add(x=x, y=hidden, name="residual")
        return mb.layer_norm(x=x, axes=[-1], epsilon=np.float16(1e-5), name="hidden_out")
    return prog


def main():
    out = sys.argv[1]
    weight = (np.random.default_rng(7).standard_normal((64, 64)) * 0.1).astype(np.float16)
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name, positions in (("prefill", 4), ("infer", 1)):
            model = ct.convert(program(positions, weight), convert_to="mlprogram",
                               minimum_deployment_target=ct.target.iOS18,
                               compute_precision=ct.precision.FLOAT16, skip_model_load=True)
            paths[name] = os.path.join(tmp, name + ".mlpackage")
            model.save(paths[name])
        desc = ct.utils.MultiFunctionDescriptor()
        desc.add_function(paths["prefill"], src_function_name="main", target_function_name="prefill")
        desc.add_function(paths["infer"], src_function_name="main", target_function_name="infer")
        desc.default_function_name = "prefill"
        if os.path.exists(out):
            shutil.rmtree(out)
        ct.utils.save_multifunction(desc, out)
    print(out)


if __name__ == "__main__":
    main()
