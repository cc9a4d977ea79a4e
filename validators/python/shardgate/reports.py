"""Reading the JSON reports of both tools (ane-validator --json, golden-validator --json),
validated against the shipped schemas."""

import json
from pathlib import Path

from . import _native
from ._errors import Error
from .schema import SCHEMAS, validate


def _tool_name(data):
    tool = data.get("tool")
    return tool.get("name") if isinstance(tool, dict) else None


def _kind(data):
    """The report kind of the envelope's schema_version "shardgate/<kind>@<N>" (the schema's
    short name), or None when the document has no such envelope."""
    version = data.get("schema_version")
    if not isinstance(version, str) or not version.startswith("shardgate/") or "@" not in version:
        return None
    return version[len("shardgate/"):].rsplit("@", 1)[0]


class Report:
    """One report of either tool, read through the envelope every report opens with
    (reports/schema/report-envelope.schema.json). `data` is the whole JSON document; `tool` is
    "ane-validator" or "golden-validator"; `kind` the schema ("ane-report", "golden-report",
    "weight-diagnostics", "culprits", "report-diff"); `command` the subcommand; `verdict`
    "pass", "fail", "no_evidence", "error", "empty-slice" or "diagnosis"; `exit_code` what the
    tool exited with (0 pass, an empty CI slice or a diagnosis; 1 gate failed; 2 bad input);
    `provenance` the gate file, the input files and the shards judged (with fingerprints);
    `passed` is True only for a pass (never for "empty-slice": a job that selected nothing
    passed nothing)."""

    def __init__(self, data, source="report"):
        self.data = data
        self.source = source
        self.tool = _tool_name(data)
        self.kind = _kind(data)
        if self.tool not in ("ane-validator", "golden-validator") or self.kind is None:
            raise Error(f"{source}: not a shardgate report (schema_version "
                        f"{data.get('schema_version')!r}, tool {data.get('tool')!r}); reports "
                        "written before the shared envelope must be written again", 2)
        for key in ("command", "verdict", "exit_code", "provenance"):
            if key not in data:
                raise Error(f"{source}: the report envelope has no '{key}'", 2)
        self.command = data["command"]
        self.verdict = data["verdict"]
        self.exit_code = int(data["exit_code"])
        self.provenance = data["provenance"]

    @property
    def passed(self):
        return self.verdict == "pass" and self.exit_code == 0

    @property
    def checks(self):
        """golden-report: one dict per check; ane-report: one dict per shard."""
        return self.data.get("checks" if self.kind == "golden-report" else "shards", [])

    def __repr__(self):
        return f"<shardgate.Report {self.tool} {self.verdict} from {self.source}>"


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs):
    # JSON leaves a repeated key to the reader (json keeps the last): a report with "verdict"
    # twice would read as whichever came last. The tools refuse such a file; so does Python.
    data = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKey(key)
        data[key] = value
    return data


def read_report(path):
    """Reads a report file of either tool, validates it against its schema (named by the
    envelope's schema_version) and returns a Report."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(), object_pairs_hook=_unique_keys)
    except OSError as e:
        raise Error(f"{path}: {e.strerror}", 2)
    except json.JSONDecodeError as e:
        raise Error(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}", 2)
    except _DuplicateKey as e:
        raise Error(f"{path}: key {e} appears twice in one object (readers disagree on which one counts)", 2)
    if not isinstance(data, dict):
        raise Error(f"{path}: a report is a JSON object", 2)
    kind = _kind(data)
    if kind not in SCHEMAS or kind == "report-envelope":
        raise Error(f"{path}: not a shardgate report (schema_version {data.get('schema_version')!r})", 2)
    validate(data, kind, str(path))
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
