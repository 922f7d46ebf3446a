"""Many cases in flight against a throttling provider, through Strands' real OpenAIModel and the openai client.

The purchase-order sample is recorded against the local OpenAI-compatible server
(`tests.servers.openai`), which takes a little time per call and answers each request by the case
it is about (`tests.servers.orders`), so any order of arrival gives every case its own answers.
The server's arrival times and a spy on the run's `SharedBackoff` (when it heard of each throttle,
and when it let each call go) say what the run did, so no assertion rests on how fast this
machine is: a retried request arrives no sooner than its `Retry-After` after the throttle was
heard, and no call is let go during a pause, whatever the load (a request let go just before the
throttle was heard may still reach the server well after it on a busy machine).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fieldeval.commands import record, score
from fieldeval.exchanges import throttle
from fieldeval.exchanges.fixtures import load_exchange
from tests.commands.streams import streams
from tests.sample_project import sample_project
from tests.servers.openai import OpenAIServer, factory_module, throttled_step
from tests.servers.orders import FOLDER, OrderAnswers

NAMES = ["po-1001", "po-1002", "po-1003", "po-1004", "po-1005"]
BASE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
FACTORY = factory_module(timeout=5, max_retries=0)
DELAY = 0.05  # seconds per answered call: enough for cases to overlap, little enough for a fast test


@pytest.fixture(autouse=True)
def openai_client():
    pytest.importorskip("openai")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The sample folder with its five cases, a model factory pointing at the local server, no cassettes."""
    return sample_project(tmp_path, monkeypatch, FACTORY)


class Heard(list):
    """(when, Retry-After) of each throttle the run's back-off heard; `released`: when it let each call go."""

    released: list[float]


@pytest.fixture
def heard(monkeypatch) -> Heard:
    """When the run's back-off heard of each throttle (`time.monotonic()`), and the Retry-After it was given."""
    times = Heard()
    times.released = []

    class Spy(throttle.SharedBackoff):
        def throttled(self, sent_at: float, retry_after: float | None) -> None:
            times.append((time.monotonic(), retry_after))
            super().throttled(sent_at, retry_after)

        async def wait(self) -> float:
            released = await super().wait()
            times.released.append(released)
            return released

    monkeypatch.setattr("fieldeval.exchanges.recorder.SharedBackoff", Spy)  # record's
    monkeypatch.setattr("fieldeval.exchanges.throttle.SharedBackoff", Spy)  # score's, imported when it runs
    return times


def serve(throttled: set[int] | None = None, retry_after: str | None = "1", always: bool = False) -> OpenAIServer:
    """The server answering the sample by case; the requests numbered in `throttled` (from 1) get a 429."""
    answers = OrderAnswers()
    server: OpenAIServer

    def answer(body: dict) -> dict:
        if always or len(server.requests) in (throttled or set()):
            return throttled_step(retry_after)
        return answers.openai_answer(body)

    server = OpenAIServer(answer=answer, delay=DELAY)
    return server


def run_record(server: OpenAIServer, monkeypatch, cassettes: str, concurrency: int) -> tuple[int, str, str]:
    monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
    argv = [*BASE, "--cassettes", cassettes, "--model", "models:local", "--concurrency", str(concurrency)]
    return streams(record.main, argv)


def without_recording_time(path: Path) -> bytes:
    """The cassette's bytes with the one value that must differ between two runs (when it was recorded) blanked."""
    return re.sub(rb'"recorded": "[^"]*"', b'"recorded": ""', path.read_bytes())


def most_in_flight(server: OpenAIServer) -> int:
    """The most requests the server was answering at one moment."""
    moments = [(r["arrived"], 1) for r in server.requests] + [(r["answered"], -1) for r in server.requests]
    level = most = 0
    for _, step in sorted(moments):
        level += step
        most = max(most, level)
    return most


@pytest.mark.local_servers
def test_four_cases_in_flight_write_the_same_cassettes_byte_for_byte_as_one_at_a_time(project, monkeypatch):
    with serve() as server:  # the same folder name twice, as the note in each cassette names the command
        one = run_record(server, monkeypatch, "cassettes", 1)
        (project / "cassettes").rename(project / "one")
        one_in_flight = most_in_flight(server)
        server.requests.clear()
        four = run_record(server, monkeypatch, "cassettes", 4)
    assert one[0] == 0 and four[0] == 0, (one, four)
    assert one_in_flight == 1 and 2 <= most_in_flight(server) <= 4  # the second run kept cases going side by side
    assert sorted(path.name for path in (project / "cassettes").iterdir()) == [f"{name}.json" for name in NAMES]
    for name in NAMES:
        assert without_recording_time(project / "cassettes" / f"{name}.json") == without_recording_time(
            project / "one" / f"{name}.json"
        ), name
        exchange = load_exchange(project / "cassettes" / f"{name}.json", tool_name="PurchaseOrder")
        lookups = exchange.calls[0].response["message"]["content"]
        assert [block["toolUse"]["toolUseId"] for block in lookups][0] == f"call_{name}_1"  # its own answers
        assert len(exchange.calls) == 2
    assert "Recorded 5 of 5 case(s) into cassettes." in four[1] and "throttled" not in four[1]


@pytest.mark.local_servers
def test_a_429_with_retry_after_1_is_waited_for_then_sent_again(project, monkeypatch, heard):
    with serve(throttled={1}) as server:
        code, out, err = run_record(server, monkeypatch, "cassettes", 4)
    assert code == 0, err
    assert [retry_after for _, retry_after in heard] == [1.0]  # the header, read through the openai client's error
    heard_at = heard[0][0]
    first = server.requests[0]
    again = next(r for r in server.requests[1:] if r["body"]["messages"] == first["body"]["messages"])
    assert again["arrived"] >= heard_at + 1.0  # the pause was at least what the header asked
    assert len(server.requests) == 2 * len(NAMES) + 1  # every call once, and the throttled one once more
    assert "The provider throttled 1 request(s); the run paused 1.0 s in all and sent them again." in out
    assert sorted(path.name for path in (project / "cassettes").iterdir()) == [f"{name}.json" for name in NAMES]


@pytest.mark.local_servers
def test_a_throttle_seen_by_one_case_pauses_every_case_in_flight(project, monkeypatch, heard):
    with serve(throttled={3}) as server:  # one case's call, while the others are in flight
        code, _, err = run_record(server, monkeypatch, "cassettes", 4)
    assert code == 0, err
    heard_at, _ = heard[0]
    during = [released for released in heard.released if heard_at < released < heard_at + 1.0]
    after = [r for r in server.requests if r["arrived"] >= heard_at + 1.0]
    assert during == []  # no case sent anything while the run was paused
    assert len(after) >= 4  # and the paused cases went on afterwards (each case's second call, the retry)


@pytest.mark.local_servers
def test_a_provider_that_never_lets_up_fails_each_case_in_bounded_retries_and_writes_nothing(project, monkeypatch):
    (project / "cassettes").mkdir()
    kept = project / "cassettes" / "po-1002.json"
    shutil.copy(FOLDER / "cassettes" / "po-1002.json", kept)
    before = kept.read_bytes()
    with serve(always=True, retry_after="0") as server:
        code, out, err = run_record(server, monkeypatch, "cassettes", 4)
    assert code == 2, (out, err)  # a live call failed (`record --help` lists the exit codes)
    assert len(server.requests) == len(NAMES) * (1 + throttle.MAX_RETRIES)
    for name in NAMES:
        assert (
            f"{name}: the task failed: ThrottledError: strands.models.openai.OpenAIModel still throttled after "
            f"{throttle.MAX_RETRIES} "
            "retries of this case's model calls"
        ) in err
        assert f"{name}: cassettes/{name}.json was left unchanged." in err
    assert err.count("lower --concurrency, or ask the provider for a higher quota") == len(NAMES)
    assert "Bedrock" not in err  # an OpenAI-compatible provider's throttling is never put down to Bedrock
    assert f"Failed: {', '.join(NAMES)} (their cassettes are unchanged)." in err
    assert "Recorded 0 of 5 case(s) into cassettes." in out
    assert [path.name for path in (project / "cassettes").iterdir()] == ["po-1002.json"]  # no temp file left
    assert kept.read_bytes() == before


@pytest.mark.local_servers
def test_score_live_shares_the_backoff_across_its_cases_in_flight(project, monkeypatch, heard):
    monkeypatch.delenv("EVAL_NOTEBOOKS_MODE", raising=False)
    with serve(throttled={2}) as server:
        monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
        argv = [*BASE, "--mode", "live", "--model", "models:local", "--concurrency", "4", "--out", "live.json"]
        code, out, err = streams(score.main, argv)
    assert code == 0, err
    heard_at = heard[0][0]
    assert [released for released in heard.released if heard_at < released < heard_at + 1.0] == []
    assert len(server.requests) == 2 * len(NAMES) + 1
    run = json.loads((project / "live.json").read_text())
    assert sorted(run["run"]["cases"]) == NAMES
    assert "The provider throttled 1 request(s); the run paused" in out


def interrupt(project, command, argv, ready):
    """Run `command` as a program from `project` against a slow local server; Ctrl-C it once `ready(server)` holds."""
    with OpenAIServer(answer=OrderAnswers().openai_answer, delay=0.3) as server:
        env = dict(os.environ, LOCAL_OPENAI_URL=server.url + "/v1")
        env.pop("EVAL_NOTEBOOKS_MODE", None)
        process = subprocess.Popen(
            [sys.executable, "-m", command, *BASE, "--model", "models:local", "--concurrency", "2", *argv],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not ready(server) and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    return process.returncode, out, err


@pytest.mark.local_servers
def test_ctrl_c_in_a_live_score_says_what_ran_and_what_it_cost_and_writes_nothing(project):
    code, out, err = interrupt(
        project,
        "fieldeval.commands.score",
        ["--mode", "live", "--out", "live.json"],
        lambda server: len(server.requests) >= 3,  # a case done, others in flight
    )
    assert code == 130, (out, err)
    summary = re.search(r"Interrupted: (\d+) of 5 case\(s\) ran live, 0 failed, (\d+) in flight were abandoned", err)
    assert summary is not None, err
    assert "the calls made cost" in err and "nothing was written" in err and "Traceback" not in err
    assert not (project / "live.json").exists()


@pytest.mark.local_servers
def test_ctrl_c_mid_run_leaves_only_whole_cassettes_prints_the_summary_and_exits_130(project):
    cassettes = project / "cassettes"
    code, out, err = interrupt(
        project,
        "fieldeval.commands.record",
        ["--cassettes", "cassettes"],
        lambda server: cassettes.is_dir() and any(cassettes.glob("*.json")),
    )
    assert code == 130, (out, err)
    written = sorted(path.name for path in cassettes.iterdir())
    assert 1 <= len(written) < len(NAMES), written  # stopped mid-run: some cases recorded, not all
    assert set(written) <= {f"{name}.json" for name in NAMES}  # no temp file left beside them
    for name in written:
        assert len(load_exchange(cassettes / name, tool_name="PurchaseOrder").calls) == 2  # each one whole
    summary = re.search(r"Interrupted: recorded (\d+) of 5 case\(s\) into cassettes; (\d+) in flight", err)
    assert summary is not None, err
    assert int(summary.group(1)) == len(written)
    assert "Traceback" not in err


@pytest.mark.local_servers
def test_ctrl_c_while_a_cassette_is_written_finishes_and_counts_it_then_stops(project, monkeypatch):
    from fieldeval.exchanges import recorder

    def commit_then_press_ctrl_c(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # delivered in the middle of the first commit
        return commit_fixture(*args, **kwargs)

    commit_fixture = recorder.commit_fixture
    monkeypatch.setattr(recorder, "commit_fixture", commit_then_press_ctrl_c)
    with serve() as server:
        code, _, err = run_record(server, monkeypatch, "cassettes", 1)
        for worker in [thread for thread in threading.enumerate() if thread.name == recorder.WORKER_NAME]:
            worker.join(timeout=30)  # the abandoned case ends against the server, not after this test
    assert code == 130, err
    assert [path.name for path in (project / "cassettes").iterdir()] == ["po-1001.json"]
    assert "Interrupted: recorded 1 of 5 case(s) into cassettes; 1 in flight were abandoned and 3 not started" in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the usual Ctrl-C again afterwards
