"""The datasets-server client against a real HTTP server on 127.0.0.1, and its snapshot.

The server (`tests/servers/datasets.py`) is scripted per request: serve a page, answer an error
status, stall, trickle, break the body, redirect, or drop the connection. Timeouts and backoff
are tiny so every test ends in well under a second.
"""

from __future__ import annotations

import json
import socket
import time

import pytest

from tests.servers.datasets import DatasetsServer
from walkthroughs.fcc.datasets_server import (
    BASE_URL_ENV,
    DEFAULT_BASE_URL,
    SERVICE,
    TOKEN_ANY_HOST_ENV,
    DatasetsServerClient,
    DatasetsServerError,
    RowsRequest,
    SnapshotError,
    live_rows,
    read_snapshot,
    resolve_base_url,
    snapshot_rows,
    token_allowed,
    write_snapshot,
)

REQUEST = RowsRequest("owner/data", "default", "test", page_length=2)


@pytest.fixture
def server(local_servers):
    with DatasetsServer() as fake:
        yield fake


def client_for(server: DatasetsServer, **kwargs) -> DatasetsServerClient:
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
    monkeypatch.setattr("walkthroughs.fcc.datasets_server.pause", lambda seconds, stop: waits.append(seconds))
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


@pytest.mark.local_servers
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


def test_base_url_from_argument_then_environment_then_default(monkeypatch):
    monkeypatch.delenv(BASE_URL_ENV, raising=False)
    assert resolve_base_url() == DEFAULT_BASE_URL
    monkeypatch.setenv(BASE_URL_ENV, "http://mirror.example/")
    assert resolve_base_url() == "http://mirror.example"
    assert resolve_base_url("http://arg.example") == "http://arg.example"


def test_snapshot_round_trip_replays_without_opening_a_socket(tmp_path):
    served = DatasetsServer(total_rows=3)  # never started: its pages are built in memory
    pages = [served.page(0, 2), served.page(2, 2)]
    path = write_snapshot(tmp_path / "snap.json", REQUEST, pages, {"hand_authored": False})
    snapshot = read_snapshot(path)
    assert snapshot.request == REQUEST
    assert snapshot.provenance == {"hand_authored": False}
    assert [r["row"]["id"] for r in snapshot_rows(snapshot)] == ["doc-0", "doc-1", "doc-2"]


def test_the_network_guard_really_refuses_a_connection(server, network_guard):
    with network_guard.refusing_all(), pytest.raises(AssertionError, match="network connection"):
        client_for(server, retries=0).rows(REQUEST, 0)  # so a replay test can fail
    assert server.requests == []
    assert network_guard.refused == ["getaddrinfo '127.0.0.1'"]  # urllib3 resolves the host first
    network_guard.refused.clear()


def test_missing_snapshot_names_the_record_command(tmp_path):
    with pytest.raises(SnapshotError, match="make record-fcc"):
        read_snapshot(tmp_path / "absent.json")


def test_snapshot_shorter_than_needed_says_so(tmp_path):
    page = DatasetsServer(total_rows=5).page(0, 2)
    path = write_snapshot(tmp_path / "snap.json", REQUEST, [page], {})
    rows = snapshot_rows(read_snapshot(path))
    assert len([next(rows), next(rows)]) == 2
    with pytest.raises(SnapshotError, match="holds 2 of 5 rows.*make record-fcc"):
        next(rows)


def test_malformed_snapshot_names_the_file_and_field(tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(json.dumps({"provenance": {}, "request": REQUEST.as_dict(), "pages": [{}]}))
    with pytest.raises(SnapshotError, match=r"snap.json: field 'pages\[0\].features': is missing; it must be a list"):
        read_snapshot(path)
    path.write_text("{")
    with pytest.raises(SnapshotError, match="not valid JSON"):
        read_snapshot(path)


def test_page_length_above_the_server_limit_is_refused():
    with pytest.raises(ValueError, match="page_length\n  Input should be less than or equal to 100"):
        RowsRequest("d", "c", "s", page_length=101)


# --- secrets -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "any_host", "allowed"),
    [
        ("https://datasets-server.huggingface.co", False, True),
        ("https://huggingface.co", False, True),
        ("https://HuggingFace.co.", False, True),
        ("https://huggingface.co.evil.example", False, False),
        ("https://evilhuggingface.co", False, False),
        ("http://datasets-server.huggingface.co", False, False),
        ("https://mirror.example", False, False),
        ("https://mirror.example", True, True),
        ("http://mirror.example", True, False),
    ],
)
def test_a_token_goes_only_to_hugging_face_over_https_unless_opted_in(url, any_host, allowed):
    assert token_allowed(url, any_host) is allowed


def test_the_token_is_withheld_from_another_host_and_the_401_says_how_to_opt_in(server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    monkeypatch.setenv(TOKEN_ANY_HOST_ENV, "1")  # even opted in: never over plain http
    server.script = [("status", 401, {"error": "Unauthorized"})]
    with pytest.raises(DatasetsServerError, match=f"HF_TOKEN is set but was not sent.*{TOKEN_ANY_HOST_ENV}=1"):
        DatasetsServerClient(server.url, timeout=0.3, backoff=0.01).rows(REQUEST, 0)
    assert server.requests[0]["auth"] is None


@pytest.mark.local_servers
def test_the_token_reaches_an_https_host_the_user_opted_in_for_and_is_never_written(monkeypatch, tmp_path):
    pytest.importorskip("cryptography", reason="makes the test server's certificate (comes with strands-agents)")
    from tests.servers.tls import serve_https

    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    with DatasetsServer() as fake:
        cert = serve_https(fake.server, tmp_path)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
        url = fake.url.replace("http://", "https://")
        fetched: list = []
        list(live_rows(DatasetsServerClient(url, timeout=2, backoff=0.01), REQUEST, fetched))
        assert fake.requests[0]["auth"] is None  # not a Hugging Face host, not opted in
        monkeypatch.setenv(TOKEN_ANY_HOST_ENV, "1")
        list(live_rows(DatasetsServerClient(url, timeout=2, backoff=0.01), REQUEST, fetched))
        assert fake.requests[-1]["auth"] == "Bearer hf_secret_value"
    path = write_snapshot(tmp_path / "snap.json", REQUEST, fetched, {"hand_authored": False})
    assert "hf_secret_value" not in path.read_text()


@pytest.mark.local_servers
def test_credentials_and_queries_in_urls_are_never_stored_or_printed(tmp_path):
    with socket.socket() as probe:  # nobody listens: the request fails and its message is printed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = DatasetsServerClient(f"https://user:s3cret@127.0.0.1:{port}/api", timeout=0.2, retries=0)
    assert client.base_url == f"https://127.0.0.1:{port}/api"
    with pytest.raises(DatasetsServerError) as caught:
        client.rows(REQUEST, 0)
    assert "s3cret" not in str(caught.value) and "user" not in str(caught.value)
    provenance = {"source": f"{SERVICE} https://user:s3cret@mirror.example/rows?token=s3cret", "note": "n"}
    text = write_snapshot(tmp_path / "snap.json", REQUEST, [], provenance).read_text()
    assert "s3cret" not in text and "https://mirror.example/rows" in text


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://mirror.example", "scheme must be http or https"),
        ("mirror.example", "scheme must be http or https"),
        ("http://", "names no host"),
        ("http://mirror.example:port", "does not parse"),
        ("http://mirror.example/?token=s3cret", "query string"),
        ("http://user:s3cret@mirror.example", "sent in clear"),
    ],
)
def test_a_malformed_base_url_is_a_clear_error_naming_the_setting(monkeypatch, url, problem):
    monkeypatch.setenv(BASE_URL_ENV, url)
    with pytest.raises(ValueError, match=f"{BASE_URL_ENV}=.*{problem}") as caught:
        DatasetsServerClient()
    assert "s3cret" not in str(caught.value)
    with pytest.raises(ValueError, match=f"base_url=.*{problem}"):
        DatasetsServerClient(url)


# --- bounded waits, sizes and transport errors ----------------------------------------------


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("timeout", 0),
        ("timeout", -1),
        ("timeout", 301),
        ("timeout", float("nan")),
        ("timeout", "5"),
        ("retries", -1),
        ("retries", 11),
        ("retries", 1.5),
        ("retries", True),
        ("backoff", -0.1),
        ("backoff", 61),
        ("max_pages", 0),
        ("deadline", float("inf")),
    ],
)
def test_an_out_of_range_setting_is_a_value_error_naming_it(setting, value):
    with pytest.raises(ValueError, match=f"{setting}=.* is out of range: {setting} must be"):
        DatasetsServerClient("http://127.0.0.1:9", **{setting: value})


def test_a_trickling_server_cannot_hold_the_caller_past_the_request_deadline(server):
    server.script = [("trickle", 0.05)]  # each read arrives well inside the socket timeout
    client = client_for(server, timeout=0.3, request_deadline=0.5)
    started = time.monotonic()
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*no complete answer within 0.5 s"):
        client.rows(REQUEST, 0)
    assert time.monotonic() - started < 2.0


def test_the_whole_download_has_a_deadline(server):
    server.total_rows = 1000
    server.script = [("sleep", 0.15)] * 20
    client = client_for(server, timeout=0.5, deadline=0.4)
    # Cut in the middle of a request, or (on a loaded machine) found spent before the next one.
    spent = "(what was left of the download's|the download took longer than its) 0.4 s deadline"
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*{spent}"):
        list(client.pages(REQUEST))
    assert len(server.requests) <= 4


def test_the_number_of_pages_is_capped(server):
    server.total_rows = 10**9  # a server that claims an endless split
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*after 3 pages.*raise max_pages"):
        list(client_for(server, max_pages=3).pages(REQUEST))
    assert len(server.requests) == 3


def test_a_response_inflating_past_the_cap_is_refused_without_a_retry(server):
    bomb = b'{"features": [], "rows": [], "pad": "' + b"0" * 4_000_000 + b'"}'
    server.script = [("gzip", bomb)]
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*larger than 1048576 bytes"):
        client_for(server, max_bytes=2**20).rows(REQUEST, 0)
    assert len(server.requests) == 1


@pytest.mark.parametrize("step", ["cut", "bad-chunk", "not-gzip"])
def test_a_body_broken_after_the_headers_is_retried(server, step):
    server.script = [(step,), ("page",)]
    assert len(client_for(server).rows(REQUEST, 0)["rows"]) == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize("step", ["cut", "bad-chunk", "not-gzip", "drop"])
def test_a_body_broken_every_time_ends_as_the_service_error_within_the_bound(server, step):
    server.script = [(step,)] * 3
    expected = "unreachable after 3 attempts" if step == "drop" else "broke off after the headers on each of 3 attempts"
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*{expected}.*{BASE_URL_ENV}"):
        client_for(server).rows(REQUEST, 0)
    assert len(server.requests) == 3


def test_a_redirect_loop_ends_as_the_service_error(server):
    server.script = [("redirect",)] * 20
    with pytest.raises(DatasetsServerError, match=f"{SERVICE}.*redirect loop.*{BASE_URL_ENV}"):
        client_for(server).rows(REQUEST, 0)
    assert len(server.requests) == 6  # the request and five redirects, then the error


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (
            json.dumps({"features": [], "rows": [{"row_idx": "0", "row": {}}], "num_rows_total": 1}).encode(),
            r"field 'rows\[0\].row_idx': is \"0\"; it must be a non-negative integer",
        ),
        (
            json.dumps({"features": [], "rows": [{"row_idx": True, "row": {}}], "num_rows_total": 1}).encode(),
            r"field 'rows\[0\].row_idx': is true; it must be a non-negative integer",
        ),
        (json.dumps({"features": [], "rows": [], "num_rows_total": -1}).encode(), "negative"),
    ],
)
def test_a_hostile_page_is_a_clear_error_naming_the_page(server, body, fragment):
    server.script = [("status", 200, body)]
    with pytest.raises(DatasetsServerError, match=f"offset 0.*{fragment}"):
        client_for(server).rows(REQUEST, 0)


# --- snapshot loaders ----------------------------------------------------------------------


def test_a_snapshot_that_is_not_utf8_or_nested_too_deeply_names_the_file(tmp_path):
    path = tmp_path / "snap.json"
    path.write_bytes(b'{"provenance": {"note": "caf\xe9"}}')
    with pytest.raises(SnapshotError, match="snap.json: line 1: not UTF-8 text.*make record-fcc"):
        read_snapshot(path)
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(SnapshotError, match="snap.json: nested too deeply to read"):
        read_snapshot(path)


def test_a_snapshot_serving_a_row_twice_is_refused_by_row_idx(tmp_path):
    pages = [DatasetsServer(total_rows=4).page(0, 2), DatasetsServer(total_rows=4).page(1, 2)]
    path = write_snapshot(tmp_path / "snap.json", REQUEST, pages, {})
    with pytest.raises(
        SnapshotError,
        match=r"snap.json: field 'pages\[1\].rows\[0\].row_idx': serves row 1 again \(first in pages\[0\]\)",
    ):
        read_snapshot(path)


def test_a_snapshot_with_no_page_or_a_bad_row_idx_says_so(tmp_path):
    path = write_snapshot(tmp_path / "snap.json", REQUEST, [], {})
    with pytest.raises(
        SnapshotError, match=r"snap.json: field 'pages': is \[\]; it must list at least one page of rows"
    ):
        read_snapshot(path)
    page = DatasetsServer(total_rows=1).page(0, 1)
    page["rows"][0]["row_idx"] = 0.5
    path = write_snapshot(tmp_path / "snap.json", REQUEST, [page], {})
    with pytest.raises(
        SnapshotError, match=r"field 'pages\[0\].rows\[0\].row_idx': is 0.5; it must be a non-negative integer"
    ):
        read_snapshot(path)
