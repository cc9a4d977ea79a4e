"""Stand-ins for ane-validator and golden-validator on the job's PATH (install: path), for the
action's own behaviour around the tools: what it does with their report files and exit codes
when a tool dies, which the real tools cannot be made to do on demand.

Each stub answers --version, writes every report it is asked for (--json, --junit, --markdown,
--html) with a line naming its tool and targets, and exits 0; while the file `crash` exists in
the working directory (the job's workspace) it writes nothing and exits 139, as a tool killed
by SIGSEGV would."""

from pathlib import Path

_STUB = """#!/usr/bin/env bash
# test stub (tests/action/stub_tools.py)
[ "$1" = --version ] && {{ echo "{tool} stub"; exit 0; }}
[ -e crash ] && exit 139
targets=() files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --json|--junit|--markdown|--html) files+=("$2"); shift ;;
    *) targets+=("$1") ;;
  esac
  shift
done
for f in "${{files[@]}}"; do echo "{tool} passed: ${{targets[*]}}" > "$f"; done
exit 0
"""


def stub_tools(directory):
    """Writes the two stubs into `directory` and returns it (a PATH entry)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for tool in ("ane-validator", "golden-validator"):
        path = directory / tool
        path.write_text(_STUB.format(tool=tool))
        path.chmod(0o755)
    return directory
