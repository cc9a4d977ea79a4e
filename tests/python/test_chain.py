"""Chains from Python on the bundled sample: arrays out of run_chain checked with numpy against
the goldens and the sample's numpy oracle (goldens/sample/expected_metrics.json); the gate's
verdicts; a manifest rebuilt with ChainBuilder from a dump rewritten with GoldenDumpWriter."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import shardgate

REPO = Path(__file__).resolve().parents[2]


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))


def expected(sample, variant):
    return json.loads((sample / "expected_metrics.json").read_text())["variants"][variant]["fp16"]


def test_run_chain_returns_checkpoints_as_arrays(sample):
    out = shardgate.run_chain(sample / "chains" / "chain_lut4.json")
    goldens = shardgate.GoldenSource(str(sample / "goldens"))
    want = expected(sample, "lut4")
    for row in want["hidden"]:
        name = row["checkpoint"]
        assert out[name].dtype == np.float16
        assert cosine(out[name], goldens.load(name)) == pytest.approx(row["cosine"], abs=2e-3)
    logits = out["logits"]
    ref = goldens.load("logits")
    per_position = [cosine(logits[:, p], ref[:, p]) for p in range(logits.shape[1])]
    np.testing.assert_allclose(per_position, want["logits"]["cosine_per_position"], atol=2e-3)


def test_gate_chain_passes_lut4_and_fails_int8_at_the_logits(sample):
    lut = shardgate.gate_chain(sample / "chains" / "chain_lut4.json")
    assert lut.tool == "golden-validator" and lut.verdict == "pass" and lut.passed
    int8 = shardgate.gate_chain(sample / "chains" / "chain_int8.json")
    assert int8.verdict == "fail" and int8.exit_code == 1 and not int8.passed
    first = int8.data["summary"]["first_failure"]
    # The oracle agrees: numpy's first logits position below 0.97 is the first failure.
    oracle = expected(sample, "int8")["logits"]["cosine_per_position"]
    assert first["checkpoint"] == "logits"
    assert first["position"] == next(p for p, c in enumerate(oracle) if c < 0.97) == 4
    assert all(c["verdict"] == "pass" for c in int8.checks if c["kind"] == "hidden")


def test_teacher_forced_and_both_modes(sample):
    both = shardgate.gate_chain(sample / "chains" / "chain_lut4.json", both=True)
    modes = {label["value"] for c in both.checks for label in c.get("labels", [])
             if label["key"] == "mode"}
    assert modes == {"free-running", "teacher-forced"}
    forced = shardgate.gate_chain(sample / "chains" / "chain_lut4.json", teacher_forced=True)
    assert len(both.checks) == 2 * len(forced.checks)
    assert forced.verdict == "pass"


def test_builder_and_writer_rebuild_the_sample(tmp_path, sample):
    # Rewrite the sample goldens with the Python writer from the arrays alone...
    src = shardgate.GoldenSource(str(sample / "goldens"))
    manifest = json.loads((sample / "goldens" / "manifest.json").read_text())
    dump = tmp_path / "goldens"
    with shardgate.GoldenDumpWriter(dump, model="tiny-moe-4l",
                                    prompt_token_ids=manifest["prompt_token_ids"]) as w:
        w.add_input_ids(src.load("input_ids"))
        w.add_embed(src.load("embed"))
        for n in range(4):
            w.add_hidden(n, src.load(f"hidden.{n}"))
        w.add_logits(src.load("logits"))
    # ...and the chain manifest with the builder, from the shipped one's wiring.
    shipped = json.loads((sample / "chains" / "chain_lut4.json").read_text())
    chain = shardgate.ChainBuilder("rebuilt-lut4", goldens=dump)
    chain.input("input_ids", golden="input_ids")
    for step in shipped["steps"]:
        if "combine" in step:
            if step["combine"] == "sum":
                chain.sum(step["id"], step["inputs"], step["output"], layer=step.get("layer"))
            else:
                chain.concat(step["id"], step["inputs"], step["output"], axis=step["axis"],
                             layer=step.get("layer"))
        else:
            chain.shard(step["id"], sample / "chains" / step["shard"], step["inputs"],
                        step["outputs"], layer=step.get("layer"),
                        residual_input=step.get("residual_input"))
    for cp in shipped["checkpoints"]:
        chain.checkpoint(cp["tensor"], cp["golden"], kind=cp["kind"], layer=cp.get("layer"))
    path = chain.write(tmp_path / "chains" / "rebuilt.json")
    written = json.loads(path.read_text())
    shardgate.validate(written, "chain")
    assert written["goldens"] == "../goldens"
    assert written["steps"][1]["shard"].endswith("goldens/sample/shards/L0_attn_lut4.mlpackage")
    # The gate gives the same numbers on the rebuilt pair as on the shipped one.
    rebuilt = shardgate.gate_chain(path)
    original = shardgate.gate_chain(sample / "chains" / "chain_lut4.json")
    assert rebuilt.verdict == original.verdict == "pass"
    assert [c["rows"] for c in rebuilt.checks] == [c["rows"] for c in original.checks]


def test_builder_refuses_a_broken_wiring_and_leaves_no_file(tmp_path, sample):
    chain = shardgate.ChainBuilder("broken")
    chain.input("x", npy=sample / "goldens" / "embed.npy")
    chain.shard("a", sample / "shards" / "L0_attn_lut4.mlpackage", {"hidden": "not_produced"},
                {"hidden_out": "y"}, layer=0)
    chain.checkpoint("y", "hidden.0")
    with pytest.raises(shardgate.Error) as e:
        chain.write(tmp_path / "broken.json")
    assert "not_produced" in str(e.value) and e.value.exit_code == 2
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(shardgate.Error):
        chain.shard("a", "x.mlpackage", {}, {})  # duplicate step id


def test_gate_chain_measures_top_k_with_the_gate_files_k(tmp_path, sample):
    # A gate file may set the k of its top-k overlap ("topk"); gate_chain measures with it, as
    # `golden-validator run --gate` does, instead of refusing its own run for the default k.
    gate = json.loads((REPO / "gates" / "fidelity.json").read_text())
    gate["topk"] = 2
    (tmp_path / "k2.json").write_text(json.dumps(gate))
    report = shardgate.gate_chain(sample / "chains" / "chain_int8.json", gate=tmp_path / "k2.json")
    assert report.data["options"]["topk"] == 2
    assert report.verdict == "fail"  # the logits, as with the shipped k = 5
    cli = os.environ.get("SHARDGATE_CLI_DIR")
    if cli:  # the same numbers and verdicts as the CLI
        subprocess.run([str(Path(cli) / "golden-validator"), "run",
                        str(sample / "chains" / "chain_int8.json"), "--gate",
                        str(tmp_path / "k2.json"), "--json", str(tmp_path / "cli.json")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cli_report = json.loads((tmp_path / "cli.json").read_text())
        assert cli_report["options"] == report.data["options"]
        assert [c["rows"] for c in cli_report["checks"]] == [c["rows"] for c in report.checks]
        assert [c["verdict"] for c in cli_report["checks"]] == [c["verdict"] for c in report.checks]
