"""The datasets-server client against a real HTTP server on 127.0.0.1, and its snapshot.

The server is scripted per request: serve a page, answer an error status, stall past the
client's timeout, or drop the connection. Timeouts and backoff are tiny so every test ends
in well under a second.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from helpers.services.datasets_server import (
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    SERVICE,
    DatasetsServerClient,
    DatasetsServerError,
    RowsRequest,
    SnapshotError,
    live_rows,
    read_snapshot,
    resolve_base_url,
    snapshot_rows,
    write_snapshot,
)

FEATURES = [{"feature_idx": 0, "name": "id", "type": {"dtype": "string", "_type": "Value"}}]
REQUEST = RowsRequest("owner/data", "default", "test", page_length=2)


class FakeServer:
    """A threaded HTTP server whose answers follow a script, one step per request."""

    def __init__(self, total_rows: int = 5) -> None:
        self.total_rows = total_rows
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
                fake.requests.append({"query": query, "auth": self.headers.get("Authorization")})
                step = fake.script.pop(0) if fake.script else ("page",)
                if step[0] == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = ("page",)
                if step[0] == "page":
                    self.reply(200, fake.page(int(query["offset"]), int(query["length"])))
                else:
                    self.reply(step[1], step[2], step[3] if len(step) > 3 else {})

            def reply(self, status: int, body, headers: dict | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout) before the answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # A short poll interval so shutdown() returns at once rather than after 0.5 s.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    def page(self, offset: int, length: int) -> dict:
        end = min(offset + length, self.total_rows)
        rows = [{"row_idx": i, "row": {"id": f"doc-{i}"}, "truncated_cells": []} for i in range(offset, end)]
        return {
            "features": FEATURES,
            "rows": rows,
            "num_rows_total": self.total_rows,
            "num_rows_per_page": 100,
            "partial": False,
        }


@pytest.fixture
def server():
    fake = FakeServer()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def client_for(server: FakeServer, **kwargs) -> DatasetsServerClient:
    options = {"timeout": 0.3, "retries": 2, "backoff": 0.01, "token": ""}
    options.update(kwargs)
    return DatasetsServerClient(server.url, **options)


def test_pages_follow_num_rows_total_with_one_call_per_page(server):
    pages = list(client_for(server).pages(REQUEST))
    assert [[r["row"]["id"] for r in p["rows"]] for p in pages] == [
        ["doc-0", "doc-1"],
        ["doc-2", "doc-3"],
        ["doc-4"],
    ]
    assert [r["query"]["offset"] for r in server.requests] == ["0", "2", "4"]
    assert {r["query"]["length"] for r in server.requests} == {"2"}
    assert server.requests[0]["query"]["dataset"] == "owner/data"


def test_pages_are_lazy_so_a_satisfied_caller_requests_no_more(server):
    fetched: list = []
    rows = live_rows(client_for(server), REQUEST, fetched)
    assert [next(rows)["row"]["id"] for _ in range(3)] == ["doc-0", "doc-1", "doc-2"]
    assert len(server.requests) == 2
    assert len(fetched) == 2


@pytest.mark.parametrize(
    ("status", "fix"),
    [(404, "check the dataset, config and split names"), (401, "set HF_TOKEN"), (403, "set HF_TOKEN")],
)
def test_a_4xx_error_payload_raises_at_once_with_the_message_and_the_fix(server, status, fix):
    server.script = [("status", status, {"error": "The dataset does not exist."})]
    with pytest.raises(DatasetsServerError, match=f"HTTP {status}: The dataset does not exist.*{fix}"):
        client_for(server).rows(REQUEST, 0)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [429, 500, 501, 502, 503, 504])
def test_429_and_every_5xx_are_retried(server, status):
    server.script = [("status", status, {"error": "try later"})]
    assert len(client_for(server).rows(REQUEST, 0)["rows"]) == 2
    assert len(server.requests) == 2


def test_backoff_doubles_is_capped_and_honours_retry_after(server, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr("helpers.services.datasets_server.time.sleep", waits.append)
    server.script = [("status", 503, {"error": "busy"})] * 5
    with pytest.raises(DatasetsServerError, match="attempt 5 of 5"):
        client_for(server, retries=4, backoff=1.0, max_backoff=3.0).rows(REQUEST, 0)
    assert waits == [1.0, 2.0, 3.0, 3.0]  # 1, 2, 4 capped at 3, 8 capped at 3; no wait after the last
    waits.clear()
    server.script = [("status", 429, {"error": "slow down"}, {"Retry-After": "2"}), ("page",)]
    client_for(server, backoff=0.5).rows(REQUEST, 0)
    assert waits == [2.0]  # the server asked for longer than the backoff


def test_429_then_success_is_retried(server):
    server.script = [("status", 429, {"error": "rate limited"}, {"Retry-After": "0"}), ("page",)]
    page = client_for(server).rows(REQUEST, 0)
    assert len(page["rows"]) == 2
    assert len(server.requests) == 2


def test_5xx_is_retried_then_reported_with_the_service_name(server):
    server.script = [("status", 503, {"error": "unavailable"})] * 3
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*attempt 3 of 3.*HTTP 503: unavailable.*try again"):
        client_for(server).rows(REQUEST, 0)
    assert len(server.requests) == 3  # one attempt plus two retries


def test_5xx_then_success_is_retried(server):
    server.script = [("status", 500, {"error": "boom"}), ("page",)]
    assert client_for(server).rows(REQUEST, 2)["rows"][0]["row"]["id"] == "doc-2"


def test_slow_response_hits_the_timeout_and_ends_in_bounded_time(server):
    server.script = [("sleep", 1.0)] * 3
    started = time.monotonic()
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*unreachable after 3 attempts"):
        client_for(server, timeout=0.1).rows(REQUEST, 0)
    assert time.monotonic() - started < 1.0


def test_slow_response_once_then_success(server):
    server.script = [("sleep", 0.5)]
    assert len(client_for(server, timeout=0.1).rows(REQUEST, 0)["rows"]) == 2


def test_dropped_connection_is_retried(server):
    server.script = [("drop",), ("page",)]
    assert len(client_for(server).rows(REQUEST, 0)["rows"]) == 2
    assert len(server.requests) == 2


def test_dropped_connections_every_time_name_the_service(server):
    server.script = [("drop",)] * 3
    with pytest.raises(DatasetsServerError, match=SERVICE):
        client_for(server).rows(REQUEST, 0)


def test_no_network_ends_fast_with_a_message_naming_the_service():
    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = DatasetsServerClient(f"http://127.0.0.1:{port}", timeout=0.2, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*unreachable.*{BASE_URL_ENV}"):
        client.rows(REQUEST, 0)
    assert time.monotonic() - started < 2.0


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"rows": [], "num_rows_total": 1}, "'features'"),
        ({"features": [], "rows": {}, "num_rows_total": 1}, "'rows'"),
        ({"features": [], "rows": [], "num_rows_total": "5"}, "'num_rows_total'"),
        ({"features": [], "rows": [{"row_idx": 0}], "num_rows_total": 1}, r"rows\[0\]"),
        ({"error": "Unexpected"}, "returned an error: Unexpected"),
        (b"<html>not json</html>", "not JSON"),
    ],
)
def test_malformed_page_raises_a_clear_error(server, body, fragment):
    server.script = [("status", 200, body)]
    with pytest.raises(DatasetsServerError, match=fragment):
        client_for(server).rows(REQUEST, 0)


def test_token_is_sent_from_the_environment_and_never_written(server, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    client = DatasetsServerClient(server.url, timeout=0.3, backoff=0.01)
    fetched: list = []
    list(live_rows(client, REQUEST, fetched))
    assert server.requests[0]["auth"] == "Bearer hf_secret_value"
    path = write_snapshot(tmp_path / "snap.json", REQUEST, fetched, {"hand_authored": False})
    assert "hf_secret_value" not in path.read_text()


def test_base_url_from_argument_then_environment_then_default(monkeypatch):
    monkeypatch.delenv(BASE_URL_ENV, raising=False)
    assert resolve_base_url() == DEFAULT_BASE_URL
    monkeypatch.setenv(BASE_URL_ENV, "http://mirror.example/")
    assert resolve_base_url() == "http://mirror.example"
    assert resolve_base_url("http://arg.example") == "http://arg.example"


def test_snapshot_round_trip_replays_without_opening_a_socket(tmp_path, no_network):
    served = FakeServer(total_rows=3)  # never started: its pages are built in memory
    pages = [served.page(0, 2), served.page(2, 2)]
    path = write_snapshot(tmp_path / "snap.json", REQUEST, pages, {"hand_authored": False})
    snapshot = read_snapshot(path)
    assert snapshot.request == REQUEST
    assert snapshot.provenance == {"hand_authored": False}
    assert [r["row"]["id"] for r in snapshot_rows(snapshot)] == ["doc-0", "doc-1", "doc-2"]


def test_the_no_network_guard_really_refuses_a_connection(server, no_network):
    with pytest.raises(AssertionError, match="network connection"):  # so a replay test using it can fail
        client_for(server, retries=0).rows(REQUEST, 0)
    assert server.requests == []


def test_missing_snapshot_names_the_record_command(tmp_path):
    with pytest.raises(SnapshotError, match="make record-fcc"):
        read_snapshot(tmp_path / "absent.json")


def test_snapshot_shorter_than_needed_says_so(tmp_path):
    page = FakeServer(total_rows=5).page(0, 2)
    path = write_snapshot(tmp_path / "snap.json", REQUEST, [page], {})
    rows = snapshot_rows(read_snapshot(path))
    assert len([next(rows), next(rows)]) == 2
    with pytest.raises(SnapshotError, match="holds 2 of 5 rows.*make record-fcc"):
        next(rows)


def test_malformed_snapshot_names_the_file_and_field(tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"provenance": {}, "request": REQUEST.as_dict(), "pages": [{}]}))
    with pytest.raises(SnapshotError, match=r"snap.json: pages\[0\].*'features'"):
        read_snapshot(path)
    path.write_text("{")
    with pytest.raises(SnapshotError, match="not valid JSON"):
        read_snapshot(path)


def test_page_length_above_the_server_limit_is_refused():
    with pytest.raises(ValueError, match="between 1 and 100"):
        RowsRequest("d", "c", "s", page_length=101)
