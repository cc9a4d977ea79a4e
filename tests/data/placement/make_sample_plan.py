#!/usr/bin/env python3
"""Writes a SYNTHETIC compute-plan dump for a corpus shard, following
reports/schema/compute-plan-dump.schema.json (runtime/placement/README.md).

This is not a capture: no Mac ran MLComputePlan. The op list comes from the shard's own
.mlpackage protobuf read with coremltools (independent of shardgate's readers), the hash from the
compiled model.mil, and the devices from a small table below (fp32 LSTM path on the CPU, the
rest on the ANE, compile-time ops without usage). The "producer" field says so. The tests use it
to exercise the importer: matching, hash mismatch, missing / extra ops, null device.

Usage (from the repository root; needs coremltools, not run by CI):
  /opt/ctvenv/bin/python tests/data/placement/make_sample_plan.py \
      tests/data/corpus/silero-vad/silero-vad-unified-v6.0.0 \
      tests/data/placement/silero-vad-fp16.plan.json
(the first argument is the model path without the .mlmodelc / .mlpackage extension)
"""
import hashlib
import json
import sys

import coremltools as ct


def walk_block(block, function, path, out):
    for op in block.operations:
        outputs = [o.name for o in op.outputs]
        out.append({"function": function, "block_path": list(path), "type": op.type,
                    "outputs": outputs, "op": op})
        for i, nested in enumerate(op.blocks):
            walk_block(nested, function, path + [i], out)


def dtype_of(op):
    t = op.outputs[0].type
    if t.HasField("tensorType"):
        return t.tensorType.dataType
    return None


def main():
    base, out_path = sys.argv[1], sys.argv[2]
    spec = ct.utils.load_spec(base + ".mlpackage")
    with open(base + ".mlmodelc/model.mil", "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    fp32 = ct.proto.MIL_pb2.DataType.Value("FLOAT32")
    ops = []
    for name, fn in spec.mlProgram.functions.items():
        block = fn.block_specializations[fn.opset]
        walk_block(block, name, [-1], ops)
    compute = [o for o in ops if not (o["type"] == "const" or o["type"].startswith("constexpr_"))]
    cost = round(1.0 / len(compute), 6)
    functions = {}
    for seq, o in enumerate(ops):
        entry = {"seq": seq, "block_path": o["block_path"], "operator": o["type"],
                 "outputs": o["outputs"]}
        if o not in compute:
            entry.update({"preferred": None, "supported": None, "cost": None})
        elif o["type"] == "lstm" or (o["type"] == "cast" and dtype_of(o["op"]) == fp32
                                     and not o["outputs"][0] in ("vad_output", "new_hidden_state",
                                                                 "new_cell_state")):
            entry.update({"preferred": "cpu", "supported": ["cpu"], "cost": cost})
        else:
            # Operator names in a real plan carry the opset ("ios16.conv"); keep that spelling
            # on a few ops so the importer's normalisation is exercised.
            if o["type"] in ("conv", "relu"):
                entry["operator"] = "ios16." + o["type"]
            entry.update({"preferred": "ane", "supported": ["cpu", "ane"], "cost": cost})
        functions.setdefault(o["function"], []).append(entry)
    dump = {
        "schema": "ane-validator/placement-dump@1",
        "producer": {"api": "none (synthetic)", "tool": "tests/data/placement/make_sample_plan.py",
                     "coremltools": ct.__version__,
                     "note": "SYNTHETIC sample written to the schema for tests; not an "
                             "MLComputePlan capture"},
        "host": {"os": "n/a", "chip": "n/a", "target": "synthetic"},
        "model": {"name": base.split("/")[-1] + ".mlmodelc", "sha256_model_mil": sha,
                  "spec_version": spec.specificationVersion},
        "compute_units": "CPU_AND_NE",
        "functions": [{"name": n, "ops": o} for n, o in functions.items()],
        "logs": {"espresso_unsupported": [], "ane_compile_errors": []},
    }
    with open(out_path, "w") as f:
        json.dump(dump, f, indent=1)
        f.write("\n")
    print(f"{out_path}: {len(ops)} ops, {len(compute)} compute")


if __name__ == "__main__":
    main()
