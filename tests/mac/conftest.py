"""Shared set-up of the Mac-script tests: paths, the built tools, the fake runtime."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "validators", "mac"), os.path.dirname(__file__)]

# The C++ tools under test: SG_BUILD_DIR (default: build/ at the repository root).
BUILD = os.path.abspath(os.environ.get("SG_BUILD_DIR", os.path.join(ROOT, "build")))
ANE_VALIDATOR = os.path.join(BUILD, "validators", "ane-validator")
GOLDEN_VALIDATOR = os.path.join(BUILD, "validators", "golden-validator")

SAMPLE_PACKAGE = os.path.join(ROOT, "goldens", "sample", "shards", "L0_attn_lut4.mlpackage")
CORPUS = os.path.join(ROOT, "tests", "data", "corpus", "silero-vad")
MULTIFUNCTION = os.path.join(ROOT, "tests", "data", "placement", "mac", "prefill_infer.mlpackage")


def run_tool(*args):
    """Runs a built tool from the repository root (so gates/ is found); returns the process."""
    tool = args[0]
    if not os.path.exists(tool):
        pytest.fail(f"{tool} is not built (set SG_BUILD_DIR to the build directory)")
    return subprocess.run(list(args), capture_output=True, text=True, cwd=ROOT)
