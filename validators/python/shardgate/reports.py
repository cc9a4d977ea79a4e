"""Reading the JSON reports of both tools (ane-validator --json, golden-validator --json),
validated against the shipped schemas."""

import json
from pathlib import Path

from . import _native
from ._errors import Error
from .schema import validate


def _tool_name(data):
    tool = data.get("tool")
    return tool.get("name") if isinstance(tool, dict) else tool


class Report:
    """One report. `data` is the whole JSON document; `tool` is "ane-validator" or
    "golden-validator"; `verdict` "pass", "fail", ...; `exit_code` what the tool exited with
    (0 pass or an empty CI slice, 1 gate failed, 2 bad input); `passed` is True only for a
    pass (never for "empty-slice": a job that selected nothing passed nothing)."""

    def __init__(self, data, source="report"):
        self.data = data
        self.source = source
        self.tool = _tool_name(data)
        if self.tool not in ("ane-validator", "golden-validator"):
            raise Error(f"{source}: not a shardgate report (tool {self.tool!r})", 2)
        summary = data.get("summary") if isinstance(data.get("summary"), dict) else {}
        self.verdict = data["verdict"] if "verdict" in data else summary.get("verdict")
        if "exit_code" in data:
            self.exit_code = int(data["exit_code"])
        else:
            # An empty CI slice checked nothing and exits 0 without passing anything.
            self.exit_code = 0 if self.verdict in ("pass", "empty-slice") else 1

    @property
    def passed(self):
        return self.verdict == "pass" and self.exit_code == 0

    @property
    def checks(self):
        """golden-validator: one dict per check; ane-validator: one dict per shard."""
        return self.data.get("checks" if self.tool == "golden-validator" else "shards", [])

    def __repr__(self):
        return f"<shardgate.Report {self.tool} {self.verdict} from {self.source}>"


def read_report(path):
    """Reads a report file, validates it against its schema and returns a Report."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise Error(f"{path}: {e.strerror}", 2)
    except json.JSONDecodeError as e:
        raise Error(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}", 2)
    if not isinstance(data, dict):
        raise Error(f"{path}: a report is a JSON object", 2)
    tool = _tool_name(data)
    schema = {"ane-validator": "ane-report", "golden-validator": "golden-report"}.get(tool)
    if schema is None:
        raise Error(f"{path}: not a shardgate report (tool {tool!r})", 2)
    validate(data, schema, str(path))
    return Report(data, source=str(path))


def regate(report, gate):
    """What `golden-validator regate` does: applies the gate file `gate` to a saved
    golden-validator report (a path or a Report) without re-running; returns the new Report.
    The verdicts are recomputed from the per-row values, never trusted from the file."""
    if isinstance(report, Report):
        text, source = json.dumps(report.data), report.source
    else:
        text, source = Path(report).read_text(), str(report)
    return Report(json.loads(_native.regate_report(text, source, str(gate))), source=source)
