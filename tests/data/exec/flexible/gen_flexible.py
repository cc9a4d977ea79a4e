"""A coremltools-built model with flexible inputs, for seeded runs without given inputs:
`x` has a RangeDim (default 5) and `y` EnumeratedShapes (default [1, 3]). coremltools writes
each default as the input's ArrayFeatureType.shape next to the range / enumerated shapes, and
shardgate's seeded inputs must use exactly those shapes. The program is z = relu(2 x) and
w = y + 1. Run: /opt/ctvenv/bin/python gen_flexible.py"""
import os
import shutil

import numpy as np
import coremltools as ct
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import get_new_symbol, types

HERE = os.path.dirname(os.path.abspath(__file__))
S0, S1 = get_new_symbol(), get_new_symbol()


@mb.program(input_specs=[mb.TensorSpec(shape=(1, S0, 8), dtype=types.fp32),
                         mb.TensorSpec(shape=(1, S1), dtype=types.fp32)],
            opset_version=ct.target.iOS17)
def program(x, y):
    z = mb.relu(x=mb.mul(x=x, y=np.float32(2.0), name="twice"), name="z")
    w = mb.add(x=y, y=np.float32(1.0), name="w")
    return z, w


def main():
    model = ct.convert(program, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17,
                       inputs=[ct.TensorType(name="x", shape=(1, ct.RangeDim(1, 64, default=5), 8)),
                               ct.TensorType(name="y", shape=ct.EnumeratedShapes(shapes=[(1, 3), (1, 6)],
                                                                                 default=(1, 3)))],
                       compute_precision=ct.precision.FLOAT32, skip_model_load=True)
    out = os.path.join(HERE, "flexible.mlpackage")
    if os.path.exists(out):
        shutil.rmtree(out)
    model.save(out)
    spec = model.get_spec()
    for f in spec.description.input:
        print(f.name, list(f.type.multiArrayType.shape))


if __name__ == "__main__":
    main()
