"""Every test runs offline: replay mode, for this process and the notebook kernels it starts.

At the root so it also applies to `pytest --nbval examples/notebooks` run alone. It imports Strands
Evals only when a test asks for `score_reference`: every pytest process loads this file (the
controller and each worker of the notebook run too, which never score), and that import costs
about a second of CPU in each.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import pytest

from fieldeval.mode import OFFLINE_ENV

if TYPE_CHECKING:
    from strands_evals.evaluators import StructuredOutputReport

os.environ.update(OFFLINE_ENV)

# pytest keeps each test module's assertion-rewritten code in `__pycache__` (git-ignored), but not
# when PYTHONDONTWRITEBYTECODE is set, as on some machines: each pytest process then rewrites
# every test module again, about 2.3 s of CPU per process on this suite. The variable stays set,
# so the processes the tests start write nothing; they still read what is already compiled.
sys.dont_write_bytecode = False

# `pytester` runs a pytest inside a test (tests/test_network_guard.py checks the guard that way).
pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def score_reference():
    """Score hand-authored cases through the real harness: one experiment, one evaluator."""
    from strands_evals import Case

    from fieldeval.harness.scoring import score_outputs_sync

    def score(evaluator, cases) -> StructuredOutputReport:
        harness_cases = [Case(name=case.name, input=case.broken, expected_output=case.ground_truth) for case in cases]
        return score_outputs_sync(harness_cases, {case.name: case.prediction for case in cases}, evaluator)

    return score


@pytest.fixture
def no_aws_credentials(monkeypatch, tmp_path):
    """An environment where boto3 finds no credentials: no AWS variable, no file, no metadata service.

    Returns the folder the config and credentials files point into, so a test can write one.
    """
    for name in [name for name in os.environ if name.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path
