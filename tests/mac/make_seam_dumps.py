#!/usr/bin/env python3
"""Writes the compute-plan dumps the C++ tests read (tests/data/placement/mac/), produced by the
REAL dump_compute_plan.py logic through the fake runtime (tests/mac/fake_runtime.py): no Mac
ran them, the devices come from the fake's table and each dump says so in producer.note. They
exist so tests/placement/mac_plan_test.cpp covers pairing dumps with shards of either form
without Python.

  L0_attn_lut4.mlpackage.json  a fixture-generator package (goldens/sample/shards)
  unified_int8.mlpackage.json  a corpus package whose Apple-compiled twin the fake "compiles"
  unified_int8.mlmodelc.json   the same corpus model dumped from its .mlmodelc
  prefill_infer.mlpackage.json a two-function shard (tests/mac/make_multifunction_shard.py)
  prefill_infer.no-infer.json  the same with the infer function left out of the plan

Usage (from the repository root):
  /opt/ctvenv/bin/python tests/mac/make_seam_dumps.py tests/data/placement/mac
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "validators", "mac"), HERE]

import dump_compute_plan  # noqa: E402
from fake_runtime import FakeRuntime  # noqa: E402

DUMPS = [
    ("L0_attn_lut4.mlpackage.json", "goldens/sample/shards/L0_attn_lut4.mlpackage", ()),
    ("unified_int8.mlpackage.json", "tests/data/corpus/silero-vad/unified_int8.mlpackage", ()),
    ("unified_int8.mlmodelc.json", "tests/data/corpus/silero-vad/unified_int8.mlmodelc", ()),
    ("prefill_infer.mlpackage.json", "tests/data/placement/mac/prefill_infer.mlpackage", ()),
    ("prefill_infer.no-infer.json", "tests/data/placement/mac/prefill_infer.mlpackage",
     ("infer",)),
]


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, shard, drop in DUMPS:
        workdir = tempfile.mkdtemp(prefix="sg_seam_")
        try:
            dump = dump_compute_plan.make_dump(shard, "CPU_AND_NE",
                                               FakeRuntime(drop_functions=drop), workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        path = os.path.join(out_dir, name)
        dump_compute_plan.write_json(path, dump)
        print(dump_compute_plan.summary(path, dump))


if __name__ == "__main__":
    main()
