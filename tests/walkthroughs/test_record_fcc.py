"""`python -m walkthroughs.fcc.record` with a stand-in provider and a local datasets server: no network.

The local server serves the committed snapshot's rows through `/rows` (or a fault); the provider
is a `ReplayModel` over an in-memory exchange, so the real `Agent`, `RecordingModel` and the
general recorder run. Every failure must leave the snapshot, the case file and the exchanges
byte for byte as they were; a success replaces them in one step and removes only what it can
prove is a stale exchange of its own set.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from fieldeval.exchanges.cassettes import Cassettes
from fieldeval.exchanges.fixtures import Exchange
from fieldeval.exchanges.replay import ReplayModel, turn_events
from fieldeval.harness.cases import load_cases
from tests.commands.streams import outcome
from tests.servers.local import LocalServer
from walkthroughs.fcc import record as record_fcc
from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR, exchange_path, load_document_exchange
from walkthroughs.fcc.datasets_server import SERVICE, read_snapshot
from walkthroughs.fcc.documents import CASES_PATH, SNAPSHOT_PATH, case_lines, from_snapshot
from walkthroughs.fcc.schema import FccInvoice

PAGE = read_snapshot(SNAPSHOT_PATH).pages[0]
USAGE = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
PAYLOAD = {"Agency": "A", "Advertiser": "B", "LineItems": [{"LineItemRate": 1.0}]}
SELECTED = [f"hand-authored-0{n}" for n in (1, 3, 5, 7, 8)]

Response = tuple[int, dict[str, str], bytes]


def rows_page(query: dict[str, str], page: dict | None = None) -> Response:
    """The committed snapshot's rows from `offset`, `length` at a time, as the server pages them."""
    page = page or PAGE
    offset, length = int(query["offset"]), int(query["length"])
    body = dict(page, rows=page["rows"][offset : offset + length])
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


class RowsServer(LocalServer):
    """A local `/rows` server; `respond(path, query)` decides each answer (default: the snapshot's rows)."""

    def __init__(self, respond: Callable[[str, dict[str, str]], Response] | None = None) -> None:
        self.requests = 0
        respond = respond or (lambda path, query: rows_page(query))
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server.requests += 1
                parts = urlparse(self.path)
                status, headers, data = respond(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.serve(Handler)


@pytest.fixture
def server(local_servers):
    with RowsServer() as rows:
        yield rows


@pytest.fixture
def serve(local_servers):
    """Start a server with a custom responder; every one started is closed after the test."""
    with ExitStack() as started:
        yield lambda respond: started.enter_context(RowsServer(respond))


def copy_committed_fcc(folder: Path) -> tuple[Path, Path, Path]:
    """Copies of the committed snapshot, case file and exchanges, for a recorder to replace."""
    snapshot = folder / "fcc" / "snapshot.json"
    snapshot.parent.mkdir()
    shutil.copy(SNAPSHOT_PATH, snapshot)
    cases = snapshot.parent / "cases.jsonl"
    shutil.copy(CASES_PATH, cases)
    exchanges = folder / "exchanges"
    shutil.copytree(FCC_EXCHANGES_DIR, exchanges)
    return snapshot, cases, exchanges


def stale_exchange(document_id: str) -> str:
    """An exchange `make record-fcc` wrote for a document that is no longer selected."""
    data = json.loads(exchange_path("hand-authored-01").read_text())
    data["provenance"]["document_id"] = document_id
    return json.dumps(data, indent=2)


@pytest.fixture
def targets(tmp_path):
    """Copies of the committed snapshot, case file and exchanges, plus three files that are not the five.

    `retired-document.json` is an old exchange of a document no longer selected (stale, provably
    ours); `notes.json` and `offline_invoice.json` are not exchanges of this set.
    """
    snapshot, cases, exchanges = copy_committed_fcc(tmp_path)
    (exchanges / "retired-document.json").write_text(stale_exchange("retired-document"))
    (exchanges / "notes.json").write_text("{}")
    shutil.copy(FCC_EXCHANGES_DIR.parent / "offline_invoice.json", exchanges / "offline_invoice.json")
    return snapshot, cases, exchanges


def files(targets) -> dict[str, bytes]:
    """Every file of the three targets' folders, by name, with its bytes: leftovers show up too."""
    snapshot, _, exchanges = targets
    return {p.name: p.read_bytes() for folder in (snapshot.parent, exchanges) for p in sorted(folder.iterdir())}


def tool_turn(number: int) -> dict:
    text = json.dumps(PAYLOAD)
    return {
        "toolUse": {
            "name": "FccInvoice",
            "toolUseId": f"tooluse_{number}",
            "inputChunks": [text[:7], text[7:30], text[30:]],
            "input": PAYLOAD,
            "usage": USAGE,
        }
    }


def text_turn() -> dict:
    return {"text": {"chunks": ["I cannot ", "find an invoice."], "usage": USAGE}}


class StandIn(ReplayModel):
    """One shared provider for every document: streams the next turn on each call."""

    calls = 0

    async def stream(self, *args, **kwargs):
        StandIn.calls += 1
        async for event in super().stream(*args, **kwargs):
            yield event


def fake(turns: list[dict]):
    """A model factory: one shared provider that streams `turns`, one per model call."""
    StandIn.calls = 0
    return lambda: StandIn(Exchange("stand-in provider", {"hand_authored": False}, turns))


class FailingOnThirdCall(ReplayModel):
    async def stream(self, *args, **kwargs):
        if self.turns_used == 2:
            raise RuntimeError("AccessDeniedException: no access to the model")
        async for event in super().stream(*args, **kwargs):
            yield event


def run(server_url: str, targets, factory=None, *extra: str) -> tuple[int, str]:
    """The exit code and what it printed about the outcome (`tests.commands.streams.outcome`)."""
    snapshot, cases, exchanges = targets
    argv = ["--base-url", server_url, "--timeout", "0.5", "--retries", "1", "--backoff", "0.01"]
    argv += ["--snapshot", str(snapshot), "--cases", str(cases), "--exchanges", str(exchanges), *extra]
    return outcome(record_fcc.main, argv, model_factory=factory)


# --- success --------------------------------------------------------------------------------


def test_success_switches_snapshot_cases_and_exchanges_in_together_and_they_replay(server, targets):
    snapshot, cases, exchanges = targets
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_OK, output
    assert "Skipped row 1 (hand-authored-02): 14 line items" in output
    source = from_snapshot(snapshot)
    assert source.provenance["hand_authored"] is False and source.provenance["recorded"]
    assert cases.read_text() == case_lines(source.documents)
    assert [case.name for case in load_cases(cases, FccInvoice)] == SELECTED
    for number, document in enumerate(source.documents):
        exchange = load_document_exchange(document.id, exchanges, prompt=document.prompt())
        assert exchange.provenance["hand_authored"] is False
        assert exchange.provenance["document_id"] == document.id
        assert exchange.calls[0].events == list(turn_events(tool_turn(number)))
    # The general replay path reads the same folder: every cassette bound to its case's prompt.
    Cassettes(exchanges, SELECTED, tool_name="FccInvoice", record_command="make record-fcc").load_all()
    assert not [p for p in [*snapshot.parent.iterdir(), *exchanges.iterdir()] if p.name.startswith(".")]


def test_only_provably_stale_exchanges_are_removed_and_other_files_are_left_and_mentioned(server, targets):
    _, _, exchanges = targets
    before = files(targets)
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_OK, output
    assert "Removed retired-document.json: the exchange of document 'retired-document'" in output
    assert not (exchanges / "retired-document.json").exists()
    for name in ("notes.json", "offline_invoice.json"):
        assert f"Left {name} in place" in output
        assert (exchanges / name).read_bytes() == before[name]
    assert sorted(p.name for p in exchanges.iterdir()) == sorted(
        [f"{name}.json" for name in SELECTED] + ["notes.json", "offline_invoice.json"]
    )


def test_the_review_compares_each_document_with_its_previous_exchange(server, targets):
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_OK, output
    assert "hand-authored-01: payload of the FccInvoice answer" in output
    assert "hand-authored-01: changes from the previous fixture" in output
    assert "payload.Agency: 'Blue Ridge Media Partners' -> 'A'" in output


# --- failures leave every file byte for byte --------------------------------------------------


def test_agent_failure_on_one_document_writes_nothing(server, targets):
    before = files(targets)
    turns = [tool_turn(n) for n in range(5)]
    factory = lambda: FailingOnThirdCall(Exchange("stand-in provider", {}, turns))  # noqa: E731
    code, output = run(server.url, targets, factory)
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "hand-authored-05: the task failed: RuntimeError: AccessDeniedException" in output
    assert "Nothing was written" in output
    assert files(targets) == before


def test_no_structured_output_tool_call_exits_3_and_writes_nothing(server, targets):
    before = files(targets)
    code, output = run(server.url, targets, fake([text_turn(), text_turn()]))
    assert code == record_fcc.EXIT_NO_STRUCTURED_OUTPUT, output
    assert "never called the structured-output tool 'FccInvoice'" in output
    assert files(targets) == before


def test_a_full_disk_at_the_third_exchange_leaves_every_file_old(server, targets, monkeypatch):
    """The snapshot and the case file are staged before the exchanges: none is renamed in until all are whole."""
    _, _, exchanges = targets
    before = files(targets)
    third = exchange_path("hand-authored-05", exchanges).absolute()
    real_open = os.open

    def disk_full_at_the_third_exchange(path, *args, **kwargs):
        name = Path(path).name
        if (
            Path(path).absolute().parent == third.parent
            and name.startswith(f".{third.name}.")
            and name.endswith(".tmp")
        ):
            raise OSError(28, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", disk_full_at_the_third_exchange)
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    monkeypatch.setattr(os, "open", real_open)
    assert code == record_fcc.EXIT_AGENT_FAILED, output
    assert f"Writing the recording failed: cannot write {third}: No space left on device\n" in output, output
    assert files(targets) == before  # the snapshot, the case file and the first exchanges were never renamed in


def test_download_failure_exits_2_naming_the_service_and_writes_nothing(serve, targets):
    broken = serve(lambda path, query: (503, {}, b'{"error": "Internal error"}'))
    before = files(targets)
    started = time.monotonic()
    code, output = run(broken.url, targets, fake([tool_turn(0)]))
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert f"Download failed: {SERVICE}" in output and "HTTP 503" in output
    assert time.monotonic() - started < 10.0  # bounded: one retry, then the service's error
    assert files(targets) == before


@pytest.mark.parametrize(
    ("respond", "fragment"),
    [
        (lambda path, query: (302, {"Location": "/rows?offset=0&length=10"}, b""), "redirect"),
        (lambda path, query: (200, {}, b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
        (
            lambda path, query: rows_page(query, dict(PAGE, rows=[dict(PAGE["rows"][0], row_idx="first")])),
            "field 'rows[0].row_idx': is \"first\"; it must be a non-negative integer",
        ),
    ],
    ids=["redirect loop", "deep body", "non-integer row index"],
)
def test_a_hostile_server_ends_as_exit_2_and_nothing_written(serve, targets, respond, fragment):
    hostile = serve(respond)
    before = files(targets)
    code, output = run(hostile.url, targets, fake([tool_turn(0)]))
    assert code == record_fcc.EXIT_AGENT_FAILED, output
    assert fragment in output and "Nothing was written" in output
    assert StandIn.calls == 0
    assert files(targets) == before


def test_two_ids_that_share_a_file_name_are_refused_before_any_model_call(serve, targets):
    rows = [dict(entry, row=dict(entry["row"])) for entry in PAGE["rows"]]
    rows[0]["row"]["id"], rows[2]["row"]["id"] = "doc/1", "doc_1"
    clash = serve(lambda path, query: rows_page(query, dict(PAGE, rows=rows)))
    before = files(targets)
    code, output = run(clash.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_AGENT_FAILED, output
    assert "'doc/1' and 'doc_1' would share the cassette file doc_1.json" in output
    assert StandIn.calls == 0
    assert files(targets) == before


def test_too_few_documents_refuses_a_partial_set(serve, targets):
    short = serve(lambda path, query: rows_page(query, dict(PAGE, rows=PAGE["rows"][:3], num_rows_total=3)))
    before = files(targets)
    code, output = run(short.url, targets, fake([tool_turn(0)]))
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "Only 2 of 5 documents" in output and "Skipped row 1 (hand-authored-02)" in output
    assert files(targets) == before


# --- flags, credentials, dependencies ---------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--timeout", "0"], "timeout=0.0 is out of range"),
        (["--timeout", "nan"], "timeout=nan is out of range"),
        (["--retries", "11"], "retries=11 is out of range"),
        (["--retries", "-1"], "retries=-1 is out of range"),
        (["--backoff", "61"], "backoff=61.0 is out of range"),
        (["--base-url", "ftp://example.org"], "scheme must be http or https"),
        (["--base-url", "http://"], "names no host"),
    ],
)
def test_a_bad_flag_exits_2_before_any_request(server, targets, flags, fragment):
    before = files(targets)
    code, output = run(server.url, targets, fake([tool_turn(0)]), *flags)
    assert code == record_fcc.EXIT_AGENT_FAILED, output
    assert fragment in output and "Nothing was written" in output
    assert server.requests == 0 and StandIn.calls == 0
    assert files(targets) == before


def test_a_flag_that_is_not_a_number_exits_2_saying_nothing_was_written(capsys):
    assert record_fcc.main(["--retries", "many"]) == 2
    err = capsys.readouterr().err
    assert "argument --retries: invalid int value: 'many'" in err and "Nothing was written" in err


def test_missing_dependency_exits_1(server, targets, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)
    code, output = run(server.url, targets, fake([]))
    assert code == record_fcc.EXIT_MISSING_DEPENDENCY
    assert "Missing dependency: boto3" in output
    assert server.requests == 0


def test_absent_credentials_exit_2_naming_aws_profile_before_any_download(server, targets, no_aws_credentials):
    before = files(targets)
    code, output = run(server.url, targets)
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "AWS_PROFILE" in output
    assert server.requests == 0
    assert files(targets) == before


def test_the_exit_codes_are_those_of_the_general_recorder():
    from fieldeval.commands import record

    assert record_fcc.EXIT_OK == record.EXIT_OK
    assert record_fcc.EXIT_MISSING_DEPENDENCY == record.EXIT_MISSING_DEPENDENCY
    assert record_fcc.EXIT_AGENT_FAILED == record.EXIT_BAD_INPUT
    assert record_fcc.EXIT_NO_STRUCTURED_OUTPUT == record.EXIT_NO_STRUCTURED_OUTPUT
    # documented by the example itself, every code it returns, in its own table
    assert [code for code, _ in record_fcc.CODES] == [0, 1, 2, 3]


def test_help_describes_the_steps_and_the_exit_codes(capsys):
    assert record_fcc.main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "make record-fcc" in text and "3  the model never called" in text
    assert "python -m fieldeval.commands.record" in text


def test_the_committed_case_file_is_derived_from_the_committed_snapshot():
    documents = from_snapshot().documents
    assert CASES_PATH.read_text(encoding="utf-8") == case_lines(documents, hand_authored=True)
    cases = load_cases(CASES_PATH, FccInvoice)
    assert [case.name for case in cases] == SELECTED
    assert [case.input for case in cases] == [doc.prompt() for doc in documents]
    assert [case.expected_output for case in cases] == [doc.label for doc in documents]


def test_the_general_recorder_alone_records_cassettes_the_fcc_replay_accepts(tmp_path):
    """`python -m fieldeval.commands.record` on the committed case file: the docstring's command for the cassettes."""
    from fieldeval.commands import record

    out = io.StringIO()
    argv = ["--schema", "walkthroughs.fcc.schema:FccInvoice", "--cases", str(CASES_PATH)]
    argv += ["--task", "walkthroughs.fcc.task:extract", "--cassettes", str(tmp_path)]
    code = record.main(argv, model_factory=fake([tool_turn(n) for n in range(5)]), out=out)
    assert code == record.EXIT_OK, out.getvalue()
    for document in from_snapshot().documents:
        exchange = load_document_exchange(document.id, tmp_path, prompt=document.prompt())
        assert exchange.provenance["hand_authored"] is False
        assert "document_id" not in exchange.provenance  # bound by the prompt alone
