"""The action's report files belong to the run that wrote them: a tool that dies before writing
must not have an earlier run's reports (same report-dir) stand in for its own in the job
summary or the artifact, and two chain manifests with one file name must not overwrite each
other's reports. Runs the action with stub tools (stub_tools.py), so no package is needed."""

import os

import pytest

from github_emulator import run_action
from stub_tools import stub_tools


def _job(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = [str(stub_tools(tmp_path / "bin"))]
    runs = iter(range(100))

    def run(**inputs):
        inputs.setdefault("install", "path")
        env = dict(os.environ, PATH="/usr/bin:/bin")
        return run_action(inputs, workspace, tmp_path / f"runner-{next(runs)}", extra_path=path,
                          env=env)
    run.workspace = workspace
    return run


@pytest.mark.parametrize("tool, first, second, passed", [
    ("golden-validator", "ok/chain.json", "other/chain.json", "passed: run ok/chain.json"),
    ("ane-validator", "shards/", "shards/", "ane-validator passed"),
])
def test_a_crash_never_shows_an_earlier_runs_reports(tmp_path, tool, first, second, passed):
    job = _job(tmp_path)
    r = job(tool=tool, targets=first)
    assert r.outputs["verdict"] == "pass" and passed in r.summary, r.log
    (job.workspace / "crash").touch()
    r = job(tool=tool, targets=second)
    assert r.outputs == {"exit-code": "139", "verdict": "error"}, r.log
    assert "passed" not in r.summary, r.summary
    if tool == "golden-validator":
        assert "no report (exit 139)" in r.summary, r.summary
    assert r.artifacts["shardgate-reports"] == [], r.artifacts


def test_chains_with_one_file_name_keep_their_own_reports(tmp_path):
    job = _job(tmp_path)
    r = job(tool="golden-validator", targets="a/chain.json b/chain.json c/other.json")
    assert r.outputs["verdict"] == "pass", r.log
    files = r.artifacts["shardgate-reports"]
    # chain k of the expanded list is <name>-<k> when its name is shared, else <name>.
    for stem in ("chain-0", "chain-1", "other"):
        assert {f"{stem}.json", f"{stem}-junit.xml", f"{stem}.md", f"{stem}.html"} <= set(files)
    assert len(files) == 12, files
    reports = job.workspace / "shardgate-reports"
    assert "a/chain.json" in (reports / "chain-0.json").read_text()
    assert "b/chain.json" in (reports / "chain-1.json").read_text()
    assert "a/chain.json" in r.summary and "b/chain.json" in r.summary
