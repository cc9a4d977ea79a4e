"""Paths of the repository data the Python package tests use (the bundled sample and the LLM
fixtures: real coremltools artifacts with numpy oracle outputs)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "goldens" / "sample"
FIXTURES = REPO / "tests" / "data" / "fixtures" / "llm"


@pytest.fixture
def sample():
    return SAMPLE


@pytest.fixture
def fixtures():
    return FIXTURES


@pytest.fixture
def cli_dir():
    """Directory of the built ane-validator / golden-validator (SHARDGATE_CLI_DIR); CI sets it."""
    d = os.environ.get("SHARDGATE_CLI_DIR")
    if not d:
        pytest.skip("SHARDGATE_CLI_DIR is not set")
    return Path(d)
