#!/usr/bin/env python3
"""Run a shard or a chain of shards on this Mac's Neural Engine and write the outputs as a
golden dump, so golden-validator compare sets the CPU emulation against real ANE numerics.

Runs on a Mac (macOS 15+ for iOS18 shards; coremltools >= 8.1; tested against 9.0). Every
shard is loaded with compute_units CPU_AND_NE (what ANE-targeted shards ship with) and
predicted through coremltools; the result is a golden dump directory, "shardgate/golden-dump@1"
(goldens/README.md, reports/schema/golden-dump.schema.json): manifest.json plus one .npy per
tensor with its sha256. The manifest's provenance names every shard run with its fingerprint,
the chain with its sha256, the command line, and (in "tool") the compute units and this Mac.

  chain mode   capture_device_outputs.py CHAIN.json --out DEVICE_DUMP
               Runs the chain manifest (goldens/README.md "Chain manifest") free-running, as
               golden-validator run does: chain inputs from the goldens ("golden:NAME") or .npy
               files ("npy:PATH"), shard steps (function, input and output mappings), combine
               steps (sum; concat along an axis) and state carried across calls (one Core ML
               state per shard and state key set, zeros at start). Writes every checkpoint
               tensor under its golden name with the golden's kind, layer and position axis,
               and the chain inputs taken from the goldens with kind "input" (compare checks
               that the prompt is the same).
  shard mode   capture_device_outputs.py SHARD --input NAME=x.npy [...] [--function F]
                                         --out DEVICE_DUMP
               Runs one function once and writes each output (kind "output", position axis 1
               for rank >= 2, as golden-validator reads unannotated tensors).

Then, on Linux:
  golden-validator compare --candidate DEVICE_DUMP --reference GOLDENS

Per-op outputs are not captured: Core ML returns a model's declared outputs only, and
exposing an intermediate means rewriting and recompiling the model (coremltools'
experimental MLModelInspector does that), which changes the program the ANE compiler sees.
Capture at chain checkpoints (shard boundaries) instead; split a shard to look inside it.

The Apple calls (model loading, predict) sit behind one seam, apple_runtime.py; the Linux
tests drive this file's real logic through a fake runtime (validators/mac/README.md).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from apple_runtime import core_ml_call  # noqa: E402
from shard_fingerprint import shard_fingerprint  # noqa: E402

COMPUTE_UNITS = "CPU_AND_NE"
DTYPES = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "int8": "int8",
          "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
          "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool"}


class InputError(Exception):
    """Bad input: names the file and the place."""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: {e}") from e


class Goldens:
    """A golden dump directory (manifest.json + .npy), read for chain inputs and metadata."""

    def __init__(self, directory):
        self.directory = directory
        manifest = load_json(os.path.join(directory, "manifest.json"))
        if manifest.get("schema") != "shardgate/golden-dump@1":
            raise InputError(f"{directory}/manifest.json: schema is not shardgate/golden-dump@1")
        self.manifest = manifest
        self.entries = {t["name"]: t for t in manifest.get("tensors", [])}

    def entry(self, name, where):
        if name not in self.entries:
            raise InputError(f"{where}: golden '{name}' is not in {self.directory}/manifest.json")
        return self.entries[name]

    def load(self, name, where):
        entry = self.entry(name, where)
        path = os.path.join(self.directory, entry["file"])
        with open(path, "rb") as f:
            data = f.read()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise InputError(f"{path}: sha256 differs from {self.directory}/manifest.json")
        return np.load(path)


class DumpWriter:
    """Writes a golden dump: each .npy, then manifest.json (atomically, last)."""

    def __init__(self, directory, model, provenance, prompt_token_ids=None):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.manifest = {"schema": "shardgate/golden-dump@1", "model": model,
                         "dtype": None, "provenance": provenance, "tensors": []}
        if prompt_token_ids is not None:
            self.manifest["prompt_token_ids"] = prompt_token_ids
        self.names = set()

    def add(self, name, array, kind, layer=None, position_axis=None):
        if name in self.names:
            raise InputError(f"tensor '{name}' is written twice")
        self.names.add(name)
        array = np.ascontiguousarray(array)
        if array.dtype.name not in DTYPES:
            raise InputError(f"tensor '{name}': dtype {array.dtype} has no golden-dump name")
        file = "".join(c if c.isalnum() or c in "-_" else "_" for c in name) + ".npy"
        path = os.path.join(self.directory, file)
        np.save(path + ".tmp.npy", array)
        os.replace(path + ".tmp.npy", path)
        with open(path, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        if position_axis is not None and position_axis >= array.ndim:
            position_axis = None
        self.manifest["tensors"].append({
            "name": name, "kind": kind, "layer": layer, "position_axis": position_axis,
            "shape": list(array.shape), "dtype": DTYPES[array.dtype.name], "file": file,
            "sha256": sha})
        if kind != "input" and self.manifest["dtype"] is None and array.dtype.kind == "f":
            self.manifest["dtype"] = DTYPES[array.dtype.name]

    def close(self):
        if self.manifest["dtype"] is None:
            self.manifest["dtype"] = "fp16"
        path = os.path.join(self.directory, "manifest.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.manifest, f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)


def provenance(runtime, command_line, shards, chain=None):
    """The golden dump's provenance (reports/schema/golden-dump.schema.json): which shard builds
    ran (fingerprints, as golden-validator record names them), which chain, and where -- the
    host is in `tool`, the one free-text member, so a capture by tests/mac's fake says so."""
    host = runtime.host()
    tool = (f"validators/mac/capture_device_outputs.py: Core ML {COMPUTE_UNITS} on "
            f"{host.get('os')}, {host.get('chip')} (ANE cores {host.get('ane_total_cores')}, "
            f"target {host.get('target')})")
    note = getattr(runtime, "note", None)
    if note:
        tool += f"; {note}"
    try:
        fingerprints = [{"id": sid, "path": path, "fingerprint": shard_fingerprint(path)}
                        for sid, path in shards]
    except (OSError, ValueError, KeyError) as e:
        raise InputError(f"shard fingerprint: {type(e).__name__}: {e}") from e
    p = {"tool": tool, "command_line": list(command_line), "shards": fingerprints}
    if chain:
        with open(chain, "rb") as f:
            p.update(chain=chain, chain_sha256=hashlib.sha256(f.read()).hexdigest())
    return p


class ChainRunner:
    """Runs a chain manifest on the device through `runtime`, free-running."""

    def __init__(self, manifest_path, runtime, command_line=()):
        self.path = manifest_path
        self.command_line = command_line
        self.base = os.path.dirname(os.path.abspath(manifest_path))
        self.chain = load_json(manifest_path)
        if self.chain.get("schema") != "shardgate/chain@1":
            raise InputError(f"{manifest_path}: schema is not shardgate/chain@1")
        self.runtime = runtime
        self.goldens = Goldens(self.resolve(self.chain.get("goldens", "."), "$.goldens"))
        self.models = {}
        self.shards_run = []  # (step id, shard path) of every shard step run, for provenance
        self.states = {}
        self.tensors = {}
        self.from_goldens = []  # chain inputs taken from the goldens: written as kind "input"

    def resolve(self, relative, where):
        if not isinstance(relative, str) or not relative:
            raise InputError(f"{self.path}: {where}: expected a path")
        return os.path.normpath(os.path.join(self.base, relative))

    def model(self, shard, function):
        key = (shard, function)
        if key not in self.models:
            self.models[key] = core_ml_call(InputError, shard, f"load function '{function}'",
                                            self.runtime.load_model, shard, COMPUTE_UNITS,
                                            function)
        return self.models[key]

    def tensor(self, name, where):
        if name not in self.tensors:
            raise InputError(f"{self.path}: {where}: chain tensor '{name}' is not produced "
                             "before it is used")
        return self.tensors[name]

    def load_inputs(self):
        for name, source in self.chain.get("inputs", {}).items():
            where = f"$.inputs.{name}"
            if isinstance(source, str) and source.startswith("golden:"):
                golden = source[len("golden:"):]
                self.tensors[name] = self.goldens.load(golden, f"{self.path}: {where}")
                self.from_goldens.append((golden, name))
            elif isinstance(source, str) and source.startswith("npy:"):
                file = self.resolve(source[len("npy:"):], where)
                try:
                    self.tensors[name] = np.load(file)
                except (OSError, ValueError) as e:
                    raise InputError(f"{file}: {e}") from e
            else:
                raise InputError(f"{self.path}: {where}: expected \"golden:NAME\" or \"npy:PATH\"")

    def state_for(self, step, model, where):
        mapping = step.get("state")
        if not mapping:
            return None
        key = (id(model), tuple(sorted(mapping.values())))
        if key not in self.states:
            state = model.make_state()
            for shard_name, chain_key in mapping.items():
                initial = self.chain.get("states", {}).get(chain_key, {})
                if "npy" in initial:
                    state.write_state(shard_name, np.load(self.resolve(initial["npy"], where)))
            self.states[key] = state
        return self.states[key]

    def run_step(self, index, step):
        where = f"$.steps[{index}] ({step.get('id', '?')})"
        if "combine" in step:
            arrays = [self.tensor(n, where) for n in step.get("inputs", [])]
            if not arrays:
                raise InputError(f"{self.path}: {where}: a combine step needs inputs")
            if step["combine"] == "sum":
                shapes = {a.shape for a in arrays}
                if len(shapes) != 1:
                    raise InputError(f"{self.path}: {where}: sum of different shapes {shapes}")
                total = arrays[0].astype(np.float32)
                for a in arrays[1:]:
                    total = total + a.astype(np.float32)
                result = total.astype(arrays[0].dtype)
            elif step["combine"] == "concat":
                result = np.concatenate(arrays, axis=step.get("axis", -1))
            else:
                raise InputError(f"{self.path}: {where}: unknown combine '{step['combine']}'")
            self.tensors[step["output"]] = result
            return
        shard = self.resolve(step.get("shard"), where + ".shard")
        self.shards_run.append((step.get("id", f"step{index}"), shard))
        model = self.model(shard, step.get("function", "main"))
        inputs = {name: self.tensor(chain, where) for name, chain in step.get("inputs", {}).items()}
        state = self.state_for(step, model, where)
        outputs = core_ml_call(InputError, f"{self.path}: {where}: shard {shard}", "run it",
                               model.predict, inputs, state)
        for shard_name, chain_name in step.get("outputs", {}).items():
            if shard_name not in outputs:
                raise InputError(f"{self.path}: {where}: shard {shard} returned no output "
                                 f"'{shard_name}' (it returned {sorted(outputs)})")
            self.tensors[chain_name] = np.asarray(outputs[shard_name])

    def run(self, out_dir):
        # The dump written into the goldens directory would replace the reference manifest and
        # tensors the comparison needs (compare would then set the device against itself).
        if os.path.realpath(out_dir) == os.path.realpath(self.goldens.directory):
            raise InputError(f"--out {out_dir} is the chain's goldens directory "
                             f"({self.goldens.directory}): writing there would replace the "
                             "goldens the device outputs are to be compared with")
        self.load_inputs()
        for index, step in enumerate(self.chain.get("steps", [])):
            self.run_step(index, step)
        writer = DumpWriter(out_dir, model=self.chain.get("name", "chain") + " on the device",
                            provenance=provenance(self.runtime, self.command_line,
                                                  self.shards_run, self.path),
                            prompt_token_ids=self.goldens.manifest.get("prompt_token_ids"))
        for golden, chain_name in self.from_goldens:
            entry = self.goldens.entry(golden, self.path)
            writer.add(golden, self.tensors[chain_name], "input", entry.get("layer"),
                       entry.get("position_axis"))
        checkpoints = self.chain.get("checkpoints", [])
        if not checkpoints:
            raise InputError(f"{self.path}: no checkpoints: nothing to capture")
        for i, cp in enumerate(checkpoints):
            where = f"$.checkpoints[{i}]"
            entry = self.goldens.entry(cp["golden"], f"{self.path}: {where}")
            writer.add(cp["golden"], self.tensor(cp["tensor"], where),
                       cp.get("kind", entry.get("kind", "output")),
                       cp.get("layer", entry.get("layer")), entry.get("position_axis"))
        writer.close()
        return writer.manifest


def capture_shard(shard, function, input_specs, out_dir, runtime, command_line=()):
    inputs = {}
    for spec in input_specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise InputError(f"--input {spec}: expected NAME=FILE.npy")
        try:
            inputs[name] = np.load(file)
        except (OSError, ValueError) as e:
            raise InputError(f"{file}: {e}") from e
    model = core_ml_call(InputError, shard, f"load function '{function}'", runtime.load_model,
                         shard, COMPUTE_UNITS, function)
    outputs = core_ml_call(InputError, shard, "run it", model.predict, inputs)
    name = os.path.basename(shard.rstrip("/"))
    writer = DumpWriter(out_dir, model=name + " on the device",
                        provenance=provenance(runtime, command_line, [(name, shard)]))
    for name in sorted(outputs):
        array = np.asarray(outputs[name])
        writer.add(name, array, "output", None, 1 if array.ndim >= 2 else None)
    writer.close()
    return writer.manifest


def main(argv=None, runtime=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="chain manifest (.json) or shard (.mlpackage/.mlmodelc)")
    parser.add_argument("--out", required=True, help="golden dump directory to write")
    parser.add_argument("--function", default="main", help="shard mode: function to run")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                        help="shard mode: an input")
    args = parser.parse_args(argv)
    command_line = ["capture_device_outputs.py"] + list(sys.argv[1:] if argv is None else argv)
    if runtime is None:
        from apple_runtime import AppleRuntime
        runtime = AppleRuntime()
    try:
        if args.target.endswith(".json"):
            manifest = ChainRunner(args.target, runtime, command_line).run(args.out)
        else:
            manifest = capture_shard(args.target, args.function, args.input, args.out, runtime,
                                     command_line)
    except InputError as e:
        print(f"capture_device_outputs.py: {e}", file=sys.stderr)
        return 2
    print(f"{args.out}: {len(manifest['tensors'])} tensor(s) captured with {COMPUTE_UNITS}; "
          f"compare with: golden-validator compare --candidate {args.out} --reference GOLDENS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
