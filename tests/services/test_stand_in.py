"""The local stand-in: record the sample's tool-using agent through the real BedrockModel, then replay it offline."""

import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading

import pytest

from fieldeval.commands import record, score, stand_in
from fieldeval.exchanges.fixtures import load_exchange
from fieldeval.files import REPO_ROOT
from tests.commands.streams import streams

FOLDER = REPO_ROOT / "examples" / "your_own_agent"
BASE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A copy of the bundled sample with no cassettes, as a user's folder before the first recording."""
    folder = tmp_path / "your_own_agent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "cassettes"))
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))  # what `python -m` gives a command run in the folder
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    for name in ("purchase_order", "extract"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder


def started(*extra):
    args = stand_in.build_parser().parse_args(
        [
            *BASE,
            "--predictions",
            "predictions_v2.jsonl",
            "--tool-calls",
            "baseline_tool_calls.jsonl",
            "--port",
            "0",
            *extra,
        ]
    )
    return stand_in.build(args)


@pytest.mark.local_servers
def test_record_against_the_stand_in_then_replay_with_no_socket(project, monkeypatch, network_guard):
    with started() as server:
        monkeypatch.setenv(stand_in.URL_VARIABLE, server.url)
        out = io.StringIO()
        argv = [
            *BASE,
            "--task",
            "extract:task",
            "--cassettes",
            "cassettes",
            "--model",
            "fieldeval.services.stand_in:model",
        ]
        assert record.main(argv, out=out) == 0, out.getvalue()
    host = server.url.removeprefix("http://")
    assert f"Recording with BedrockModel local-stand-in at {host} (a local endpoint" in out.getvalue()
    assert len(server.requests) == 10  # two model calls per case: the look-ups, then the answer
    exchange = load_exchange(project / "cassettes" / "po-1003.json", tool_name="PurchaseOrder")
    assert exchange.provenance["hand_authored"] is False and exchange.endpoint == host
    assert exchange.stand_in.startswith("answers from predictions_v2.jsonl")
    assert "recorded from a stand-in server" in exchange.describe() and "measures no model" in exchange.describe()
    first = exchange.calls[0].response["message"]["content"]
    assert [block["toolUse"]["name"] for block in first] == ["lookup_sku"] * 3  # three tool uses, one message
    assert "Authorization" not in json.dumps(exchange.provenance) and "stand-in" not in (exchange.endpoint or "")

    printed = io.StringIO()
    with network_guard.refusing_all():  # the replay opens no socket, and the tool runs for real in between
        code = score.main(
            [*BASE, "--task", "extract:task", "--cassettes", "cassettes", "--out", "run.json"], out=printed
        )
    assert code == 0, printed.getvalue()
    assert "5 answered by a stand-in server, not a model" in printed.getvalue()
    assert f"5 recorded through {host} (a local or overridden endpoint)" in printed.getvalue()


def test_the_stand_in_refuses_a_tool_calls_file_naming_an_unknown_case(project, capsys):
    (project / "calls.jsonl").write_text('{"name": "po-9999", "calls": [{"name": "x", "input": {}}]}\n')
    argv = [*BASE, "--predictions", "predictions_v2.jsonl", "--tool-calls", "calls.jsonl", "--port", "0"]
    code, out, err = streams(stand_in.main, argv)
    assert code == 2 and out == ""
    assert "calls.jsonl: line 1: field 'name' 'po-9999' is no case of the case file" in err
    assert "The stand-in did not start." in err


def test_help_says_how_to_record_against_it(capsys):
    assert stand_in.main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "--model fieldeval.services.stand_in:model" in text and "EVAL_STAND_IN_URL" in text


@pytest.mark.local_servers
def test_ctrl_c_stops_the_stand_in_with_130_like_every_command(project):
    """Run as a user does, from the sample's folder; Ctrl-C once it says it listens."""
    argv = [sys.executable, "-m", "fieldeval.commands.stand_in", *BASE, "--predictions", "predictions_v2.jsonl"]
    process = subprocess.Popen(
        [*argv, "--port", "0"],
        cwd=project,
        env={**os.environ, "EVAL_NOTEBOOKS_MODE": "replay"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        heard = ""
        while "Stop it with Ctrl-C." not in heard:
            heard += lines.get(timeout=60)  # bounded: a stand-in that never starts fails here
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
    err = process.stderr.read()
    process.stderr.close()
    assert "Stand-in for Bedrock ConverseStream at http://127.0.0.1:" in heard
    assert code == 130, err
    assert err == "Interrupted: the stand-in stopped listening.\n"
