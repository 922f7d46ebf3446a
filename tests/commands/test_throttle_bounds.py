"""Every wait of a throttled live run is bounded, and what the run says about it is what the provider did.

The purchase-order sample is recorded (and scored live) through Strands' real `OpenAIModel` and the
openai client, against the local OpenAI-compatible server (`tests.servers.openai`), which counts
the 429s it sends. The user's factory here leaves the openai client's own retries at their default
(two): the run must turn them off, so that the throttles it prints are the ones the server sent.
Runs that must show what a user's terminal shows (standard error as Python writes it, Ctrl-C) are
programs of their own; the others run in process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fieldeval.commands import record, score
from fieldeval.exchanges import throttle
from tests.commands.streams import streams
from tests.sample_project import sample_project
from tests.servers.openai import OpenAIServer, factory_module, throttled_step
from tests.servers.orders import OrderAnswers

NAMES = ["po-1001", "po-1002", "po-1003", "po-1004", "po-1005"]
BASE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
LIVE = ["--model", "models:local"]
# A user's factory as the provider's documentation shows it: the openai client keeps its own retries.
FACTORY = factory_module(timeout=5)


@pytest.fixture(autouse=True)
def openai_client():
    pytest.importorskip("openai")


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.delenv("EVAL_NOTEBOOKS_MODE", raising=False)
    return sample_project(tmp_path, monkeypatch, FACTORY)


class Throttling:
    """The server: a 429 for the requests numbered in `throttled` (from 1), or for every case not in `spare`."""

    def __init__(self, throttled: set[int] = frozenset(), spare: set[str] | None = None, retry_after: str = "0.1"):
        self.throttled, self.spare, self.retry_after = throttled, spare, retry_after
        self.answers = OrderAnswers()
        self.sent = 0  # the 429s sent
        self.server = OpenAIServer(answer=self.answer)

    def answer(self, body: dict) -> dict:
        user = next(message for message in body["messages"] if message["role"] == "user")
        text = "".join(part.get("text", "") for part in user["content"]) if isinstance(user["content"], list) else ""
        spared = self.spare is None or self.answers.case_of(text or str(user["content"])) in self.spare
        if len(self.server.requests) in self.throttled or not spared:
            self.sent += 1
            return throttled_step(self.retry_after)
        return self.answers.openai_answer(body)

    def __enter__(self) -> Throttling:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


def printed_throttles(out: str) -> int:
    line = next(line for line in out.splitlines() if line.startswith("The provider throttled"))
    return int(line.split()[3])


@pytest.mark.local_servers
def test_the_throttles_printed_are_the_429s_the_server_sent(project, monkeypatch):
    with Throttling(throttled={1, 2, 3, 6}) as provider:
        monkeypatch.setenv("LOCAL_OPENAI_URL", provider.server.url + "/v1")
        code, out, err = streams(record.main, [*BASE, *LIVE, "--cassettes", "cassettes", "--concurrency", "1"])
    assert code == 0, err
    assert provider.sent == 4 and printed_throttles(out) == provider.sent
    assert len(provider.server.requests) == 2 * len(NAMES) + provider.sent  # no request the run did not pace


@pytest.mark.local_servers
def test_score_live_prints_the_429s_the_server_sent_too(project, monkeypatch):
    with Throttling(throttled={2, 3}) as provider:
        monkeypatch.setenv("LOCAL_OPENAI_URL", provider.server.url + "/v1")
        code, out, err = streams(score.main, [*BASE, *LIVE, "--mode", "live", "--out", "live.json"])
    assert code == 0, err
    assert provider.sent == 2 and printed_throttles(out) == provider.sent


@pytest.mark.local_servers
def test_a_provider_that_throttles_everything_stops_the_run_keeping_what_was_recorded(project, monkeypatch):
    with Throttling(spare={"po-1001"}, retry_after="1") as provider:  # the first case answered, every other throttled
        monkeypatch.setenv("LOCAL_OPENAI_URL", provider.server.url + "/v1")
        argv = [*BASE, *LIVE, "--cassettes", "cassettes", "--concurrency", "2", "--give-up-after", "2"]
        code, out, err = streams(record.main, argv)
    assert code == 2, (out, err)
    assert [path.name for path in (project / "cassettes").iterdir()] == ["po-1001.json"]
    assert len(json.loads((project / "cassettes" / "po-1001.json").read_text())["calls"]) == 2
    assert "Gave up: no model call succeeded for 2 s while strands.models.openai.OpenAIModel throttled" in err
    assert "Bedrock" not in err and "Bedrock" not in out  # never a guess at the provider
    assert "The 1 cassette(s) recorded before are kept" in err and "--record-mode missing" in err
    assert "Recorded 1 of 5 case(s) into cassettes." in out
    assert printed_throttles(out) == provider.sent and "before it gave up" in out
    # Bounded by the run, not by each case's retries: no case came near its own bound of retries.
    assert provider.sent < throttle.MAX_RETRIES * 2


@pytest.mark.local_servers
def test_score_live_against_a_provider_that_throttles_everything_gives_up_and_writes_nothing(project, monkeypatch):
    with Throttling(spare=set(), retry_after="1") as provider:
        monkeypatch.setenv("LOCAL_OPENAI_URL", provider.server.url + "/v1")
        argv = [*BASE, *LIVE, "--mode", "live", "--give-up-after", "1.5", "--out", "live.json"]
        code, out, err = streams(score.main, argv)
    assert code == 2, (out, err)
    assert "It gave up: no model call succeeded for 1.5 s while strands.models.openai.OpenAIModel throttled" in err
    assert "5 case(s) were stopped" in err and "Nothing was written." in err
    assert "Bedrock" not in err and not (project / "live.json").exists()
    assert printed_throttles(out) == provider.sent


@pytest.mark.parametrize("seconds", ["0", "-1", "nan", "inf", "86401"])
def test_give_up_after_out_of_range_is_refused_before_any_call(project, seconds):
    code, _, err = streams(record.main, [*BASE, *LIVE, "--cassettes", "cassettes", "--give-up-after", seconds])
    assert code == 2 and f"--give-up-after {float(seconds):g}: give the seconds" in err
    assert "Nothing was written." in err and not (project / "cassettes").exists()


def test_score_live_refuses_give_up_after_out_of_range_too(project):
    code, _, err = streams(score.main, [*BASE, *LIVE, "--mode", "live", "--give-up-after", "0", "--out", "o.json"])
    assert code == 2 and "--give-up-after 0: give the seconds" in err


@pytest.mark.local_servers
def test_verbose_prints_strands_own_log_lines_with_their_logger(project, monkeypatch):
    with Throttling(throttled={1}) as provider:
        monkeypatch.setenv("LOCAL_OPENAI_URL", provider.server.url + "/v1")
        argv = [*BASE, *LIVE, "--cassettes", "cassettes", "--only", "po-1001", "--verbose"]
        code, _, err = streams(record.main, argv)
    assert code == 0, err
    assert "strands.models.openai WARNING: OpenAI threw rate limit error" in err


def program(project: Path, command: str, argv: list[str], url: str) -> subprocess.Popen:
    env = dict(os.environ, LOCAL_OPENAI_URL=url + "/v1")
    env.pop("EVAL_NOTEBOOKS_MODE", None)
    return subprocess.Popen(
        [sys.executable, "-m", f"fieldeval.commands.{command}", *BASE, *LIVE, *argv],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.local_servers
@pytest.mark.parametrize(
    ("command", "argv"), [("record", ["--cassettes", "cassettes"]), ("score", ["--mode", "live", "--out", "o.json"])]
)
def test_ctrl_c_ends_a_60_s_pause_at_once_and_strands_log_lines_stay_off_stderr(project, command, argv):
    with Throttling(spare=set(), retry_after="60") as provider:  # the pause the provider asks for: a minute
        process = program(project, command, argv, provider.server.url)
        deadline = time.monotonic() + 60
        while provider.sent < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.5)  # the run is now in its pause
        process.send_signal(signal.SIGINT)
        try:  # well inside the minute the pause would last
            out, err = process.communicate(timeout=15)
        finally:
            process.kill()
    assert process.returncode == 130, (out, err)
    assert "Interrupted:" in err and "Traceback" not in err
    assert "rate limit" not in err  # Strands' warning per throttled call, printed by Python when nothing logs
    assert provider.sent == len(provider.server.requests)  # the client itself sent nothing more after the 429s
