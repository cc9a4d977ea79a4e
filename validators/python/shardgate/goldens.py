"""Writing golden dumps (schema shardgate/golden-dump@1, goldens/README.md of the repository):
one .npy per tensor and a manifest.json with kind, layer, position axis, shape, dtype and the
sha256 of every file. What a converter otherwise writes by hand after each layer of its
reference model."""

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ._arrays import as_numpy
from ._errors import Error
from .schema import validate

# numpy dtype -> manifest spelling (MIL names).
_DTYPES = {
    np.dtype(np.float16): "fp16", np.dtype(np.float32): "fp32", np.dtype(np.float64): "fp64",
    np.dtype(np.int8): "int8", np.dtype(np.int16): "int16", np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64", np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32", np.dtype(np.uint64): "uint64", np.dtype(np.bool_): "bool",
}
_FLOAT_DTYPES = {"fp16": np.float16, "fp32": np.float32}


def _write_atomic(path, write):
    """Calls write(file) on a temporary file beside `path`, then renames it into place."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class GoldenDumpWriter:
    """Writes a golden dump directory.

        with shardgate.GoldenDumpWriter("goldens", model="my-llm", dtype="fp16",
                                        prompt_token_ids=ids) as dump:
            dump.add_input_ids(ids)                 # kind input, int32, [1, T]
            dump.add_embed(embedding_output)        # kind hidden, layer -1
            for n, h in enumerate(hidden_states):   # residual stream after layer n
                dump.add_hidden(n, h)
            dump.add_logits(logits)                 # kind logits

    Float tensors are stored in the dump's dtype (fp16 by default, the ANE's) unless `dtype` is
    given; integer and bool tensors keep theirs. `position_axis` (default 1: [batch, position,
    ...]) is where metrics are split per token; None makes the whole tensor one row. finish()
    writes manifest.json, validates it against the shipped schema and reopens the dump with
    the library's own reader, checking every file's sha256, shape and dtype.
    """

    def __init__(self, directory, model, dtype="fp16", prompt_token_ids=None):
        if dtype not in _FLOAT_DTYPES:
            raise ValueError(f"dtype must be 'fp16' or 'fp32', not {dtype!r}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.model = str(model)
        self.dtype = dtype
        self.prompt_token_ids = [int(t) for t in as_numpy(prompt_token_ids).reshape(-1)] \
            if prompt_token_ids is not None else []
        self.entries = []
        self._finished = False

    def add(self, name, tensor, kind, layer=None, position_axis=1, dtype=None):
        """Adds one tensor; returns its manifest entry."""
        if self._finished:
            raise Error(f"{self.directory}: add('{name}') after finish()", 2)
        if not name or not isinstance(name, str):
            raise ValueError("name must be a non-empty string")
        if any(e["name"] == name for e in self.entries):
            raise Error(f"{self.directory}: tensor '{name}' was already added", 2)
        array = as_numpy(tensor, name)
        if dtype is not None:
            array = array.astype(_FLOAT_DTYPES[dtype] if dtype in _FLOAT_DTYPES else dtype)
        elif array.dtype.kind == "f":
            array = array.astype(_FLOAT_DTYPES[self.dtype])
        array = np.ascontiguousarray(array)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        spelled = _DTYPES.get(np.dtype(array.dtype))
        if spelled is None:
            raise Error(f"{self.directory}: tensor '{name}': dtype {array.dtype} has no golden dump "
                        f"spelling", 2)
        if position_axis is not None:
            axis = int(position_axis)
            if axis < 0:
                axis += array.ndim
            if not 0 <= axis < array.ndim:
                raise Error(f"{self.directory}: tensor '{name}': position_axis {position_axis} is "
                            f"outside rank {array.ndim}", 2)
            position_axis = axis
        file_name = name.replace(".", "_").replace("/", "_") + ".npy"
        if any(e["file"] == file_name for e in self.entries):
            raise Error(f"{self.directory}: tensor '{name}': file {file_name} is taken by another "
                        f"tensor", 2)
        path = self.directory / file_name
        _write_atomic(path, lambda f: np.save(f, array, allow_pickle=False))
        entry = {
            "name": name, "kind": kind, "layer": None if layer is None else int(layer),
            "position_axis": position_axis, "shape": [int(d) for d in array.shape],
            "dtype": spelled, "file": file_name,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        }
        self.entries.append(entry)
        return entry

    def add_input_ids(self, token_ids, name="input_ids"):
        ids = as_numpy(token_ids, name).astype(np.int32)
        if ids.ndim == 1:
            ids = ids[None, :]
        return self.add(name, ids, "input", position_axis=ids.ndim - 1)

    def add_embed(self, tensor, position_axis=1):
        return self.add("embed", tensor, "hidden", layer=-1, position_axis=position_axis)

    def add_hidden(self, layer, tensor, position_axis=1):
        """The residual stream after layer `layer` (the input of the next layer)."""
        return self.add(f"hidden.{int(layer)}", tensor, "hidden", layer=int(layer),
                        position_axis=position_axis)

    def add_logits(self, tensor, position_axis=1, name="logits"):
        return self.add(name, tensor, "logits", position_axis=position_axis)

    def manifest(self):
        return {"schema": "shardgate/golden-dump@1", "model": self.model, "dtype": self.dtype,
                "prompt_token_ids": self.prompt_token_ids, "tensors": list(self.entries)}

    def finish(self):
        """Writes manifest.json (atomically), validates it and reopens the dump with the
        library. Returns the manifest path."""
        manifest = self.manifest()
        path = self.directory / "manifest.json"
        validate(manifest, "golden-dump", str(path))
        text = json.dumps(manifest, indent=2) + "\n"
        _write_atomic(path, lambda f: f.write(text.encode()))
        from ._native import GoldenSource

        GoldenSource(str(self.directory)).verify_all()
        self._finished = True
        return path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None and not self._finished:
            self.finish()
        return False
