#!/usr/bin/env python3
"""Dump the Core ML compute plan of a shard (.mlpackage or .mlmodelc) to JSON for ane-validator.

Runs on a Mac: macOS 14.4+ and coremltools >= 8.1 (coremltools.models.compute_plan and
compute_device first ship in the 8.1 wheel; 8.0 has neither; this script is tested against
9.0). Writes reports/schema/compute-plan-dump.schema.json, "ane-validator/placement-dump@2":
every op of every function and nested block (const / constexpr ops with null usage), the
preferred and supported devices and the estimated cost of each, and WHICH BUILD it describes:

  model.package   (for an .mlpackage input) name, path as given, fingerprint and its files
  model.compiled  the .mlmodelc the plan was taken from: name, fingerprint, files, and the
                  sha256 of its model.mil

The fingerprints are the ones ane-validator computes (validators/mac/shard_fingerprint.py,
definition in runtime/format/README.md), so one dump validates the package AND the .mlmodelc
compiled from it, and is refused for any other build, naming the files that differ.

How compiled ops map onto the package's ops. MLComputePlan reads compiled models only, so a
package is compiled first (into a temporary directory, deleted afterwards) and the plan is
taken from that .mlmodelc. Each op of the compiled program is identified by
(function name, block path, first output name, operator) -- block path [-1] for a function's
block, one index more per nested block of cond / while_loop, operator without an "iosNN."
prefix -- and so is each op of the package's protobuf (read with coremltools). A package op
takes the devices of the compiled op with the same function, block path and first output; the
operators must agree too. The dump lists the package's ops; an op found on one side only, or
with another operator, is listed in model.op_mapping, and a package op without a compiled
counterpart is written with null devices, which ane-validator fails (never passes); a compiled
op without a package counterpart has no entry to carry its device, and ane-validator fails the
package naming it (dump the .mlmodelc itself to judge it). Ops without outputs (write_state)
are matched by their order among such ops of the same block.

Usage:
  python3 dump_compute_plan.py SHARD.mlpackage|SHARD.mlmodelc [...] [-o OUT_DIR]
                               [--compute-units CPU_AND_NE|ALL|CPU_AND_GPU|CPU_ONLY]

  Writes OUT_DIR/<shard directory name>.json (default OUT_DIR: current directory). Then copy
  OUT_DIR to the Linux machine and run ane-validator SHARD --plan OUT_DIR/<name>.json, or
  ane-validator shards/ --plan-dir OUT_DIR (either form of each shard).

Gate with CPU_AND_NE (the default): it is what ANE-targeted shards ship with; under ALL, a Mac
often gives ANE-eligible work to the GPU. A plan describes only the machine it was made on
(chip, OS build): record several machines in separate directories when it matters.

The Apple calls (compile, MLComputePlan loading) sit behind one seam, apple_runtime.py; the
Linux tests drive this file's real logic through a fake runtime (validators/mac/README.md).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import coremltools as ct  # noqa: E402
from coremltools.models.compute_device import (MLCPUComputeDevice,  # noqa: E402
                                               MLGPUComputeDevice,
                                               MLNeuralEngineComputeDevice)

from apple_runtime import core_ml_call  # noqa: E402
from shard_fingerprint import fingerprint_files, fingerprint_of_files  # noqa: E402
from shard_fingerprint import program_file  # noqa: E402
from google.protobuf.message import DecodeError  # noqa: E402

SCHEMA = "ane-validator/placement-dump@2"
IDENTITY = ["function", "block_path", "first_output", "operator"]


class InputError(Exception):
    """A shard that cannot be read: the message names it."""


def normalize_operator(name):
    """'ios18.linear' -> 'linear' (ane-validator ignores the opset prefix the same way)."""
    return re.sub(r"^ios\d+\.", "", name)


def is_compile_time(operator):
    return operator == "const" or operator.startswith("constexpr_")


def device_name(device):
    if isinstance(device, MLNeuralEngineComputeDevice):
        return "ane"
    if isinstance(device, MLGPUComputeDevice):
        return "gpu"
    if isinstance(device, MLCPUComputeDevice):
        return "cpu"
    raise ValueError(f"unknown compute device {device!r}")


def identity_keys(ops):
    """Join keys for a list of (function, block_path, operator, outputs) ops."""
    keys = []
    no_output_seen = {}
    for function, block_path, _operator, outputs in ops:
        if outputs:
            keys.append((function, tuple(block_path), outputs[0]))
        else:
            slot = (function, tuple(block_path))
            n = no_output_seen.get(slot, 0)
            no_output_seen[slot] = n + 1
            keys.append((function, tuple(block_path), None, n))
    return keys


def plan_ops(plan):
    """Every op of the compiled program (MLModelStructure), with its usage and cost."""
    program = plan.model_structure.program
    if program is None:
        raise ValueError("not an ML program (neural network / pipeline plans are not dumped)")
    out = []

    def walk(block, function, block_path):
        for op in block.operations:
            usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
            cost = plan.get_estimated_cost_for_mlprogram_operation(op)
            out.append({
                "function": function,
                "block_path": list(block_path),
                "operator": normalize_operator(op.operator_name),
                "outputs": [o.name for o in op.outputs],
                # nil usage is recorded as null (Apple's own serializer skips such ops).
                "preferred": device_name(usage.preferred_compute_device) if usage else None,
                "supported": ([device_name(d) for d in usage.supported_compute_devices]
                              if usage else None),
                "cost": cost.weight if cost is not None else None,
            })
            for index, nested in enumerate(op.blocks):
                walk(nested, function, block_path + [index])

    for name, function in program.functions.items():
        walk(function.block, name, [-1])
    return out


def load_package_spec(package):
    """The package's Model protobuf, read without writing to the package.

    ct.utils.load_spec opens the package through coremltools' ModelPackage, which rewrites
    Manifest.json when it closes; a validation script must leave the user's files alone, so the
    root model file is found through Manifest.json here and parsed with coremltools' Model_pb2.
    """
    with open(program_file(package), "rb") as f:
        spec = ct.proto.Model_pb2.Model()
        spec.ParseFromString(f.read())
    return spec


def package_ops(package):
    """Every op of the package's ML program, read from its protobuf with coremltools."""
    spec = load_package_spec(package)
    if spec.WhichOneof("Type") != "mlProgram":
        raise ValueError(f"{package}: not an ML program")
    out = []

    def walk(block, function, block_path):
        for op in block.operations:
            out.append({"function": function, "block_path": list(block_path),
                        "operator": normalize_operator(op.type),
                        "outputs": [o.name for o in op.outputs]})
            for index, nested in enumerate(op.blocks):
                walk(nested, function, block_path + [index])

    for name in sorted(spec.mlProgram.functions):
        function = spec.mlProgram.functions[name]
        walk(function.block_specializations[function.opset], name, [-1])
    return out


def as_tuple(op):
    return (op["function"], op["block_path"], op["operator"], op["outputs"])


def ident(op):
    first = op["outputs"][0] if op["outputs"] else "(no output)"
    return f"{op['function']}/{'.'.join(str(i) for i in op['block_path'])}/{first} ({op['operator']})"


def map_onto_package(pkg_ops, compiled_ops):
    """Package ops with the devices of their compiled counterparts, and the mapping record."""
    compiled_by_key = dict(zip(identity_keys([as_tuple(o) for o in compiled_ops]), compiled_ops))
    used = set()
    ops, package_only, operator_differs = [], [], []
    for key, op in zip(identity_keys([as_tuple(o) for o in pkg_ops]), pkg_ops):
        entry = {"block_path": op["block_path"], "operator": op["operator"],
                 "outputs": op["outputs"], "preferred": None, "supported": None, "cost": None}
        match = compiled_by_key.get(key)
        if match is None:
            package_only.append(ident(op))
        elif match["operator"] != op["operator"]:
            operator_differs.append(f"{ident(op)} is {match['operator']} in the compiled program")
            used.add(key)
        else:
            used.add(key)
            entry.update(preferred=match["preferred"], supported=match["supported"],
                         cost=match["cost"])
        ops.append((op["function"], entry))
    compiled_only = [ident(o) for k, o in compiled_by_key.items() if k not in used]
    mapping = {"key": IDENTITY, "package_ops": len(pkg_ops), "compiled_ops": len(compiled_ops),
               "mapped": len(pkg_ops) - len(package_only) - len(operator_differs),
               "package_only": package_only, "compiled_only": compiled_only,
               "operator_differs": operator_differs}
    return ops, mapping


def build_identity(shard_dir, **extra):
    files = fingerprint_files(shard_dir)
    identity = {"name": os.path.basename(shard_dir.rstrip("/")), **extra,
                "fingerprint": fingerprint_of_files(files), "files": files}
    return identity


def group_by_function(ops, function_order):
    functions = {name: [] for name in function_order}
    for function, entry in ops:
        functions.setdefault(function, []).append(entry)
    result = []
    for name, entries in functions.items():
        for seq, entry in enumerate(entries):
            entry["seq"] = seq
        result.append({"name": name, "ops": [{"seq": e.pop("seq"), **e} for e in entries]})
    return result


def apple_call(path, what, call, *args):
    return core_ml_call(InputError, path, what, call, *args)


def make_dump(path, compute_units, runtime, workdir):
    """The dump of one shard (a dict in the placement-dump@2 form)."""
    path = path.rstrip("/")
    is_package = path.endswith(".mlpackage")
    if not is_package and not path.endswith(".mlmodelc"):
        raise ValueError(f"{path}: not an .mlpackage or .mlmodelc directory")
    model = {"name": os.path.basename(path)}
    if is_package:
        model["package"] = build_identity(path, path=path)
        compiled_path = apple_call(
            path, "compile it", runtime.compile_model, path,
            os.path.join(workdir, os.path.basename(path)[:-len(".mlpackage")] + ".mlmodelc"))
    else:
        compiled_path = path
    with open(os.path.join(compiled_path, "model.mil"), "rb") as f:
        mil_sha = hashlib.sha256(f.read()).hexdigest()
    compiled = build_identity(compiled_path, sha256_model_mil=mil_sha)
    if is_package:
        # The temporary directory's name is ours; the user knows the package's.
        compiled["name"] = os.path.basename(path)[:-len(".mlpackage")] + ".mlmodelc"
    model["compiled"] = compiled

    plan = apple_call(path, f"load its compute plan ({compute_units})", runtime.load_compute_plan,
                      compiled_path, compute_units)
    compiled_ops = plan_ops(plan)
    compiled_functions = list(dict.fromkeys(o["function"] for o in compiled_ops))
    if is_package:
        pkg = package_ops(path)
        ops, mapping = map_onto_package(pkg, compiled_ops)
        model["op_mapping"] = mapping
        function_order = list(dict.fromkeys(o["function"] for o in pkg))
    else:
        ops = [(o.pop("function"), o) for o in compiled_ops]
        function_order = compiled_functions
    producer = {"api": "MLComputePlan", "tool": "validators/mac/dump_compute_plan.py",
                "coremltools": ct.__version__}
    note = getattr(runtime, "note", None)
    if note:
        producer["note"] = note
    return {
        "schema": SCHEMA,
        "producer": producer,
        "host": runtime.host(),
        "model": model,
        "compute_units": compute_units,
        "functions": group_by_function(ops, function_order),
        "logs": {"espresso_unsupported": [], "ane_compile_errors": []},
    }


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def summary(out, dump):
    ops = [o for f in dump["functions"] for o in f["ops"]]
    compute = [o for o in ops if not is_compile_time(o["operator"])]
    on_ane = sum(1 for o in compute if o["preferred"] == "ane")
    no_device = sum(1 for o in compute if o["preferred"] is None)
    line = (f"{out}: {len(dump['functions'])} function(s), {len(compute)} compute ops, "
            f"{on_ane} preferred on the ANE")
    if no_device:
        line += f", {no_device} without a device (ane-validator fails them)"
    mapping = dump["model"].get("op_mapping")
    if mapping and (mapping["package_only"] or mapping["compiled_only"]
                    or mapping["operator_differs"]):
        line += (f"; op mapping incomplete: {len(mapping['package_only'])} package-only, "
                 f"{len(mapping['compiled_only'])} compiled-only, "
                 f"{len(mapping['operator_differs'])} with another operator (see model.op_mapping)")
    return line


def check_distinct_names(shards):
    """Each dump is named after its shard's directory: two shards of one name (a/x.mlpackage and
    b/x.mlpackage) would write the same file, the second silently replacing the first."""
    seen = {}
    for shard in shards:
        name = os.path.basename(shard.rstrip("/"))
        if name in seen:
            raise InputError(f"{seen[name]} and {shard} would both be dumped to {name}.json: "
                             "dump them in separate runs with separate -o directories")
        seen[name] = shard


def dump_shards(shards, out_dir, compute_units, runtime):
    """Writes OUT_DIR/<shard name>.json for each shard; returns the paths written."""
    check_distinct_names(shards)
    os.makedirs(out_dir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="sg_plan_")
    written = []
    try:
        for shard in shards:
            try:
                dump = make_dump(shard, compute_units, runtime, workdir)
            except (OSError, ValueError, KeyError, DecodeError) as e:
                raise InputError(f"{shard}: {type(e).__name__}: {e}") from e
            out = os.path.join(out_dir, dump["model"]["name"] + ".json")
            write_json(out, dump)
            print(summary(out, dump))
            written.append(out)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return written


def main(argv=None, runtime=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shards", nargs="+", help=".mlpackage or .mlmodelc directories")
    parser.add_argument("-o", "--out-dir", default=".")
    parser.add_argument("--compute-units", default="CPU_AND_NE",
                        choices=["CPU_AND_NE", "ALL", "CPU_AND_GPU", "CPU_ONLY"])
    args = parser.parse_args(argv)
    if runtime is None:
        from apple_runtime import AppleRuntime
        runtime = AppleRuntime()
    try:
        dump_shards(args.shards, args.out_dir, args.compute_units, runtime)
    except InputError as e:
        # a missing or malformed shard: name it, exit 2 as the validators do
        print(f"dump_compute_plan.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
