"""Oracle cases for classify (coremltools 9.0 iOS15/classify.py): the label of the largest
probability (numpy argmax: first on ties) and the class -> probability dict, which the runtime
keeps as the fp64 vector of its values in class order (runtime/ops/classify.cpp). String labels
are checked by tests/ops/classify_test.cpp (the .npy cases hold numbers only).
Run: /opt/ctvenv/bin/python gen_classify.py"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
for cid, shape in (("vector", (5,)), ("batch_of_one", (1, 4)), ("image_like", (1, 3, 1, 1))):
    p = rng.dirichlet(np.ones(int(np.prod(shape)))).astype(np.float32).reshape(shape)
    classes = rng.permutation(100)[:p.size].astype(np.int64)
    c.add(f"classify_int64_{cid}", "classify", {"probabilities": arr(p, "fp32"), "classes": arr(classes, "int64")},
          [out(np.array(classes[np.argmax(p)]), "int64"), out(p.astype(np.float64).ravel(), "fp64")], precision="fp32")
tie = np.array([0.4, 0.4, 0.2], np.float32)
c.add("classify_tie_takes_first", "classify", {"probabilities": arr(tie, "fp32"), "classes": arr(np.array([7, 3, 9]), "int64")},
      [out(np.array(7), "int64"), out(tie.astype(np.float64), "fp64")], precision="fp32")
c.error("classify_count_mismatch", "classify",
        {"probabilities": arr(np.ones(3, np.float32), "fp32"), "classes": arr(np.arange(4), "int64")}, ["int64", "fp64"],
        contains="classes")
c.write()
