"""shardgate from Python: open Core ML shards, list their ops with ANE placement, run shards and
chains on the CPU with ANE numerics, compute the fidelity metrics, read reports, and write the
golden dumps and chain manifests the gates read.

    import shardgate
    shard = shardgate.Shard("L0_attn_lut4.mlpackage")
    for op in shard.placement(): print(op["type"], op["placement"], op["rule_id"])
    outputs = shard.run({"hidden": x})                    # dict of numpy arrays
    report = shardgate.gate_chain("chain_lut4.json")      # shardgate.Report, .verdict
    rows = shardgate.compare(candidate, reference, position_axis=1)

Every error from the library is a shardgate.Error whose message names the file and the place.
"""

from ._errors import Error
from ._native import GoldenSource, Shard, __version__
from .chains import ChainBuilder, gate_chain, load_chain, run_chain
from .goldens import GoldenDumpWriter
from .metrics import compare, min_cosine
from .reports import Report, read_report, regate
from .schema import schema_path, validate

__all__ = [
    "ChainBuilder",
    "Error",
    "GoldenDumpWriter",
    "GoldenSource",
    "Report",
    "Shard",
    "__version__",
    "compare",
    "gate_chain",
    "load_chain",
    "min_cosine",
    "read_report",
    "regate",
    "run_chain",
    "schema_path",
    "validate",
]
