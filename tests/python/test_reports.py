"""read_report and regate: reports of both tools, validated against the shipped schemas; the
CLI-written reports when the built tools are available (CI sets SHARDGATE_CLI_DIR)."""

import json
import subprocess

import pytest

import shardgate


def test_read_a_golden_report_written_from_python(tmp_path, sample):
    report = shardgate.gate_chain(sample / "chains" / "chain_int8.json")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report.data))
    back = shardgate.read_report(path)
    assert back.tool == "golden-validator" and back.verdict == "fail" and back.exit_code == 1


def test_regate_recomputes_verdicts_under_another_gate(tmp_path, sample):
    report = shardgate.gate_chain(sample / "chains" / "chain_int8.json")
    gate = tmp_path / "lenient.json"
    gate.write_text(json.dumps({"schema": "shardgate/fidelity-gate@1", "defaults": {
        "min_cosine": {"value": 0.9, "reason": "test: lenient"},
        "norm_ratio": {"value": [0.8, 1.25], "reason": "test"}}}))
    again = shardgate.regate(report, gate)
    assert again.verdict == "pass" and again.exit_code == 0
    strict = tmp_path / "strict.json"
    strict.write_text(json.dumps({"schema": "shardgate/fidelity-gate@1", "defaults": {
        "min_cosine": {"value": 0.999, "reason": "test: strict"}}}))
    assert shardgate.regate(report, strict).verdict == "fail"


def test_reports_written_by_the_cli(tmp_path, sample, cli_dir):
    ane = tmp_path / "ane.json"
    rc = subprocess.run([str(cli_dir / "ane-validator"),
                         str(sample / "shards" / "L0_attn_lut4.mlpackage"), "--json", str(ane)]).returncode
    assert rc == 0
    r = shardgate.read_report(ane)
    assert r.tool == "ane-validator" and r.passed and len(r.checks) == 1
    golden = tmp_path / "golden.json"
    rc = subprocess.run([str(cli_dir / "golden-validator"), "run",
                         str(sample / "chains" / "chain_int8.json"), "--json", str(golden)]).returncode
    assert rc == 1
    g = shardgate.read_report(golden)
    assert g.verdict == "fail" and g.exit_code == 1


def test_not_a_report(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"tool": "something-else"}')
    with pytest.raises(shardgate.Error, match="not a shardgate report"):
        shardgate.read_report(p)
    p.write_text('{"schema_version": "shardgate/ane-report@3", "tool": {"name": "ane-validator", "version": "x"}}')
    with pytest.raises(shardgate.Error, match="required property"):
        shardgate.read_report(p)
    p.write_text("{")
    with pytest.raises(shardgate.Error, match="not JSON"):
        shardgate.read_report(p)
    p.write_text('{"verdict": "fail", "verdict": "pass"}')
    with pytest.raises(shardgate.Error, match="verdict appears twice in one object"):
        shardgate.read_report(p)


def test_an_empty_ci_slice_is_read_as_exit_0_without_a_pass(tmp_path, sample, cli_dir):
    # More CI jobs than teacher-forced step groups: the job checks nothing, exits 0 and says so.
    path = tmp_path / "slice.json"
    rc = subprocess.run([str(cli_dir / "golden-validator"), "run", str(sample / "chains" / "chain_int8.json"),
                         "--teacher-forced", "--shard-index", "9", "--shard-count", "10", "-q",
                         "--json", str(path)]).returncode
    assert rc == 0
    data = json.loads(path.read_text())
    r = shardgate.read_report(path)
    assert r.verdict == "empty-slice" and r.exit_code == 0 and not r.passed
    assert r.command == "run" and r.kind == "golden-report"
    assert r.provenance["gate"]["role"] == "gate" and len(r.provenance["shards"]) == 0
    data.pop("exit_code", None)  # the envelope is the contract: a report without it is refused
    path.write_text(json.dumps(data))
    with pytest.raises(shardgate.Error, match="exit_code"):
        shardgate.read_report(path)


def test_every_report_kind_is_read_through_one_envelope(tmp_path, sample, cli_dir):
    # weights, culprits and diff reports open with the same envelope as the gate reports.
    gv = str(cli_dir / "golden-validator")
    shard = str(sample / "shards" / "L0_moe_p0_int8.mlpackage")
    runs = {
        "weights": ([gv, "weights", shard], 1, "fail"),
        "culprits": ([gv, "culprits", shard, "--baseline-replace", "_int8=_fp16", "--inputs-from",
                      str(sample / "chains" / "chain_int8.json")], 0, "diagnosis"),
    }
    for name, (argv, code, verdict) in runs.items():
        path = tmp_path / f"{name}.json"
        assert subprocess.run(argv + ["-q", "--json", str(path)]).returncode == code
        r = shardgate.read_report(path)
        assert (r.tool, r.command, r.verdict, r.exit_code) == ("golden-validator", name, verdict, code)
        assert r.provenance["shards"][0]["path"] == shard
        assert len(r.provenance["shards"][0]["fingerprint"]) == 64
    # A report from before the envelope is refused, saying so.
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema_version": 2, "tool": "ane-validator", "verdict": "pass"}))
    with pytest.raises(shardgate.Error, match="not a shardgate report"):
        shardgate.read_report(old)
