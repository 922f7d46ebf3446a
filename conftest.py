"""Every test runs offline: replay mode, for this process and the notebook kernels it starts.

At the root so it also applies to `pytest --nbval examples/notebooks` run alone.
"""

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputReport

from helpers.harness.scoring import score_outputs_sync
from helpers.mode import OFFLINE_ENV

os.environ.update(OFFLINE_ENV)


@pytest.fixture(scope="session")
def score_reference():
    """Score hand-authored cases through the real harness: one experiment, one evaluator."""

    def score(evaluator, cases) -> StructuredOutputReport:
        harness_cases = [Case(name=case.name, input=case.broken, expected_output=case.ground_truth) for case in cases]
        return score_outputs_sync(harness_cases, {case.name: case.prediction for case in cases}, evaluator)

    return score


def _refuse(*args, **kwargs):
    raise AssertionError("a test tried to open a network connection")


@contextmanager
def _refusing_connections() -> Iterator[None]:
    """Within the block, any connection fails the test: replay must never reach the network."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", _refuse)
        patch.setattr(socket, "create_connection", _refuse)
        yield


@pytest.fixture
def no_network():
    """Fail a test that opens any connection: replay must never reach the network."""
    with _refusing_connections():
        yield


@pytest.fixture(scope="session")
def refusing_connections():
    """The `no_network` guard as a context manager, for fixtures of wider scope than one test."""
    return _refusing_connections


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
