"""shardgate.Shard: opening, op listing with placement, running with numpy arrays. Oracles: the
op counts coremltools reported when the fixtures were generated, and numpy forward passes."""

import collections
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import shardgate


def cases(fixtures):
    return {c["name"]: c for c in json.loads((fixtures / "cases" / "cases.json").read_text())["cases"]}


@pytest.mark.parametrize("name", ["attention_fp16", "moe_fp16", "attention_lut4", "moe_int8"])
def test_open_lists_io_and_every_op(fixtures, name):
    case = cases(fixtures)[name]
    shard = shardgate.Shard(str(fixtures / f"{name}.mlpackage"))
    assert shard.form == "mlpackage"
    assert shard.functions == ["main"]
    assert [i["name"] for i in shard.inputs] == case["inputs"]
    assert [o["name"] for o in shard.outputs] == case["outputs"]
    got = collections.Counter(op["type"] for op in shard.placement())
    want = dict(case["op_types"])
    if case["variant"] != "fp16":
        # coremltools' in-memory program (the oracle's count) holds the inputs of constexpr ops
        # as separate const ops; the saved program holds fewer. Every other op type must match.
        got.pop("const")
        want.pop("const")
    # Every op of the program, by type, as coremltools counted them.
    assert dict(got) == want


def test_placement_names_the_rule_and_separates_compile_time_ops(fixtures):
    ops = shardgate.Shard(str(fixtures / "moe_int4blk.mlpackage")).placement()
    blockwise = [op for op in ops if op["type"] == "constexpr_blockwise_shift_scale"]
    assert blockwise and all(op["op_class"] == "compile-time" for op in blockwise)
    # Per-block int4 weights feeding compute are a CPU fallback (rule R22); topk is CPU (R13).
    linears = [op for op in ops if op["type"] == "linear"]
    assert any(op["rule_id"] == "R22" and op["placement"] == "CPU" for op in ops), ops
    assert [op["rule_id"] for op in ops if op["type"] == "topk"] == ["R13"]
    assert linears and all(op["reason"] for op in linears)


def test_residency_summary_counts_compute_ops_only(fixtures, sample):
    lut = shardgate.Shard(str(sample / "shards" / "L0_attn_lut4.mlpackage"))
    s = lut.residency()
    ops = lut.placement()
    assert s["compute_ops"] == sum(op["op_class"] == "compute" for op in ops)
    assert s["compile_time_ops"] == sum(op["op_class"] == "compile-time" for op in ops)
    assert s["residency_pct"] == 100.0
    blk = shardgate.Shard(str(fixtures / "moe_int4blk.mlpackage")).residency()
    assert blk["fallbacks"] > 0 and blk["residency_pct"] < 100.0


@pytest.mark.parametrize("name", ["attention_lut4", "moe_int8", "lm_head_p1_int4blk"])
def test_run_matches_the_numpy_forward_pass(fixtures, name):
    case = cases(fixtures)[name]
    shard = shardgate.Shard(str(fixtures / f"{name}.mlpackage"))
    base = fixtures / "cases"
    for call in case["calls"]:
        inputs = {k: np.load(base / v) for k, v in call["inputs"].items()}
        outputs = shard.run(inputs)
        for out_name, expected in call["outputs"].items():
            ref = np.load(base / expected["fp16ops"]).astype(np.float64)
            got = outputs[out_name]
            assert got.dtype == np.float16 and got.shape == ref.shape
            # fp16 storage after every op: within a few fp16 ulps of the numpy fp16-ops pass.
            assert np.max(np.abs(got.astype(np.float64) - ref)) <= 0.02 * max(1.0, np.max(np.abs(ref)))
            cos = np.dot(got.ravel().astype(np.float64), ref.ravel()) / (
                np.linalg.norm(got.astype(np.float64)) * np.linalg.norm(ref))
            assert cos > 0.9999


def test_run_fp32_precision_and_capture(fixtures):
    case = cases(fixtures)["moe_lut4"]
    shard = shardgate.Shard(str(fixtures / "moe_lut4.mlpackage"))
    call = case["calls"][0]
    inputs = {k: np.load(fixtures / "cases" / v).astype(np.float32) for k, v in call["inputs"].items()}
    ops = [op for op in shard.placement() if op["type"] == "softmax"]
    out = shard.run(inputs, precision="fp32", capture=[ops[0]["outputs"][0]])
    ref = np.load(fixtures / "cases" / call["outputs"]["hidden_out"]["fp32"])
    assert out["hidden_out"].dtype == np.float32
    np.testing.assert_allclose(out["hidden_out"], ref, atol=2e-3, rtol=2e-3)
    router = out[ops[0]["outputs"][0]]
    np.testing.assert_allclose(router.sum(axis=-1), 1.0, atol=1e-5)  # softmax rows


def test_bad_input_raises_shardgate_error_naming_the_file(tmp_path, fixtures):
    with pytest.raises(shardgate.Error) as e:
        shardgate.Shard(str(tmp_path / "missing.mlpackage"))
    assert "missing.mlpackage" in str(e.value) and e.value.exit_code == 2
    shard = shardgate.Shard(str(fixtures / "attention_fp16.mlpackage"))
    with pytest.raises(shardgate.Error) as e:
        shard.run({"hidden": np.zeros((1, 3, 5), np.float16)})
    assert "hidden" in str(e.value) and e.value.exit_code == 2
    with pytest.raises(TypeError):
        shard.run({"hidden": np.array([["a"]])})


PLAN_DIR = Path(__file__).resolve().parents[1] / "data" / "placement" / "mac"


def test_plan_dump_of_the_package_is_accepted(sample):
    # The dump validators/mac/dump_compute_plan.py wrote for this very package (through the fake
    # Apple runtime, tests/mac): its ops come from the plan, not from the rule table.
    shard = shardgate.Shard(str(sample / "shards" / "L0_attn_lut4.mlpackage"))
    ops = shard.placement(plan=str(PLAN_DIR / "L0_attn_lut4.mlpackage.json"))
    compute = [op for op in ops if op["op_class"] == "compute"]
    assert compute and all(op["source"] == "plan" for op in compute)


def test_plan_dump_of_another_build_is_refused(tmp_path, sample):
    # The same program with one weight byte changed is another build: a plan measured on the
    # original must not vouch for it (ane-validator refuses it the same way).
    copy = tmp_path / "L0_attn_lut4.mlpackage"
    shutil.copytree(sample / "shards" / "L0_attn_lut4.mlpackage", copy)
    weights = copy / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    shard = shardgate.Shard(str(copy))
    for call in (shard.placement, shard.residency):
        with pytest.raises(shardgate.Error) as e:
            call(plan=str(PLAN_DIR / "L0_attn_lut4.mlpackage.json"))
        assert "another build" in str(e.value) and "weights/weight.bin" in str(e.value)
        assert e.value.exit_code == 2


@pytest.mark.parametrize("where", ["sample/L0_attn_lut4", "fixtures/moe_int4blk"])
def test_residency_is_the_summary_ane_validator_reports(tmp_path, sample, fixtures, cli_dir, where):
    # One passing shard and one with CPU fallbacks (per-block int4 weights, topk).
    root, name = where.split("/")
    path = (sample / "shards" if root == "sample" else fixtures) / f"{name}.mlpackage"
    report = tmp_path / "ane.json"
    subprocess.run([str(cli_dir / "ane-validator"), str(path), "--json", str(report)],
                   check=False, capture_output=True)
    want = json.loads(report.read_text())["shards"][0]
    got = shardgate.Shard(str(path)).residency()
    assert got["model_verdict"] == want["model_verdict"]
    assert got["shard_failures"] == want["shard_failures"]
    del got["model_verdict"], got["shard_failures"]
    assert got == want["summary"]


def test_paths_may_be_pathlib_paths_with_spaces(tmp_path, sample):
    # Every path argument takes what open() takes (str, os.PathLike), as gate_chain and
    # run_chain do; here in a directory whose name holds a space.
    where = tmp_path / "my shards"
    shutil.copytree(sample / "shards" / "L0_attn_lut4.mlpackage", where / "L0_attn_lut4.mlpackage")
    shutil.copytree(sample / "goldens", where / "goldens")
    shard = shardgate.Shard(where / "L0_attn_lut4.mlpackage")
    assert shard.path == str(where / "L0_attn_lut4.mlpackage")
    plan = PLAN_DIR / "L0_attn_lut4.mlpackage.json"
    assert shard.placement(plan=plan) == shard.placement(plan=str(plan))
    assert shard.residency(plan=plan) == shard.residency(plan=str(plan))
    goldens = shardgate.GoldenSource(where / "goldens")
    assert goldens.entries == shardgate.GoldenSource(str(sample / "goldens")).entries
