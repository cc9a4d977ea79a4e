"""capture_device_outputs.py's real logic through the fake runtime (whose "device" is our CPU
interpreter via golden-validator exec), judged by the real golden-validator compare."""
import json
import os

import numpy as np

import capture_device_outputs
from conftest import GOLDEN_VALIDATOR, ROOT, SAMPLE_PACKAGE, run_tool
from fake_runtime import FakeRuntime

CHAIN = os.path.join(ROOT, "goldens", "sample", "chains", "chain_lut4.json")
GOLDENS = os.path.join(ROOT, "goldens", "sample", "goldens")


def test_chain_capture_is_a_dump_compare_accepts(tmp_path):
    runtime = FakeRuntime(golden_validator=GOLDEN_VALIDATOR)
    out = tmp_path / "device"
    assert capture_device_outputs.main([CHAIN, "--out", str(out)], runtime=runtime) == 0
    manifest = json.load(open(out / "manifest.json"))
    names = {t["name"]: t for t in manifest["tensors"]}
    chain = json.load(open(CHAIN))
    assert set(names) == {c["golden"] for c in chain["checkpoints"]} | {"input_ids"}
    assert names["input_ids"]["kind"] == "input"
    assert names["logits"]["kind"] == "logits" and names["hidden.2"]["layer"] == 2
    # every shard step went through the seam once, with CPU_AND_NE
    shard_steps = [s for s in chain["steps"] if "shard" in s]
    assert sum(len(m.calls) for m in runtime.models) == len(shard_steps)
    r = run_tool(GOLDEN_VALIDATOR, "compare", "--candidate", str(out), "--reference", GOLDENS)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and "0 degenerate" in r.stdout


def test_shard_capture_writes_outputs(tmp_path):
    x = (np.random.default_rng(1).standard_normal((1, 8, 64)) * 0.5).astype(np.float16)
    np.save(tmp_path / "hidden.npy", x)
    out = tmp_path / "device"
    code = capture_device_outputs.main(
        [SAMPLE_PACKAGE, "--input", f"hidden={tmp_path / 'hidden.npy'}", "--out", str(out)],
        runtime=FakeRuntime(golden_validator=GOLDEN_VALIDATOR))
    assert code == 0
    manifest = json.load(open(out / "manifest.json"))
    assert [t["name"] for t in manifest["tensors"]] == ["hidden_out"]
    t = manifest["tensors"][0]
    assert t["shape"] == [1, 8, 64] and t["kind"] == "output" and t["position_axis"] == 1
    # compare against itself: the dump is well-formed for the reader
    r = run_tool(GOLDEN_VALIDATOR, "compare", "--candidate", str(out), "--reference", str(out))
    assert r.returncode == 0, r.stdout + r.stderr


def test_bad_chain_is_an_input_error_naming_the_place(tmp_path, capsys):
    chain = json.load(open(CHAIN))
    chain["goldens"] = os.path.relpath(GOLDENS, tmp_path)
    for s in chain["steps"]:
        if "shard" in s:
            s["shard"] = os.path.relpath(os.path.join(os.path.dirname(CHAIN), s["shard"]), tmp_path)
    chain["steps"][1]["inputs"] = {"hidden": "no_such_tensor"}
    bad = tmp_path / "bad_chain.json"
    bad.write_text(json.dumps(chain))
    code = capture_device_outputs.main([str(bad), "--out", str(tmp_path / "o")],
                                       runtime=FakeRuntime(golden_validator=GOLDEN_VALIDATOR))
    assert code == 2
    err = capsys.readouterr().err
    assert "bad_chain.json: $.steps[1]" in err and "no_such_tensor" in err


def test_out_into_the_chains_goldens_is_refused_not_clobbered(tmp_path, capsys):
    # --out pointing at the chain's goldens replaced their manifest and tensors with the device
    # outputs: the reference was gone, and compare against "the goldens" compared the device
    # with itself (PASS).
    import shutil
    goldens = tmp_path / "goldens"
    shutil.copytree(GOLDENS, goldens)
    chain = json.load(open(CHAIN))
    chain["goldens"] = str(goldens)
    for s in chain["steps"]:
        if "shard" in s:
            s["shard"] = os.path.normpath(os.path.join(os.path.dirname(CHAIN), s["shard"]))
    path = tmp_path / "chain.json"
    path.write_text(json.dumps(chain))
    before = (goldens / "manifest.json").read_bytes()
    code = capture_device_outputs.main([str(path), "--out", str(goldens) + "/"],
                                       runtime=FakeRuntime(golden_validator=GOLDEN_VALIDATOR))
    err = capsys.readouterr().err
    assert code == 2 and "is the chain's goldens directory" in err, err
    assert (goldens / "manifest.json").read_bytes() == before


def test_a_shard_core_ml_cannot_load_or_run_is_exit_two_naming_it(tmp_path, capsys):
    # Core ML's proxy raises a bare exception for a function the shard lacks or inputs it
    # refuses; it escaped as a traceback (exit 1) that did not name the shard.
    code = capture_device_outputs.main(
        [SAMPLE_PACKAGE, "--function", "no_such_function", "--out", str(tmp_path / "o")],
        runtime=FakeRuntime(golden_validator=GOLDEN_VALIDATOR))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "L0_attn_lut4.mlpackage: Core ML could not run it: CalledProcessError" in err, err
    assert not (tmp_path / "o" / "manifest.json").exists()


def test_the_capture_names_the_shard_builds_chain_and_host_it_ran(tmp_path):
    # The golden dump has a provenance record (the shards' fingerprints, the chain and its
    # sha256: what golden-validator record writes); the capture wrote none, so a device dump
    # could not be tied to the builds it ran, nor told from a fake run.
    import hashlib
    from shard_fingerprint import shard_fingerprint
    out = tmp_path / "device"
    argv = [CHAIN, "--out", str(out)]
    assert capture_device_outputs.main(argv, runtime=FakeRuntime(
        golden_validator=GOLDEN_VALIDATOR)) == 0
    p = json.load(open(out / "manifest.json"))["provenance"]
    chain = json.load(open(CHAIN))
    steps = [s for s in chain["steps"] if "shard" in s]
    assert [s["id"] for s in p["shards"]] == [s["id"] for s in steps]
    for recorded, step in zip(p["shards"], steps):
        path = os.path.normpath(os.path.join(os.path.dirname(CHAIN), step["shard"]))
        assert recorded["path"] == path and recorded["fingerprint"] == shard_fingerprint(path)
    assert p["chain"] == CHAIN
    assert p["chain_sha256"] == hashlib.sha256(open(CHAIN, "rb").read()).hexdigest()
    assert p["command_line"] == ["capture_device_outputs.py"] + argv
    assert "CPU_AND_NE on Linux (fake)" in p["tool"] and "FAKE runtime" in p["tool"], p["tool"]
    # golden-validator reads the record (its keys are checked) and compare still accepts it
    r = run_tool(GOLDEN_VALIDATOR, "compare", "--candidate", str(out), "--reference", GOLDENS)
    assert r.returncode == 0, r.stdout + r.stderr
