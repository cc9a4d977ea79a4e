"""Saving .mlpackage files reproducibly."""
import json
import os
import shutil
import uuid

import coremltools as ct

GENERATOR = "shardgate tests/generators/generate_fixtures.py"


def save(model, path, description, extra_metadata=None):
    """Saves `model` at `path` (replacing it). coremltools names the package items with random
    UUIDs; they are replaced by UUIDs derived from the file name so that regenerating leaves
    Manifest.json unchanged."""
    if os.path.exists(path):
        shutil.rmtree(path)
    model.short_description = description
    md = model.user_defined_metadata
    # The conversion date would make every regeneration differ; the coremltools version
    # (kept) is what matters for reproducing the files.
    if "com.github.apple.coremltools.conversion_date" in md:
        del md["com.github.apple.coremltools.conversion_date"]
    md["com.shardgate.generator"] = GENERATOR
    md["com.shardgate.coremltools_version"] = ct.__version__
    for k, v in (extra_metadata or {}).items():
        md[k] = str(v)
    model.save(path)
    _stabilise_manifest(path)
    _deterministic_spec(path)


def _deterministic_spec(path):
    """Re-serialises model.mlmodel with sorted map entries: protobuf map order otherwise
    follows Python's per-process hash seed, so the bytes would change on every run."""
    from coremltools.proto import Model_pb2
    for root, _, files in os.walk(os.path.join(path, "Data")):
        for f in files:
            if f.endswith(".mlmodel"):
                p = os.path.join(root, f)
                spec = Model_pb2.Model()
                with open(p, "rb") as fh:
                    spec.ParseFromString(fh.read())
                with open(p, "wb") as fh:
                    fh.write(spec.SerializeToString(deterministic=True))


def _stabilise_manifest(path):
    mpath = os.path.join(path, "Manifest.json")
    with open(mpath) as f:
        m = json.load(f)
    base = os.path.basename(path)
    items = m.get("itemInfoEntries", {})
    mapping = {}
    for old, info in sorted(items.items(), key=lambda kv: kv[1].get("path", "")):
        mapping[old] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"shardgate:{base}:{info.get('path')}"))
        mapping[old] = mapping[old].upper()
    m["itemInfoEntries"] = {mapping[k]: v for k, v in items.items()}
    if m.get("rootModelIdentifier") in mapping:
        m["rootModelIdentifier"] = mapping[m["rootModelIdentifier"]]
    with open(mpath, "w") as f:
        json.dump(m, f, indent=2, sort_keys=True)
        f.write("\n")
