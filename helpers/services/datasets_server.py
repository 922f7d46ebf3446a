"""A small client for the Hugging Face datasets server's `/rows` endpoint, with a snapshot.

Live, it fetches one page per request and pages by `num_rows_total`; every request has a
timeout, and 429, 5xx, timeouts and dropped connections are retried with exponential
backoff, so an outage ends in a bounded time with a message naming the service instead of a
hang. The pages it fetched can be written to a snapshot file. In replay mode the same pages
are read back from that snapshot, and nothing here opens a socket.

The optional token comes from `HF_TOKEN` and is sent as a header only: a snapshot stores the
request parameters and the responses, never the headers.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from helpers.files import write_text_atomically

SERVICE = "Hugging Face datasets server"
DEFAULT_BASE_URL = "https://datasets-server.huggingface.co"
BASE_URL_ENV = "HF_DATASETS_SERVER_URL"
TOKEN_ENV = "HF_TOKEN"
MAX_PAGE_LENGTH = 100  # the server refuses `length` above 100
RECORD_COMMAND = "make record-fcc"


def is_retried(status: int) -> bool:
    """429 (rate limited) and every 5xx are worth another attempt; other errors will not change."""
    return status == 429 or status >= 500


class DatasetsServerError(RuntimeError):
    """The service answered with an error payload, a malformed page, or not at all."""


class SnapshotError(ValueError):
    """A snapshot file is missing or malformed; the message names the file and the fix."""


@dataclass(frozen=True)
class RowsRequest:
    """Which split to page through, and how many rows per page."""

    dataset: str
    config: str
    split: str
    page_length: int = MAX_PAGE_LENGTH

    def __post_init__(self) -> None:
        if not 1 <= self.page_length <= MAX_PAGE_LENGTH:
            raise ValueError(f"page_length must be between 1 and {MAX_PAGE_LENGTH}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "config": self.config,
            "split": self.split,
            "page_length": self.page_length,
        }


def resolve_base_url(base_url: str | None = None) -> str:
    """The argument, else `HF_DATASETS_SERVER_URL`, else the public server; no trailing slash."""
    chosen = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return chosen.rstrip("/")


def check_page(page: Any, where: str) -> dict[str, Any]:
    """Validate one `/rows` response body and return it.

    Raises:
        DatasetsServerError: If it is an error payload or lacks `features`, `rows` (each with
            a `row` object) or an integer `num_rows_total`. `where` names the source.
    """
    if not isinstance(page, dict):
        raise DatasetsServerError(f"{where}: malformed page, expected a JSON object")
    if "error" in page:
        raise DatasetsServerError(f"{where}: {SERVICE} returned an error: {page['error']}")
    for key, kind in (("features", list), ("rows", list), ("num_rows_total", int)):
        if not isinstance(page.get(key), kind) or isinstance(page.get(key), bool):
            raise DatasetsServerError(f"{where}: malformed page, field {key!r} missing or not a {kind.__name__}")
    for index, entry in enumerate(page["rows"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("row"), dict):
            raise DatasetsServerError(f"{where}: malformed page, rows[{index}] has no 'row' object")
    return page


class DatasetsServerClient:
    """Fetches `/rows` pages over HTTP with timeouts and bounded retries.

    Args:
        base_url: Server root; default from `HF_DATASETS_SERVER_URL`, else the public one.
        timeout: Seconds allowed to connect and to wait for each response.
        retries: Extra attempts after a 429, 5xx, timeout or dropped connection.
        backoff: First wait in seconds; it doubles per attempt, capped at `max_backoff`.
        token: Bearer token; default from `HF_TOKEN`. Sent as a header, never stored.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = 20.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        token: str | None = None,
    ) -> None:
        self.base_url = resolve_base_url(base_url)
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._session = requests.Session()
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"

    def rows(self, request: RowsRequest, offset: int) -> dict[str, Any]:
        """One `/rows` call (with retries) for the page starting at `offset`, validated."""
        params = {
            "dataset": request.dataset,
            "config": request.config,
            "split": request.split,
            "offset": offset,
            "length": request.page_length,
        }
        url = f"{self.base_url}/rows"
        where = f"{SERVICE} ({url}, offset {offset})"
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._session.get(url, params=params, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                if last:
                    raise DatasetsServerError(
                        f"{where}: unreachable after {attempt + 1} attempts "
                        f"({type(exc).__name__}); check the network or set {BASE_URL_ENV}"
                    ) from exc
                self._wait(attempt, None)
                continue
            if is_retried(response.status_code) and not last:
                self._wait(attempt, response.headers.get("Retry-After"))
                continue
            return self._read(response, f"{where}, attempt {attempt + 1} of {self.retries + 1}")
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt

    def pages(self, request: RowsRequest) -> Iterator[dict[str, Any]]:
        """Yield pages in dataset order until `num_rows_total` rows were served.

        Lazy, so a caller that has what it needs stops and no further page is requested.
        """
        offset = 0
        while True:
            page = self.rows(request, offset)
            yield page
            offset += request.page_length
            if offset >= page["num_rows_total"] or not page["rows"]:
                return

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * 2**attempt
        if retry_after is not None and retry_after.strip().isdigit():
            delay = max(delay, float(retry_after))
        time.sleep(min(delay, self.max_backoff))

    @staticmethod
    def _read(response: requests.Response, where: str) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            detail = body.get("error") if isinstance(body, dict) else None
            raise DatasetsServerError(
                f"{where}: {SERVICE} answered HTTP {response.status_code}: "
                f"{detail or response.reason or 'no error message'}; {_fix_for(response.status_code)}"
            )
        if body is None:
            raise DatasetsServerError(f"{where}: malformed page, the body is not JSON")
        return check_page(body, where)


def _fix_for(status: int) -> str:
    """What a user can do about an HTTP error from the server."""
    if status in (401, 403):
        return f"set {TOKEN_ENV} to a Hugging Face token that can read the dataset"
    if is_retried(status):
        return "the service is busy or failing; try again later"
    return "check the dataset, config and split names"


# --- snapshot ---------------------------------------------------------------------------


def write_snapshot(
    path: Path | str,
    request: RowsRequest,
    pages: list[dict[str, Any]],
    provenance: dict[str, Any],
) -> Path:
    """Write the pages fetched for `request` to `path` atomically (all or nothing).

    The file holds the request parameters, each page exactly as the server returned it, and
    `provenance`; no header, so no token.
    """
    document = {"provenance": provenance, "request": request.as_dict(), "pages": pages}
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    return write_text_atomically(path, text)


@dataclass(frozen=True)
class Snapshot:
    """A snapshot read back: where it came from, what was asked, the pages served."""

    path: Path
    provenance: dict[str, Any]
    request: RowsRequest
    pages: list[dict[str, Any]]


def read_snapshot(path: Path | str, record_command: str = RECORD_COMMAND) -> Snapshot:
    """Read and validate a snapshot, touching only the file system.

    Raises:
        SnapshotError: If the file is missing (the message names `record_command`), is not
            JSON, or lacks `provenance`, `request` or valid `pages`.
    """
    path = Path(path)
    if not path.is_file():
        raise SnapshotError(
            f"{path}: no snapshot of the {SERVICE} here; replay mode never downloads. "
            f"Record one with `{record_command}` (needs network and AWS_PROFILE)"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from exc
    if not isinstance(document, dict):
        raise SnapshotError(f"{path}: expected an object with provenance, request and pages")
    for key, kind in (("provenance", dict), ("request", dict), ("pages", list)):
        if not isinstance(document.get(key), kind):
            raise SnapshotError(
                f"{path}: field {key!r} missing or not a {kind.__name__}; re-record with `{record_command}`"
            )
    try:
        request = RowsRequest(**document["request"])
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"{path}: field 'request' is invalid: {exc}") from exc
    pages = []
    for index, page in enumerate(document["pages"]):
        try:
            pages.append(check_page(page, f"{path}: pages[{index}]"))
        except DatasetsServerError as exc:
            raise SnapshotError(str(exc)) from exc
    return Snapshot(path, document["provenance"], request, pages)


def snapshot_rows(snapshot: Snapshot, record_command: str = RECORD_COMMAND) -> Iterator[dict]:
    """Yield the snapshot's rows in dataset order, as `{"row_idx", "row", ...}` entries.

    Raises:
        SnapshotError: When a caller reads past the stored pages although `num_rows_total`
            says the dataset has more: the snapshot is shorter than what is now asked of it.
    """
    served = 0
    total = 0
    for page in snapshot.pages:
        total = page["num_rows_total"]
        for entry in page["rows"]:
            served += 1
            yield entry
    if served < total:
        raise SnapshotError(
            f"{snapshot.path}: holds {served} of {total} rows and more were needed; re-record with `{record_command}`"
        )


def live_rows(client: DatasetsServerClient, request: RowsRequest, fetched: list[dict[str, Any]]) -> Iterator[dict]:
    """Yield rows page by page from the server, appending each page to `fetched` as it arrives.

    `fetched` is what a snapshot of this run stores: only the pages actually requested.
    """
    for page in client.pages(request):
        fetched.append(page)
        yield from page["rows"]
