"""Many cases in flight against a throttling Bedrock, through the real BedrockModel and boto3.

The local stand-in (`fieldeval.services.stand_in`) answers each ConverseStream request by the case
whose document is in it, so cases in flight in any order get their own answers; here it also
takes a little time per call and, for the requests a test names, answers with the stream's
`throttlingException` event before anything else, as Bedrock throttles a stream. A spy on the
run's `SharedBackoff` says when each throttle was heard and when each call was let go.
"""

from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

import pytest

from fieldeval.commands import record, stand_in
from fieldeval.exchanges import throttle
from fieldeval.services.stand_in import exception
from tests.commands.streams import streams
from tests.servers.orders import FOLDER

NAMES = ["po-1001", "po-1002", "po-1003", "po-1004", "po-1005"]
BASE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
DELAY = 0.05  # seconds per call
FIRST_DELAY = 0.3  # seconds: the run's first pause when the provider says nothing (Bedrock sends no Retry-After)


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder = tmp_path / "your_own_agent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "cassettes"))
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    for name in ("purchase_order", "extract"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder


class Heard(list):
    """When the run's back-off heard of each throttle; `released`: when it let each call go."""

    released: list[float]


@pytest.fixture
def heard(monkeypatch) -> Heard:
    """When the run's back-off heard of each throttle (`time.monotonic()`), and when it let each call go."""
    times = Heard()
    times.released = []

    class Spy(throttle.SharedBackoff):
        def __init__(self, **options) -> None:
            super().__init__(**options, first_delay=FIRST_DELAY)

        def throttled(self, sent_at: float, retry_after: float | None) -> None:
            assert retry_after is None  # Bedrock says nothing of how long to wait
            times.append(time.monotonic())
            super().throttled(sent_at, retry_after)

        async def wait(self) -> float:
            released = await super().wait()
            times.released.append(released)
            return released

    monkeypatch.setattr("fieldeval.exchanges.recorder.SharedBackoff", Spy)
    return times


def started():
    """The stand-in for the sample, slowed down, throttling the requests numbered in its `throttled` (from 1)."""
    args = ["--predictions", "predictions_v2.jsonl", "--tool-calls", "baseline_tool_calls.jsonl", "--port", "0"]
    server = stand_in.build(stand_in.build_parser().parse_args([*BASE[:4], *args]))
    answer, arrived = server.respond, []

    def respond(body: dict) -> list[bytes]:
        arrived.append(time.monotonic())
        if len(arrived) in server.throttled:
            return [exception("throttlingException", "Too many requests, please wait before trying again.")]
        time.sleep(DELAY)
        return answer(body)

    server.respond, server.arrived, server.throttled = respond, arrived, set()
    return server


def run_record(server, monkeypatch, concurrency: int) -> tuple[int, str, str]:
    monkeypatch.setenv(stand_in.URL_VARIABLE, server.url)
    argv = [*BASE, "--cassettes", "cassettes", "--model", "fieldeval.services.stand_in:model"]
    return streams(record.main, [*argv, "--concurrency", str(concurrency)])


def without_recording_time(path: Path) -> bytes:
    return re.sub(rb'"recorded": "[^"]*"', b'"recorded": ""', path.read_bytes())


@pytest.mark.local_servers
def test_a_throttled_stream_pauses_every_case_and_the_cassettes_equal_one_at_a_time(project, monkeypatch, heard):
    with started() as server:  # one server: the endpoint is in each cassette
        one = run_record(server, monkeypatch, 1)
        (project / "cassettes").rename(project / "one")
        server.arrived.clear()
        server.throttled = {3}  # a call of one case, while three others are in flight
        four = run_record(server, monkeypatch, 4)
    assert one[0] == 0 and four[0] == 0, (one, four)
    assert len(heard) == 1 and len(server.arrived) == 2 * len(NAMES) + 1
    during = [t for t in heard.released if heard[0] < t < heard[0] + FIRST_DELAY]
    assert during == []  # no case sent a call while the run was paused
    assert "The provider throttled 1 request(s); the run paused 0.3 s in all and sent them again." in four[1]
    for name in NAMES:
        assert without_recording_time(project / "cassettes" / f"{name}.json") == without_recording_time(
            project / "one" / f"{name}.json"
        ), name
