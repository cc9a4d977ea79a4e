"""Shard fingerprint v1, computed exactly as shardgate's C++ Shard::fingerprint() does.

A report names each shard it judged by this fingerprint; a compute-plan dump names the shard it
was captured for by it. The definition (runtime/format/README.md, "Shard fingerprint"):

  files  = the program file (model.mil of an .mlmodelc; the root model.mlmodel that an
           .mlpackage's Manifest.json names) and every regular file below the model
           directory's weights/ folder, each named by its path relative to the shard
           directory with '/' separators, sorted bytewise;
  digest = sha256("shardgate-fingerprint-v1\n" +
                  for each file: "<relative path>\n<size in bytes>\n<sha256 hex of content>\n")

Standard library only, so it runs on a Mac beside coremltools and on Linux in the tests.
Usage: python3 shard_fingerprint.py SHARD.mlpackage|SHARD.mlmodelc
"""
import hashlib
import json
import os
import sys


def program_file(shard_dir):
    """model.mil of an .mlmodelc; the root model file Manifest.json names in an .mlpackage."""
    mil = os.path.join(shard_dir, "model.mil")
    if os.path.isfile(mil):
        return mil
    manifest_path = os.path.join(shard_dir, "Manifest.json")
    with open(manifest_path, "rb") as f:
        manifest = json.load(f)
    root = manifest["rootModelIdentifier"]
    entry = manifest["itemInfoEntries"][root]
    return os.path.join(shard_dir, "Data", entry["path"])


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fingerprint_files(shard_dir):
    """The files the fingerprint covers, in hashing order: [{"path", "size", "sha256"}]."""
    shard_dir = shard_dir.rstrip("/") or "/"
    program = program_file(shard_dir)
    files = [program]
    weights = os.path.join(os.path.dirname(program), "weights")
    if os.path.isdir(weights):
        for dirpath, _dirnames, filenames in os.walk(weights):
            for name in filenames:
                p = os.path.join(dirpath, name)
                if os.path.isfile(p) and not os.path.islink(p):
                    files.append(p)
    rel = sorted(
        (os.path.relpath(p, shard_dir).replace(os.sep, "/").encode("utf-8"), p) for p in files
    )
    return [{"path": name.decode("utf-8"), "size": os.path.getsize(path),
             "sha256": _sha256_file(path)} for name, path in rel]


def fingerprint_of_files(files):
    manifest = b"shardgate-fingerprint-v1\n"
    for f in files:
        manifest += f["path"].encode("utf-8") + b"\n" + str(f["size"]).encode() + b"\n"
        manifest += f["sha256"].encode() + b"\n"
    return hashlib.sha256(manifest).hexdigest()


def shard_fingerprint(shard_dir):
    return fingerprint_of_files(fingerprint_files(shard_dir))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(shard_fingerprint(arg), arg)
