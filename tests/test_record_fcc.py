"""`python -m helpers.record_fcc` with a fake provider and a local datasets server: no network.

The local server serves the committed snapshot's rows through `/rows`; the provider is a
`ReplayModel` over an in-memory exchange, so the real `Agent` and `RecordingModel` run.
Every failure must leave the existing snapshot and exchanges byte for byte as they were.
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from helpers import record_fcc
from helpers.examples.fcc.cassettes import FCC_EXCHANGES_DIR, load_document_exchange
from helpers.examples.fcc.documents import SNAPSHOT_PATH, from_snapshot
from helpers.exchanges.fixtures import Exchange
from helpers.exchanges.replay import ReplayModel
from helpers.services.datasets_server import SERVICE, read_snapshot

PAGE = read_snapshot(SNAPSHOT_PATH).pages[0]
USAGE = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
PAYLOAD = {"Agency": "A", "Advertiser": "B", "LineItems": [{"LineItemRate": 1.0}]}


class RowsServer:
    """Serves the committed snapshot's rows as `/rows` pages, or a fixed HTTP status."""

    def __init__(self, status: int = 200) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                server.requests += 1
                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                offset, length = int(query["offset"]), int(query["length"])
                body = dict(PAGE, rows=PAGE["rows"][offset : offset + length])
                if status != 200:
                    body = {"error": "Internal error"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    rows = RowsServer()
    yield rows
    rows.close()


@pytest.fixture
def targets(tmp_path):
    """Copies of the committed snapshot and exchanges, plus a stale exchange of another document."""
    snapshot = tmp_path / "fcc" / "snapshot.json"
    snapshot.parent.mkdir()
    shutil.copy(SNAPSHOT_PATH, snapshot)
    exchanges = tmp_path / "exchanges"
    shutil.copytree(FCC_EXCHANGES_DIR, exchanges)
    (exchanges / "stale-document.json").write_text("{}")
    return snapshot, exchanges


def files(snapshot: Path, exchanges: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [snapshot, *sorted(exchanges.iterdir())]}


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


def fake(turns: list[dict]):
    """A model factory: one shared provider that streams `turns`, one per model call."""
    return lambda: ReplayModel(Exchange("fake provider", {"hand_authored": False}, turns))


class FailingOnThirdCall(ReplayModel):
    async def stream(self, *args, **kwargs):
        if self.turns_used == 2:
            raise RuntimeError("AccessDeniedException: no access to the model")
        async for event in super().stream(*args, **kwargs):
            yield event


def run(server_url: str, targets, factory=None, *extra: str) -> tuple[int, str]:
    snapshot, exchanges = targets
    out = io.StringIO()
    argv = ["--base-url", server_url, "--timeout", "0.5", "--retries", "1", "--backoff", "0.01"]
    argv += ["--snapshot", str(snapshot), "--exchanges", str(exchanges), *extra]
    code = record_fcc.main(argv, model_factory=factory, out=out)
    return code, out.getvalue()


def test_success_replaces_snapshot_and_exchanges_together_and_they_replay(server, targets):
    snapshot, exchanges = targets
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_OK, output
    assert "Skipped row 1 (hand-authored-02): 14 line items" in output
    assert "Removed stale-document.json" in output
    assert sorted(p.name for p in exchanges.iterdir()) == [f"hand-authored-0{n}.json" for n in (1, 3, 5, 7, 8)]
    source = from_snapshot(snapshot)
    assert source.provenance["hand_authored"] is False
    assert source.provenance["recorded"]
    for document in source.documents:
        exchange = load_document_exchange(document.id, exchanges)
        assert exchange.provenance["hand_authored"] is False
        assert exchange.provenance["document_id"] == document.id
        assert exchange.tool_uses()[0]["inputChunks"] == tool_turn(0)["toolUse"]["inputChunks"]
    assert not [p for p in [*snapshot.parent.iterdir(), *exchanges.iterdir()] if p.name.startswith(".")]


def test_agent_failure_on_one_document_writes_nothing(server, targets):
    before = files(*targets)
    turns = [tool_turn(n) for n in range(5)]
    factory = lambda: FailingOnThirdCall(Exchange("fake provider", {}, turns))  # noqa: E731
    code, output = run(server.url, targets, factory)
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "hand-authored-05: the agent call failed: RuntimeError: AccessDeniedException" in output
    assert files(*targets) == before


def test_no_structured_output_tool_call_exits_3_and_writes_nothing(server, targets):
    before = files(*targets)
    code, output = run(server.url, targets, fake([text_turn(), text_turn()]))
    assert code == record_fcc.EXIT_NO_STRUCTURED_OUTPUT, output
    assert "never called the structured-output tool 'FccInvoice'" in output
    assert files(*targets) == before


def test_download_failure_exits_2_naming_the_service_and_writes_nothing(targets):
    broken = RowsServer(status=503)
    try:
        before = files(*targets)
        started = time.monotonic()
        code, output = run(broken.url, targets, fake([tool_turn(0)]))
    finally:
        broken.close()
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert f"Download failed: {SERVICE}" in output and "HTTP 503" in output
    assert time.monotonic() - started < 2.0
    assert files(*targets) == before


def test_missing_dependency_exits_1(server, targets, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)
    code, output = run(server.url, targets, fake([]))
    assert code == record_fcc.EXIT_MISSING_DEPENDENCY
    assert "Missing dependency: boto3" in output
    assert server.requests == 0


def test_a_write_failure_while_staging_exits_2_and_leaves_every_file_as_it_was(server, targets, monkeypatch):
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("helpers.services.datasets_server.write_snapshot", disk_full)
    before = files(*targets)
    code, output = run(server.url, targets, fake([tool_turn(n) for n in range(5)]))
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "Writing the recording failed: [Errno 28] No space left on device" in output
    assert files(*targets) == before  # the exchanges staged before the failure were removed too


def test_the_exit_codes_are_those_of_the_offline_recorder():
    from helpers.exchanges import recording

    for name in ("EXIT_OK", "EXIT_MISSING_DEPENDENCY", "EXIT_AGENT_FAILED", "EXIT_NO_STRUCTURED_OUTPUT"):
        assert getattr(record_fcc, name) == getattr(recording, name), name


def test_absent_credentials_exit_2_naming_aws_profile_before_any_download(server, targets, no_aws_credentials):
    before = files(*targets)
    code, output = run(server.url, targets)
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "AWS_PROFILE" in output
    assert server.requests == 0
    assert files(*targets) == before


def test_help_describes_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as stop:
        record_fcc.main(["--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "make record-fcc" in text and "3  the model never called" in text


def test_too_few_documents_refuses_a_partial_set(targets, monkeypatch):
    monkeypatch.setitem(PAGE, "rows", PAGE["rows"][:3])
    monkeypatch.setitem(PAGE, "num_rows_total", 3)
    short = RowsServer()
    try:
        before = files(*targets)
        code, output = run(short.url, targets, fake([tool_turn(0)]))
    finally:
        short.close()
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert "Only 2 of 5 documents" in output
    assert files(*targets) == before
