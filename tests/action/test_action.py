"""The composite action's steps, run as a GitHub runner would (github_emulator.py), on the
bundled sample: install from the Debian package into a clean root, the gate of each tool, the
job summary, the outputs, the uploaded reports, a matrix split and bad input.

Needs the package: SHARDGATE_DEB (a built shardgate_*.deb) or SHARDGATE_BUILD_DIR (a built
Release directory, packaged here with cpack); CI sets one. SHARDGATE_CLI_DIR (the built tools)
enables the install=path case; SHARDGATE_ACTION_BUILD=1 the install=build case, which compiles
the tools from this checkout (minutes on 2 cores; CI sets it)."""

import json
import os
from pathlib import Path

import pytest

from github_emulator import apt_get_shim, build_deb, copy_sample, run_action


@pytest.fixture(scope="session")
def deb(tmp_path_factory):
    if os.environ.get("SHARDGATE_DEB"):
        return Path(os.environ["SHARDGATE_DEB"])
    if os.environ.get("SHARDGATE_BUILD_DIR"):
        return build_deb(os.environ["SHARDGATE_BUILD_DIR"], tmp_path_factory.mktemp("pkg"))
    pytest.skip("neither SHARDGATE_DEB nor SHARDGATE_BUILD_DIR is set")


@pytest.fixture
def job(tmp_path, deb):
    """A job: workspace with the sample, runner directory, apt-get shim over a clean root."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    copy_sample(workspace)
    shim = apt_get_shim(tmp_path / "shim", tmp_path / "root")

    def run(**inputs):
        inputs.setdefault("deb", str(deb))
        return run_action(inputs, workspace, tmp_path / "runner", extra_path=[shim])
    run.workspace = workspace
    run.root = tmp_path / "root"
    return run


def test_ane_validator_from_the_package(job):
    r = job(tool="ane-validator",
            targets="sample/shards/L0_attn_lut4.mlpackage\n sample/shards/L1_attn_lut4.mlpackage")
    assert [rc for _, rc in r.steps] == [0, 0, 0], r.log
    assert (job.root / "usr/bin/ane-validator").exists()  # installed from the .deb
    assert r.outputs == {"exit-code": "0", "verdict": "pass"}
    assert r.artifacts["shardgate-reports"] == ["ane-junit.xml", "ane-report.json", "ane-summary.md"]
    report = json.loads((job.workspace / "shardgate-reports/ane-report.json").read_text())
    assert len(report["shards"]) == 2
    # The job summary is the tool's Markdown, naming both shards.
    summary = r.summary.replace("\\", "")  # whether or not the Markdown escapes '_'
    assert "L0_attn_lut4" in summary and "L1_attn_lut4" in summary
    # An MoE pack's router topk runs on the CPU (R13): below the built-in 100 % -> exit 1.
    r = job(tool="ane-validator", targets="sample/shards/L0_moe_p0_lut4.mlpackage")
    assert r.outputs == {"exit-code": "1", "verdict": "fail"} and "R13" in r.summary, r.log
    # The failure names the shard as its file is named: inside backticks a backslash shows.
    assert "- `L0_moe_p0_lut4.mlpackage`: " in r.summary, r.summary


def test_golden_validator_failing_chain_fails_the_job_but_uploads(job):
    r = job(tool="golden-validator",
            targets="sample/chains/chain_lut4.json sample/chains/chain_int8.json")
    codes = [rc for _, rc in r.steps]
    assert codes[0] == 0 and codes[1] == 1 and codes[2] == 0, r.log  # upload runs always()
    assert r.outputs == {"exit-code": "1", "verdict": "fail"}
    files = r.artifacts["shardgate-reports"]
    for stem in ("chain_lut4", "chain_int8"):
        assert {f"{stem}.json", f"{stem}.md", f"{stem}.html", f"{stem}-junit.xml"} <= set(files)
    assert "logits" in r.summary and r.summary.count("golden-validator") >= 2


def test_matrix_split_runs_each_chain_once(job):
    chains = "sample/chains/chain_*.json"  # expanded by the action: the sample's four chains
    seen = []
    for index in range(2):
        r = job(tool="golden-validator", targets=chains, **{"shard-index": index, "shard-count": 2})
        seen += [f for f in r.artifacts["shardgate-reports"] if f.endswith(".json")]
        (job.workspace / "shardgate-reports").rename(job.workspace / f"reports-{index}")
    assert sorted(seen) == ["chain_fp16.json", "chain_int8.json", "chain_int8_advised.json", "chain_lut4.json"]
    empty = job(tool="golden-validator", targets="sample/chains/chain_lut4.json",
                **{"shard-index": 1, "shard-count": 2})
    assert empty.outputs == {"exit-code": "0", "verdict": "empty-slice"}, empty.log
    assert "nothing to run here" in empty.summary
    # ane-validator's own empty slice (more jobs than shards) is reported the same way.
    empty = job(tool="ane-validator", targets="sample/shards/L0_attn_lut4.mlpackage",
                **{"shard-index": 1, "shard-count": 2})
    assert empty.outputs == {"exit-code": "0", "verdict": "empty-slice"}, empty.log


def test_bad_input_is_exit_2_with_a_summary(job):
    r = job(tool="ane-validator", targets="sample/shards/missing.mlpackage")
    assert r.steps[1][1] == 2 and r.outputs["verdict"] == "error", r.log
    r = job(tool="bogus", targets="x")
    assert r.steps[1][1] == 2 and "tool must be" in r.summary
    r = job(tool="ane-validator", targets="x", deb="/nonexistent.deb")
    assert r.steps[0][1] == 2 and r.steps[1][1] is None  # the gate never runs uninstalled


def test_install_path_uses_tools_already_on_path(tmp_path):
    cli = os.environ.get("SHARDGATE_CLI_DIR")
    if not cli:
        pytest.skip("SHARDGATE_CLI_DIR is not set")
    workspace = tmp_path / "w"
    workspace.mkdir()
    copy_sample(workspace)
    r = run_action({"tool": "ane-validator", "targets": "sample/shards/L0_attn_lut4.mlpackage",
                    "install": "path"}, workspace, tmp_path / "runner", extra_path=[cli])
    assert [rc for _, rc in r.steps] == [0, 0, 0], r.log
    r = run_action({"tool": "ane-validator", "targets": "x", "install": "path"}, workspace,
                   tmp_path / "runner2", env={"PATH": "/usr/bin:/bin"})
    assert r.steps[0][1] == 2 and "not on PATH" in r.log


def test_install_build_builds_the_package_from_the_action_checkout(tmp_path):
    # install=build: CMake + CPack from the action's own checkout (SG_SOURCE), then the package
    # installed as install=deb would; the toolchain packages it asks apt-get for must be the
    # ones the build needs (the shim checks each is present instead of downloading it).
    if not os.environ.get("SHARDGATE_ACTION_BUILD"):
        pytest.skip("SHARDGATE_ACTION_BUILD is not set (the build takes minutes)")
    workspace = tmp_path / "w"
    workspace.mkdir()
    copy_sample(workspace)
    shim = apt_get_shim(tmp_path / "shim", tmp_path / "root")
    r = run_action({"tool": "golden-validator", "targets": "sample/chains/chain_lut4.json",
                    "install": "build"}, workspace, tmp_path / "runner", extra_path=[shim])
    assert [rc for _, rc in r.steps] == [0, 0, 0], r.log
    assert (tmp_path / "root/usr/bin/golden-validator").exists()  # from the package it built
    assert list((tmp_path / "runner/temp/shardgate-build/package").glob("shardgate_*.deb"))
    assert r.outputs == {"exit-code": "0", "verdict": "pass"}
