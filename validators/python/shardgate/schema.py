"""The JSON Schemas shipped with shardgate (reports/schema/ of the repository, installed in the
package) and validation against them."""

import json
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

_SCHEMA_DIR = Path(__file__).resolve().parent / "schema"

# Short names -> schema files.
SCHEMAS = {
    "golden-dump": "golden-dump.schema.json",
    "chain": "chain.schema.json",
    "golden-report": "golden-report.schema.json",
    "ane-report": "ane-report.schema.json",
    "compute-plan-dump": "compute-plan-dump.schema.json",
    "report-envelope": "report-envelope.schema.json",
    "weight-diagnostics": "weight-diagnostics.schema.json",
    "culprits": "culprits.schema.json",
    "report-diff": "report-diff.schema.json",
    "advice": "advice.schema.json",
}


def _registry():
    """Every shipped schema under its $id, so a report schema's
    {"$ref": "report-envelope.schema.json"} resolves to the shipped envelope."""
    resources = []
    for path in sorted(_SCHEMA_DIR.glob("*.schema.json")):
        contents = json.loads(path.read_text())
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


def schema_path(name):
    """Path of the shipped schema `name` (a key of SCHEMAS)."""
    if name not in SCHEMAS:
        raise KeyError(f"unknown schema '{name}'; known: {', '.join(sorted(SCHEMAS))}")
    return _SCHEMA_DIR / SCHEMAS[name]


def validate(document, name, where="document"):
    """Validates a JSON document (already parsed) against the shipped schema `name`.
    Raises shardgate.Error naming `where` and the JSON path of the first violation."""
    from ._errors import Error

    schema = json.loads(schema_path(name).read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, registry=_registry())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        place = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first.path) or "(top)"
        raise Error(f"{where}: {place}: {first.message} (schema {SCHEMAS[name]})", 2)
