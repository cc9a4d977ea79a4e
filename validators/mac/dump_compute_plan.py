#!/usr/bin/env python3
"""Dump the Core ML compute plan of a compiled shard to JSON for ane-validator --plan.

Runs on a Mac (macOS 14.4+, coremltools >= 8) where MLComputePlan exists. It writes the format of
reports/schema/compute-plan-dump.schema.json ("ane-validator/placement-dump@1"): every op of every
function and nested block, including const / constexpr ops with null usage, the per-op preferred
and supported devices and estimated cost, plus the sha256 of the shard's model.mil so the Linux
side refuses a dump taken from another build.

Usage:
  python3 dump_compute_plan.py SHARD.mlmodelc [SHARD2.mlmodelc ...] [-o OUT_DIR]
                               [--compute-units CPU_AND_NE|ALL|CPU_AND_GPU|CPU_ONLY]
  python3 dump_compute_plan.py SHARD.mlpackage ...   (compiled first with coremltools)

  Writes OUT_DIR/<shard name>.json (default OUT_DIR: current directory); then on Linux:
  ane-validator shards/*.mlmodelc --plan-dir OUT_DIR

Gate with CPU_AND_NE (the default): it is what ANE-targeted shards ship with; under ALL, a Mac
often gives ANE-eligible work to the GPU. A plan describes only the machine it was made on
(chip, OS build): record several machines in separate directories when it matters.
"""
import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile

import coremltools as ct
from coremltools.models.compute_device import (MLCPUComputeDevice, MLGPUComputeDevice,
                                               MLNeuralEngineComputeDevice)
from coremltools.models.compute_plan import MLComputePlan


def device_name(device):
    if isinstance(device, MLNeuralEngineComputeDevice):
        return "ane"
    if isinstance(device, MLGPUComputeDevice):
        return "gpu"
    if isinstance(device, MLCPUComputeDevice):
        return "cpu"
    raise ValueError(f"unknown compute device {device!r}")


def ane_core_count():
    for device in ct.models.compute_device.MLComputeDevice.get_all_compute_devices():
        if isinstance(device, MLNeuralEngineComputeDevice):
            return device.total_core_count
    return None


def compile_if_needed(path, workdir):
    """MLComputePlan reads compiled models only; compile an .mlpackage into workdir."""
    if path.rstrip("/").endswith(".mlmodelc"):
        return path.rstrip("/")
    compiled = ct.utils.compile_model(path, os.path.join(workdir, os.path.basename(path.rstrip("/"))
                                                          .replace(".mlpackage", ".mlmodelc")))
    return str(compiled)


def walk_block(plan, block, function, block_path, ops):
    for op in block.operations:
        usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
        cost = plan.get_estimated_cost_for_mlprogram_operation(op)
        entry = {
            "seq": len(ops),
            "block_path": list(block_path),
            "operator": op.operator_name,
            "outputs": [o.name for o in op.outputs],
            # nil usage is recorded as null (Apple's own serializer skips such ops).
            "preferred": device_name(usage.preferred_compute_device) if usage else None,
            "supported": [device_name(d) for d in usage.supported_compute_devices] if usage else None,
            "cost": cost.weight if cost is not None else None,
        }
        ops.append(entry)
        for index, nested in enumerate(op.blocks):
            walk_block(plan, nested, function, block_path + [index], ops)


def chip_name():
    try:
        return subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return platform.machine()


def dump_one(path, compute_units, out_dir, workdir):
    compiled = compile_if_needed(path, workdir)
    with open(os.path.join(compiled, "model.mil"), "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    plan = MLComputePlan.load_from_path(path=compiled,
                                        compute_units=getattr(ct.ComputeUnit, compute_units))
    program = plan.model_structure.program
    if program is None:
        raise SystemExit(f"{path}: not an ML program (neural network / pipeline plans are not dumped)")
    functions = []
    for name, function in program.functions.items():
        ops = []
        walk_block(plan, function.block, name, [-1], ops)
        functions.append({"name": name, "ops": ops})
    name = os.path.basename(path.rstrip("/")).replace(".mlpackage", ".mlmodelc")
    dump = {
        "schema": "ane-validator/placement-dump@1",
        "producer": {"api": "MLComputePlan", "tool": "validators/mac/dump_compute_plan.py",
                     "coremltools": ct.__version__},
        "host": {"os": f"macOS {platform.mac_ver()[0]}", "chip": chip_name(),
                 "ane_total_cores": ane_core_count(), "target": "local"},
        "model": {"name": name, "sha256_model_mil": sha},
        "compute_units": compute_units,
        "functions": functions,
        "logs": {"espresso_unsupported": [], "ane_compile_errors": []},
    }
    out = os.path.join(out_dir, name + ".json")
    with open(out + ".tmp", "w") as f:
        json.dump(dump, f, indent=1)
        f.write("\n")
    os.replace(out + ".tmp", out)
    compute = sum(1 for f in functions for o in f["ops"]
                  if not (o["operator"] == "const" or o["operator"].split(".")[-1].startswith("constexpr_")))
    on_ane = sum(1 for f in functions for o in f["ops"] if o["preferred"] == "ane")
    print(f"{out}: {compute} compute ops, {on_ane} preferred on the ANE")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shards", nargs="+", help=".mlmodelc (or .mlpackage) directories")
    parser.add_argument("-o", "--out-dir", default=".")
    parser.add_argument("--compute-units", default="CPU_AND_NE",
                        choices=["CPU_AND_NE", "ALL", "CPU_AND_GPU", "CPU_ONLY"])
    args = parser.parse_args()
    if sys.platform != "darwin":
        raise SystemExit("MLComputePlan exists only on macOS 14.4+; run this on a Mac")
    os.makedirs(args.out_dir, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="sg_plan_")
    try:
        for shard in args.shards:
            dump_one(shard, args.compute_units, args.out_dir, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
