"""dump_compute_plan.py's real logic through the fake runtime, judged by the real ane-validator.

Each test writes dumps with the script (coremltools' real classes; only compile and plan loading
faked, see fake_runtime.py) and runs the built ane-validator on them.
"""
import json
import os
import shutil

import dump_compute_plan
from conftest import (ANE_VALIDATOR, CORPUS, MULTIFUNCTION, ROOT, SAMPLE_PACKAGE, run_tool)
from fake_runtime import FakeRuntime
from shard_fingerprint import shard_fingerprint


def dump(tmp_path, *shards, runtime=None):
    out = tmp_path / "plans"
    written = dump_compute_plan.dump_shards(list(shards), str(out), "CPU_AND_NE",
                                            runtime or FakeRuntime())
    return [json.load(open(p)) for p in written], written


def snapshot(directory):
    files = {}
    for dirpath, _dirs, names in os.walk(directory):
        for name in names:
            p = os.path.join(dirpath, name)
            files[p] = open(p, "rb").read()
    return files


def test_package_dump_records_both_identities_and_is_accepted(tmp_path):
    runtime = FakeRuntime()
    before = snapshot(SAMPLE_PACKAGE)
    (d,), (path,) = dump(tmp_path, SAMPLE_PACKAGE, runtime=runtime)
    # read-only: coremltools' ModelPackage would have rewritten Manifest.json
    assert snapshot(SAMPLE_PACKAGE) == before
    assert d["schema"] == "ane-validator/placement-dump@2"
    assert d["model"]["package"]["name"] == "L0_attn_lut4.mlpackage"
    assert d["model"]["package"]["fingerprint"] == shard_fingerprint(SAMPLE_PACKAGE)
    assert d["model"]["compiled"]["name"] == "L0_attn_lut4.mlmodelc"
    assert runtime.compiled and runtime.compiled[0][0] == SAMPLE_PACKAGE  # went through compile
    mapping = d["model"]["op_mapping"]
    assert mapping["mapped"] == mapping["package_ops"] == mapping["compiled_ops"] > 0
    assert not (mapping["package_only"] or mapping["compiled_only"] or mapping["operator_differs"])
    assert os.path.basename(path) == "L0_attn_lut4.mlpackage.json"
    # shard after --plan: the option takes one value, the shard stays positional (issue 13)
    r = run_tool(ANE_VALIDATOR, "--plan", path, SAMPLE_PACKAGE)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and "plan" in r.stdout


def test_compiled_pair_dump_serves_both_forms(tmp_path):
    package = os.path.join(CORPUS, "unified_int8.mlpackage")
    compiled = os.path.join(CORPUS, "unified_int8.mlmodelc")
    (d,), (path,) = dump(tmp_path, package)
    # the fake "compile" handed back the real Apple-compiled twin: its fingerprint is recorded
    assert d["model"]["compiled"]["fingerprint"] == shard_fingerprint(compiled)
    assert d["model"]["package"]["fingerprint"] == shard_fingerprint(package)
    lstm = [o for f in d["functions"] for o in f["ops"] if o["operator"] == "lstm"]
    assert lstm and all(o["preferred"] == "cpu" for o in lstm)
    for shard in (package, compiled):
        r = run_tool(ANE_VALIDATOR, shard, "--plan", path, "--min-residency", "100")
        assert r.returncode == 1, r.stdout + r.stderr  # the LSTM on the CPU fails 100 %
        assert "fallbacks 1" in r.stdout and r.stdout.split("\n")[0].endswith("plan"), r.stdout
    # --plan-dir pairs the one dump with both forms (by fingerprint; the file name is neither's)
    os.rename(path, os.path.join(os.path.dirname(path), "renamed.json"))
    r = run_tool(ANE_VALIDATOR, package, compiled, "--plan-dir", os.path.dirname(path),
                 "--min-residency", "100")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 shard(s): 0 passed, 2 failed, 0 error(s)" in r.stdout, r.stdout
    assert r.stdout.count("fallbacks 1") == 2


def test_multi_shard_plan_pairs_by_fingerprint(tmp_path):
    int8 = os.path.join(CORPUS, "unified_int8.mlmodelc")
    (d1, d2), paths = dump(tmp_path, SAMPLE_PACKAGE, int8)
    r = run_tool(ANE_VALIDATOR, SAMPLE_PACKAGE, int8, "--plan", paths[1], "--plan", paths[0],
                 "--min-residency", "100")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    # each shard got its own dump (plan costs: only a plan has them), the int8 its CPU LSTM
    assert lines[0].startswith("PASS") and "L0_attn_lut4" in lines[0] and lines[0].endswith("plan")
    assert any(l.startswith("FAIL") and "unified_int8" in l and "fallbacks 1" in l for l in lines)
    # a dump of a shard not given is a usage error naming what it records
    r = run_tool(ANE_VALIDATOR, SAMPLE_PACKAGE, os.path.join(CORPUS, "unified_palette_4bit.mlmodelc"),
                 "--plan", paths[1])
    assert r.returncode == 2 and "unified_int8.mlmodelc (fingerprint" in r.stderr, r.stderr


def test_dump_of_another_build_is_refused_naming_what_differs(tmp_path):
    copy = tmp_path / "L0_attn_lut4.mlpackage"
    shutil.copytree(SAMPLE_PACKAGE, copy)
    (d,), (path,) = dump(tmp_path, str(copy))
    weight = copy / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    data = bytearray(weight.read_bytes())
    data[-1] ^= 0x01  # one weight byte of a rebuilt shard
    weight.write_bytes(bytes(data))
    r = run_tool(ANE_VALIDATOR, str(copy), "--plan", path)
    assert r.returncode == 2, r.stdout + r.stderr
    message = r.stdout + r.stderr
    assert "captured for another build" in message
    assert shard_fingerprint(str(copy)) in message
    assert d["model"]["package"]["fingerprint"] in message
    assert "Data/com.apple.CoreML/weights/weight.bin (same size, other content" in message
    # and a dump from the compiled form alone cannot vouch for a package
    compiled_dump, (cpath,) = dump(tmp_path / "c", os.path.join(CORPUS, "unified_int8.mlmodelc"))
    r = run_tool(ANE_VALIDATOR, os.path.join(CORPUS, "unified_int8.mlpackage"), "--plan", cpath)
    assert r.returncode == 2 and "run dump_compute_plan.py on the .mlpackage" in r.stdout + r.stderr


def test_every_function_of_a_multifunction_shard_gets_devices(tmp_path):
    (d,), (path,) = dump(tmp_path, MULTIFUNCTION)
    names = [f["name"] for f in d["functions"]]
    assert sorted(names) == ["infer", "prefill"]
    for f in d["functions"]:
        compute = [o for o in f["ops"] if not dump_compute_plan.is_compile_time(o["operator"])]
        assert compute and all(o["preferred"] == "ane" for o in compute)
    r = run_tool(ANE_VALIDATOR, MULTIFUNCTION, "--plan", path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_function_missing_from_the_plan_fails(tmp_path):
    (d,), (path,) = dump(tmp_path, MULTIFUNCTION, runtime=FakeRuntime(drop_functions={"infer"}))
    assert d["model"]["op_mapping"]["package_only"]  # said in the dump
    r = run_tool(ANE_VALIDATOR, MULTIFUNCTION, "--plan", path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout
    # a dump that leaves the function out entirely fails too, naming it
    for f in d["functions"]:
        if f["name"] == "infer":
            d["functions"].remove(f)
    edited = tmp_path / "no_infer.json"
    edited.write_text(json.dumps(d))
    r = run_tool(ANE_VALIDATOR, MULTIFUNCTION, "--plan", str(edited))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "function 'infer' of the shard is not in the dump" in r.stdout


def test_check_option_does_not_swallow_the_shard():
    r = run_tool(ANE_VALIDATOR, "--check", "fp16-io", SAMPLE_PACKAGE)
    assert "no shard given" not in r.stderr, r.stderr
    assert "L0_attn_lut4.mlpackage" in r.stdout


def test_bad_shard_is_exit_two_naming_it(tmp_path, capsys):
    not_a_shard = tmp_path / "broken.mlpackage"
    not_a_shard.mkdir()
    (not_a_shard / "Manifest.json").write_text("{not json")
    code = dump_compute_plan.main([str(not_a_shard), "-o", str(tmp_path / "o")],
                                  runtime=FakeRuntime())
    err = capsys.readouterr().err
    assert code == 2 and "broken.mlpackage: JSONDecodeError" in err, err
    code = dump_compute_plan.main([str(tmp_path / "missing.mlmodelc"), "-o", str(tmp_path / "o")],
                                  runtime=FakeRuntime())
    err = capsys.readouterr().err
    assert code == 2 and "missing.mlmodelc" in err, err


def test_two_shards_of_one_name_are_refused_not_clobbered(tmp_path, capsys):
    # a/L0.mlpackage and b/L0.mlpackage both map to OUT/L0.mlpackage.json: the second dump
    # silently replaced the first, leaving one shard of the two without its plan.
    for side in ("a", "b"):
        shutil.copytree(SAMPLE_PACKAGE, tmp_path / side / "L0_attn_lut4.mlpackage")
    out = tmp_path / "o"
    code = dump_compute_plan.main([str(tmp_path / "a" / "L0_attn_lut4.mlpackage"),
                                   str(tmp_path / "b" / "L0_attn_lut4.mlpackage"),
                                   "-o", str(out)], runtime=FakeRuntime())
    err = capsys.readouterr().err
    assert code == 2 and "would both be dumped to L0_attn_lut4.mlpackage.json" in err, err
    assert not out.exists() or not os.listdir(out)  # refused before anything is written


def test_a_package_core_ml_cannot_compile_is_exit_two_naming_it(tmp_path, capsys):
    # coremltools' native proxy raises a bare RuntimeError; it escaped as a traceback (exit 1)
    runtime = FakeRuntime(compile_error=RuntimeError("Error reading protobuf spec. validator "
                                                     "error: unsupported opset"))
    code = dump_compute_plan.main([SAMPLE_PACKAGE, "-o", str(tmp_path / "o")], runtime=runtime)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "L0_attn_lut4.mlpackage: Core ML could not compile it: RuntimeError" in err, err
    assert "unsupported opset" in err


def test_an_op_only_the_compiled_program_has_fails_the_package(tmp_path):
    # The compiler adds an op (here one the table puts on the CPU): the dump lists package ops,
    # records the extra op in model.op_mapping.compiled_only only, and the package PASSED.
    runtime = FakeRuntime(compiled_extra_ops=[("main", "topk", "compiler_inserted_topk")])
    (d,), (path,) = dump(tmp_path, SAMPLE_PACKAGE, runtime=runtime)
    assert d["model"]["op_mapping"]["compiled_only"] == ["main/-1/compiler_inserted_topk (topk)"]
    r = run_tool(ANE_VALIDATOR, SAMPLE_PACKAGE, "--plan", path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "model.op_mapping.compiled_only: main/-1/compiler_inserted_topk (topk)" in r.stdout


def test_the_host_names_the_os_build_as_well_as_its_version():
    # AppleRuntime.host() needs a Mac; the name it gives the OS is this function's.
    from apple_runtime import mac_os_name
    assert mac_os_name("15.2", "24C101") == "macOS 15.2 (24C101)"
    assert mac_os_name("15.2", None) == "macOS 15.2"
