"""validators/ci/example-workflow.yml, as a user copies it: in a gate job, every shardgate step
after the first still runs when an earlier one failed its gate (a failed step skips the rest of
a job unless a step says otherwise), so one gate's failure never hides another gate's verdict."""

from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / "validators" / "ci" / "example-workflow.yml"


def test_every_gate_runs_after_an_earlier_gate_failed():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    checked = 0
    for name, job in jobs.items():
        gates = [s for s in job.get("steps", []) if "shardgate" in str(s.get("uses", ""))]
        for step in gates[1:]:
            condition = str(step.get("if", ""))
            assert "always()" in condition or "!cancelled()" in condition, (name, step)
            checked += 1
    assert checked > 0  # the example still chains gates in one job
