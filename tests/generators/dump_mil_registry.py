"""Writes the MIL op registry of the pinned coremltools (tests/generators/requirements.txt) as a
sorted list, one op a line, with the opset versions that define it.

The op table (runtime/ops/ops.def) and the placement rule table (runtime/placement/rules.def)
are checked against this list by tests, so an op that coremltools can write but shardgate does
not know fails a test instead of surprising a user.

Usage: /opt/ctvenv/bin/python tests/generators/dump_mil_registry.py > tests/data/registry/mil_core_ops.txt
"""
import coremltools
from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry


def main():
    ops = SSAOpRegistry.core_ops
    print(f"# coremltools {coremltools.__version__}: SSAOpRegistry.core_ops, {len(ops)} ops")
    print("# op<TAB>opset versions that define it")
    for name in sorted(ops):
        versions = [t.name for t in sorted(ops[name].keys(), key=lambda t: t.value)]
        print(f"{name}\t{','.join(versions)}")


if __name__ == "__main__":
    main()
