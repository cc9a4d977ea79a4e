"""Chain manifests (schema shardgate/chain@1, goldens/README.md of the repository): building
them from Python, and running or gating a chain."""

import json
import os
from pathlib import Path

from . import _native
from ._errors import Error
from .schema import validate


def _relative(path, base):
    return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()


class ChainBuilder:
    """Builds a chain manifest step by step; write() makes every path relative to the manifest,
    validates the result against the shipped schema, and has the library load it (wiring,
    forward references, files present) before it is renamed into place.

        chain = shardgate.ChainBuilder("my-llm-lut4", goldens="goldens/")
        chain.input("input_ids", golden="input_ids")
        chain.shard("embed", "shards/embed.mlpackage", {"input_ids": "input_ids"},
                    {"hidden": "embed"})
        prev = "embed"
        for n in range(layers):
            chain.shard(f"L{n}", f"shards/L{n}.mlpackage", {"hidden": prev},
                        {"hidden_out": f"hidden.{n}"}, layer=n, residual_input="hidden")
            chain.checkpoint(f"hidden.{n}", kind="hidden", layer=n)
            prev = f"hidden.{n}"
        chain.write("chains/my-llm-lut4.json")

    Paths given to the builder are relative to the current directory (or absolute).
    """

    def __init__(self, name, goldens=None):
        self.name = str(name)
        self.goldens = goldens
        self.inputs = {}
        self.steps = []
        self.states = {}
        self.checkpoints = []

    def _check_id(self, step_id):
        if any(s["id"] == step_id for s in self.steps):
            raise Error(f"chain '{self.name}': step id '{step_id}' is used twice", 2)

    def input(self, tensor, golden=None, npy=None):
        """A chain input: tensor `golden` of the golden dump, or an .npy file."""
        if (golden is None) == (npy is None):
            raise ValueError("give exactly one of golden= or npy=")
        self.inputs[tensor] = ("golden", golden) if golden is not None else ("npy", npy)
        return self

    def shard(self, step_id, shard, inputs, outputs, layer=None, function="main",
              residual_input=None, state=None):
        """A shard step: `inputs` maps shard input names to chain tensors, `outputs` shard output
        names to chain tensors, `state` shard state names to chain state keys."""
        self._check_id(step_id)
        step = {"id": step_id, "shard": shard, "function": function, "inputs": dict(inputs),
                "outputs": dict(outputs)}
        if layer is not None:
            step["layer"] = int(layer)
        if residual_input is not None:
            step["residual_input"] = residual_input
        if state:
            step["state"] = dict(state)
        self.steps.append(step)
        return self

    def sum(self, step_id, inputs, output, layer=None):
        """Elementwise sum of chain tensors (MoE packs, residual adds)."""
        return self._combine(step_id, "sum", inputs, output, layer, None)

    def concat(self, step_id, inputs, output, axis=-1, layer=None):
        """Concatenation along `axis` (split LM heads)."""
        return self._combine(step_id, "concat", inputs, output, layer, axis)

    def _combine(self, step_id, how, inputs, output, layer, axis):
        self._check_id(step_id)
        step = {"id": step_id, "combine": how, "inputs": list(inputs), "output": output}
        if axis is not None:
            step["axis"] = int(axis)
        if layer is not None:
            step["layer"] = int(layer)
        self.steps.append(step)
        return self

    def state(self, key, npy=None, shape=None, dtype=None):
        """The initial value of a chain state key: an .npy file, or zeros of shape and dtype."""
        if npy is not None:
            self.states[key] = {"npy": npy}
        else:
            self.states[key] = {"shape": [int(d) for d in shape], "dtype": dtype}
        return self

    def checkpoint(self, tensor, golden=None, kind="hidden", layer=None):
        """Compares chain tensor `tensor` with golden entry `golden` (default: the same name)."""
        self.checkpoints.append({"tensor": tensor, "golden": golden or tensor, "kind": kind,
                                 "layer": None if layer is None else int(layer)})
        return self

    def to_dict(self, manifest_dir="."):
        """The manifest, with paths relative to `manifest_dir`."""
        doc = {"schema": "shardgate/chain@1", "name": self.name}
        if self.goldens is not None:
            doc["goldens"] = _relative(self.goldens, manifest_dir)
        doc["inputs"] = {t: f"{src}:{_relative(ref, manifest_dir) if src == 'npy' else ref}"
                         for t, (src, ref) in self.inputs.items()}
        steps = []
        for step in self.steps:
            step = dict(step)
            if "shard" in step:
                step["shard"] = _relative(step["shard"], manifest_dir)
            steps.append(step)
        doc["steps"] = steps
        doc["states"] = {k: ({"npy": _relative(v["npy"], manifest_dir)} if "npy" in v else v)
                         for k, v in self.states.items()}
        doc["checkpoints"] = list(self.checkpoints)
        return doc

    def write(self, path):
        """Writes the manifest to `path` (atomically) after validating it; returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = self.to_dict(path.parent)
        validate(doc, "chain", str(path))
        tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        try:
            _native.load_chain_manifest(str(tmp))
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
        return path


def load_chain(path):
    """Loads and checks a chain manifest with the library: {"name", "goldens", "steps",
    "checkpoints"}; shardgate.Error names the file and the JSON place otherwise."""
    return _native.load_chain_manifest(str(path))


def run_chain(path, mode="free-running", precision="fp16", threads=1, keep=()):
    """Runs a chain end to end; returns its checkpoints (and the chain tensors named in `keep`)
    as numpy arrays by chain tensor name. mode: "free-running" or "teacher-forced"."""
    return _native.run_chain(str(path), mode=mode, precision=precision, threads=threads,
                             keep=list(keep))


def gate_chain(path, teacher_forced=False, both=False, gate=None, precision="fp16", threads=1):
    """What `golden-validator run` does: runs the chain, compares every checkpoint with its
    golden and applies the gate file `gate` (None: the built-in defaults, minimum cosine 0.97).
    Returns a shardgate.Report (the same JSON document as --json)."""
    from .reports import Report

    if both:
        modes = ["free-running", "teacher-forced"]
    else:
        modes = ["teacher-forced" if teacher_forced else "free-running"]
    text = _native.gate_chain(str(path), modes=modes, gate="" if gate is None else str(gate),
                              precision=precision, threads=threads)
    return Report(json.loads(text), source=str(path))
