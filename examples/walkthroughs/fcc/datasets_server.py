"""A small client for the Hugging Face datasets server's `/rows` endpoint, with a snapshot.

Live, it fetches one page per request and pages by `num_rows_total`. Every wait is bounded:

- each socket connect and read has `timeout`; each `/rows` call has a deadline for its whole
  answer, retries included (`request_deadline`), so a server that trickles bytes cannot hold the
  caller; and a whole download (`pages`) has `deadline`;
- 429, 5xx and every transport error (refused or dropped connection, a connection dropped after
  the headers, a broken chunked body, an undecodable body, a redirect loop) are retried by
  urllib3's `Retry` mounted on the session, with exponential backoff, at most `retries` times;
- a download is capped at `max_pages` pages and each response at `max_bytes` decompressed bytes.

Whatever goes wrong ends as `DatasetsServerError`, whose message names the service and the fix;
an out-of-range setting or a malformed base URL is a `ValueError` naming the setting. The pages
fetched can be written to a snapshot file; in replay mode the same pages are read back from it,
and nothing here opens a socket. A page is read as the pydantic model `Page` and a snapshot as
`SnapshotFile`, refused through `fieldeval.formats` with the field named and what it must be.

Secrets: the optional token comes from `HF_TOKEN` (or `token=`) and is sent as a header only to
Hugging Face hosts (`huggingface.co` and its subdomains) over https. Set `HF_TOKEN_ANY_HOST=1`
to send it to another https host (a mirror); it is never sent over plain http. A snapshot stores
the request parameters and the responses, never a header; every URL stored or printed has its
user info (`user:token@`) and query string removed.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit, urlunsplit

import requests
from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, StrictInt, StrictStr, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import MaxRetryError, ProtocolError
from urllib3.util.retry import Retry

from fieldeval.errors import EvalError
from fieldeval.files import write_text_atomically
from fieldeval.formats import json as strict_json
from fieldeval.formats.errors import FormatError, file_error, validation_problem

SERVICE = "Hugging Face datasets server"
DEFAULT_BASE_URL = "https://datasets-server.huggingface.co"
BASE_URL_ENV = "HF_DATASETS_SERVER_URL"
TOKEN_ENV = "HF_TOKEN"
TOKEN_ANY_HOST_ENV = "HF_TOKEN_ANY_HOST"
HF_DOMAIN = "huggingface.co"
MAX_PAGE_LENGTH = 100  # the server refuses `length` above 100
MAX_REDIRECTS = 5
RECORD_COMMAND = "make record-fcc"

# The accepted range of each setting, inclusive unless the lower bound is marked open.
LIMITS: dict[str, tuple[float, float, bool]] = {  # name: (low, high, low is open)
    "timeout": (0.0, 300.0, True),
    "retries": (0, 10, False),
    "backoff": (0.0, 60.0, False),
    "max_backoff": (0.0, 300.0, False),
    "request_deadline": (0.0, 3600.0, True),
    "deadline": (0.0, 3600.0, True),
    "max_pages": (1, 10_000, False),
    "max_bytes": (1024, 2**30, False),
}


def is_retried(status: int) -> bool:
    """429 (rate limited) and every 5xx are worth another attempt; other errors will not change."""
    return status == 429 or status >= 500


class DatasetsServerError(EvalError, RuntimeError):
    """The service answered with an error payload, a malformed page, too much, or not at all."""


class SnapshotError(FormatError):
    """A snapshot file is missing or malformed; the message names the file and the fix."""


def check_setting(name: str, value: Any) -> Any:
    """Return `value` if it is a number within `LIMITS[name]`, else raise a ValueError naming it."""
    low, high, open_low = LIMITS[name]
    integral = isinstance(low, int)
    kinds = (int,) if integral else (int, float)
    ok = isinstance(value, kinds) and not isinstance(value, bool)
    ok = ok and value == value and (low < value if open_low else low <= value) and value <= high
    if not ok:
        bound = f"({low}, {high}]" if open_low else f"[{low}, {high}]"
        kind = "an integer" if integral else "a number of seconds"
        raise ValueError(f"{name}={value!r} is out of range: {name} must be {kind} in {bound}")
    return value


# --- URLs and the token -------------------------------------------------------------------


def redact_url(url: str) -> str:
    """`url` without user info, query string or fragment: what may be stored or printed."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def resolve_base_url(base_url: str | None = None) -> str:
    """The argument, else `HF_DATASETS_SERVER_URL`, else the public server; no trailing slash."""
    chosen = base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    return chosen.strip().rstrip("/")


def check_base_url(url: str, setting: str = BASE_URL_ENV) -> None:
    """Refuse a base URL that is not http(s) with a host, or that carries a query or fragment.

    Raises:
        ValueError: Naming `setting` and the URL with any credentials removed.
    """
    problem = None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError as exc:
        problem = f"it does not parse ({exc})"
    else:
        if parts.scheme not in ("http", "https"):
            problem = "its scheme must be http or https"
        elif not parts.hostname:
            problem = "it names no host"
        elif any(c.isspace() for c in url):
            problem = "it contains white space"
        elif parts.query or parts.fragment:
            problem = "it must not carry a query string or fragment"
        elif (parts.username or parts.password) and parts.scheme != "https":
            problem = "credentials in it would be sent in clear over http; use https"
    if problem:
        raise ValueError(
            f"{setting}={redact_url(url)!r} is not a usable base URL: {problem}; set it like {DEFAULT_BASE_URL}"
        )


def is_huggingface_host(host: str | None) -> bool:
    host = (host or "").lower().rstrip(".")
    return host == HF_DOMAIN or host.endswith("." + HF_DOMAIN)


def token_allowed(url: str, any_host: bool = False) -> bool:
    """Whether a token may go to `url`: https only, and a Hugging Face host unless `any_host`."""
    parts = urlsplit(url)
    return parts.scheme == "https" and (any_host or is_huggingface_host(parts.hostname))


def _opted_in() -> bool:
    return os.environ.get(TOKEN_ANY_HOST_ENV, "").strip().lower() in ("1", "true", "yes")


# --- requests ------------------------------------------------------------------------------


@pydantic_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class RowsRequest:
    """Which split to page through, and how many rows per page (the server serves at most 100)."""

    dataset: StrictStr
    config: StrictStr
    split: StrictStr
    page_length: Annotated[StrictInt, Field(ge=1, le=MAX_PAGE_LENGTH)] = MAX_PAGE_LENGTH

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "config": self.config,
            "split": self.split,
            "page_length": self.page_length,
        }


class _Shape(BaseModel):
    """A JSON object of a page: exact types (no `"3"` for 3); the server may add fields."""

    model_config = ConfigDict(strict=True, extra="allow")


class _Row(_Shape):
    row_idx: NonNegativeInt
    row: dict[str, Any]


class Page(_Shape):
    """One `/rows` response body."""

    features: list[Any]
    rows: list[_Row]
    num_rows_total: NonNegativeInt


class SnapshotFile(BaseModel):
    """A snapshot: the request, each page as the server returned it, and where it came from."""

    model_config = ConfigDict(extra="forbid")  # not strict: `request` is read from a dict; its fields are

    provenance: dict[str, Any]
    request: RowsRequest
    pages: Annotated[list[Page], Field(min_length=1)]


# What each field must be, keyed by the end of its path (see `fieldeval.formats.errors.validation_problem`).
MUSTS = {
    "provenance": "must be an object saying where the snapshot came from",
    "request": "must be an object with dataset, config, split and page_length",
    "dataset": "must be the dataset's name",
    "config": "must be the dataset's config name",
    "split": "must be the split's name",
    "page_length": f"must be an integer between 1 and {MAX_PAGE_LENGTH}, the rows per page",
    "pages": "must list at least one page of rows",
    "pages[]": "must be an object with features, rows and num_rows_total",
    "features": "must be a list, the dataset's features",
    "rows": "must be a list of rows",
    "rows[]": "must be an object with a 'row' object and its 'row_idx'",
    "row": "must be an object, the row's cells",
    "row_idx": "must be a non-negative integer, the row's index in the split",
    "num_rows_total": "must be a non-negative integer, the rows in the split",
}


def check_page(page: Any, where: str) -> dict[str, Any]:
    """Validate one `/rows` response body (as `Page`) and return it as it came.

    Raises:
        DatasetsServerError: If it is an error payload or not a `Page`; `where` names the source.
    """
    if not isinstance(page, dict):
        raise DatasetsServerError(f"{where}: malformed page, expected a JSON object")
    if "error" in page:
        raise DatasetsServerError(f"{where}: {SERVICE} returned an error: {str(page['error'])[:500]}")
    try:
        Page.model_validate(page)
    except ValidationError as exc:
        field, what = validation_problem(exc, musts=MUSTS)
        raise DatasetsServerError(f"{where}: malformed page, field '{field}': {what}") from None
    return page


class _Abandoned(Exception):
    """The caller's deadline passed: the worker stops instead of trying again."""


class _TooLarge(Exception):
    """A response passed `max_bytes`; not worth another attempt."""


# What ends as the service's error; anything else is a bug and is raised as itself.
_BROKEN_BODY = (requests.RequestException, Urllib3Error, http.client.HTTPException, OSError)
_TRANSPORT_ERRORS = (*_BROKEN_BODY, _Abandoned, _TooLarge)


class _RetryPolicy(Retry):
    """urllib3's `Retry` with the project's backoff and a stop switch.

    The first retry waits `backoff`, each next one twice as long, capped at `backoff_max`; a
    `Retry-After` longer than that is honoured up to `retry_after_max`. The wait ends early,
    and no further attempt is made, once the caller has given up (`stop` is set).
    """

    stop: threading.Event | None = None
    latest: list[Retry] | None = None  # shared by every copy: the newest, whose history counts attempts

    def new(self, **kw: Any) -> _RetryPolicy:
        retry = super().new(**kw)
        retry.stop, retry.latest = self.stop, self.latest
        if self.latest is not None:
            self.latest[:] = [retry]
        return retry

    def get_backoff_time(self) -> float:
        errors = len(list(takewhile(lambda entry: entry.redirect_location is None, reversed(self.history))))
        return 0.0 if errors == 0 else float(min(self.backoff_max, self.backoff_factor * 2 ** (errors - 1)))

    def sleep(self, response: Any = None) -> None:
        delay = self.get_backoff_time()
        if response is not None and self.respect_retry_after_header:
            delay = max(delay, self.get_retry_after(response) or 0.0)
        pause(delay, self.stop)


def pause(seconds: float, stop: threading.Event | None) -> None:
    """Wait `seconds` between attempts; raise at once if the caller has given up."""
    if stop is None:
        time.sleep(seconds)
        return
    if stop.wait(seconds) or stop.is_set():
        raise _Abandoned()


@dataclass
class _Answer:
    """What one worker got: the final response's status, reason and body, or the error."""

    status: int = 0
    reason: str = ""
    body: bytes = b""
    attempts: int = 0
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class DatasetsServerClient:
    """Fetches `/rows` pages over HTTP with bounded waits, sizes and retries.

    Args:
        base_url: Server root; default from `HF_DATASETS_SERVER_URL`, else the public one.
        timeout: Seconds allowed to connect, and for each read of the socket, (0, 300].
        retries: Extra attempts after a 429, 5xx or transport error, 0 to 10.
        backoff: First wait in seconds, [0, 60]; it doubles per attempt, capped at `max_backoff`.
        request_deadline: Seconds one `/rows` call may take in all, retries included; by default
            the longest the retry policy can need: twice `timeout` per attempt plus every wait.
        deadline: Seconds a whole download (`pages`) may take, (0, 3600].
        max_pages: Pages a download may request before it stops with an error.
        max_bytes: Decompressed bytes one response may hold.
        token: Bearer token; default from `HF_TOKEN`. Sent as a header to Hugging Face hosts
            over https only (any https host with `HF_TOKEN_ANY_HOST=1`), never stored.

    Raises:
        ValueError: A setting out of range, or a base URL that is not http(s) with a host.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        timeout: float = 20.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        request_deadline: float | None = None,
        deadline: float = 900.0,
        max_pages: int = 200,
        max_bytes: int = 64 * 2**20,
        token: str | None = None,
    ) -> None:
        chosen = resolve_base_url(base_url)
        check_base_url(chosen, "base_url" if base_url else BASE_URL_ENV)
        self.timeout = check_setting("timeout", timeout)
        self.retries = check_setting("retries", retries)
        self.backoff = check_setting("backoff", backoff)
        self.max_backoff = check_setting("max_backoff", max_backoff)
        if request_deadline is None:
            waits = sum(min(backoff * 2**attempt, max_backoff) for attempt in range(retries))
            # each attempt may use `timeout` to connect and `timeout` for a read
            request_deadline = min((retries + 1) * 2 * timeout + waits, LIMITS["request_deadline"][1])
        self.request_deadline = check_setting("request_deadline", request_deadline)
        self.deadline = check_setting("deadline", deadline)
        self.max_pages = check_setting("max_pages", max_pages)
        self.max_bytes = check_setting("max_bytes", max_bytes)

        parts = urlsplit(chosen)
        self.base_url = redact_url(chosen)  # what provenance stores and messages print
        self._auth = (unquote(parts.username or ""), unquote(parts.password or "")) if parts.username else None
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        self.token_withheld = bool(token) and not token_allowed(chosen, _opted_in())
        self._headers = {"Authorization": f"Bearer {token}"} if token and not self.token_withheld else {}
        self._download_ends: float | None = None

    def _policy(self, stop: threading.Event) -> _RetryPolicy:
        policy = _RetryPolicy(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            other=self.retries,
            redirect=MAX_REDIRECTS,
            allowed_methods={"GET"},
            status_forcelist=[429, *range(500, 600)],
            backoff_factor=self.backoff,
            backoff_max=self.max_backoff,
            retry_after_max=int(self.max_backoff),
            respect_retry_after_header=True,
            raise_on_status=False,
        )
        policy.stop, policy.latest = stop, [policy]
        return policy

    def _session(self, policy: Retry) -> requests.Session:
        session = requests.Session()
        adapter = HTTPAdapter(max_retries=policy)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        session.max_redirects = MAX_REDIRECTS
        session.headers.update(self._headers)
        if self._auth:
            session.auth = self._auth
        return session

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
        budget = self.request_deadline
        if self._download_ends is not None:
            budget = min(budget, self._download_ends - time.monotonic())
            if budget <= 0:
                raise DatasetsServerError(
                    f"{where}: the download took longer than its {self.deadline:g} s deadline; "
                    f"try again later or raise the deadline"
                )
        answer = _Answer()
        stop = threading.Event()
        worker = threading.Thread(target=self._fetch, args=(params, stop, answer), daemon=True)
        worker.start()
        if not answer.done.wait(budget):
            stop.set()
            which = "one request's deadline, retries included"
            if budget < self.request_deadline:
                which = f"what was left of the download's {self.deadline:g} s deadline"
            raise DatasetsServerError(
                f"{where}: no complete answer within {budget:.3g} s ({which}); "
                f"the service is too slow or stalled; try again later"
            )
        if isinstance(answer.error, _TRANSPORT_ERRORS):
            raise self._transport_error(answer, where) from answer.error
        if answer.error is not None:  # a bug, not the service: let it show as itself
            raise answer.error
        attempts = f"attempt {answer.attempts} of {self.retries + 1}"
        return self._read(answer, f"{where}, {attempts}")

    def _fetch(self, params: dict[str, Any], stop: threading.Event, answer: _Answer) -> None:
        """Run in a worker thread: the request with its retries, the body read under the cap."""
        policy: Retry = self._policy(stop)
        url = f"{self.base_url}/rows"  # credentials in the base URL travel as `auth`, not in the URL
        try:
            while True:
                session = self._session(policy)
                try:
                    with session.get(url, params=params, timeout=self.timeout, stream=True) as response:
                        policy = response.raw.retries or policy
                        try:
                            body = self._body(response, stop)
                        except _BROKEN_BODY as exc:
                            # Broke after the headers: one more attempt from the same budget.
                            policy = policy.increment(method="GET", url=url, error=ProtocolError(type(exc).__name__))
                            policy.sleep()
                            continue
                        answer.status, answer.reason, answer.body = response.status_code, response.reason, body
                        answer.attempts = len(policy.history) + 1
                        return
                finally:
                    session.close()
        except BaseException as exc:  # handed to the caller, which names the service
            answer.error = exc
            latest = getattr(policy, "latest", None) or [policy]
            answer.attempts = max(1, len(latest[0].history))  # one failed attempt per entry
        finally:
            answer.done.set()

    def _body(self, response: requests.Response, stop: threading.Event) -> bytes:
        """The decompressed body, read in chunks and refused past `max_bytes`."""
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_content(chunk_size=16384):
            if stop.is_set():
                raise _Abandoned()
            size += len(chunk)
            if size > self.max_bytes:
                raise _TooLarge()
            chunks.append(chunk)
        return b"".join(chunks)

    def _transport_error(self, answer: _Answer, where: str) -> DatasetsServerError:
        error = answer.error
        if isinstance(error, _TooLarge):
            return DatasetsServerError(
                f"{where}: the response is larger than {self.max_bytes} bytes (decompressed), "
                f"more than a page of rows should be; check {BASE_URL_ENV} or raise max_bytes"
            )
        if isinstance(error, requests.TooManyRedirects):
            return DatasetsServerError(
                f"{where}: redirected more than {MAX_REDIRECTS} times (a redirect loop); "
                f"set {BASE_URL_ENV} to the server's final address"
            )
        if isinstance(error, MaxRetryError):  # raised by `_fetch` itself: bodies broken after the headers
            return DatasetsServerError(
                f"{where}: the answer broke off after the headers on each of {answer.attempts} attempts "
                f"({error.reason}); the service is failing; try again later or check {BASE_URL_ENV}"
            )
        cause = error
        for _ in range(5):  # requests wraps urllib3's MaxRetryError, which wraps the last error
            inner = getattr(cause, "reason", None) if isinstance(cause, MaxRetryError) else None
            inner = inner or (cause.args[0] if cause is not None and cause.args else None)
            if not isinstance(inner, BaseException):
                break
            cause = inner
        kind = type(error).__name__ if cause is error else f"{type(error).__name__}: {type(cause).__name__}"
        return DatasetsServerError(
            f"{where}: unreachable after {answer.attempts} attempts ({kind}); check the network or set {BASE_URL_ENV}"
        )

    def pages(self, request: RowsRequest) -> Iterator[dict[str, Any]]:
        """Yield pages in dataset order until `num_rows_total` rows were served.

        Lazy, so a caller that has what it needs stops and no further page is requested. The
        whole download must end within `deadline` seconds and `max_pages` pages.
        """
        self._download_ends = time.monotonic() + self.deadline
        try:
            offset = 0
            for _ in range(self.max_pages):
                page = self.rows(request, offset)
                yield page
                offset += request.page_length
                if offset >= page["num_rows_total"] or not page["rows"]:
                    return
            raise DatasetsServerError(
                f"{SERVICE} ({self.base_url}/rows): still more rows after {self.max_pages} pages, the cap of one "
                f"download (num_rows_total {page['num_rows_total']}); raise max_pages or choose a smaller split"
            )
        finally:
            self._download_ends = None

    def _read(self, answer: _Answer, where: str) -> dict[str, Any]:
        try:
            body = json.loads(answer.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            body = None
        except RecursionError:
            raise DatasetsServerError(f"{where}: malformed page, the JSON body is nested too deeply") from None
        if answer.status >= 400:
            detail = body.get("error") if isinstance(body, dict) else None
            raise DatasetsServerError(
                f"{where}: {SERVICE} answered HTTP {answer.status}: "
                f"{str(detail or answer.reason or 'no error message')[:500]}; {self._fix_for(answer.status)}"
            )
        if answer.status >= 300:
            raise DatasetsServerError(
                f"{where}: {SERVICE} answered HTTP {answer.status} (a redirect loop or too many redirects); "
                f"set {BASE_URL_ENV} to the server's final address"
            )
        if body is None:
            raise DatasetsServerError(f"{where}: malformed page, the body is not JSON")
        return check_page(body, where)

    def _fix_for(self, status: int) -> str:
        """What a user can do about an HTTP error from the server."""
        if status in (401, 403):
            if self.token_withheld:
                return (
                    f"{TOKEN_ENV} is set but was not sent to {self.base_url}, which is not a Hugging Face "
                    f"host over https; set {TOKEN_ANY_HOST_ENV}=1 to send it to this https host"
                )
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
    `provenance` with every URL-valued `source` redacted; no header, so no token.
    """
    provenance = {key: _redact_urls(value) if isinstance(value, str) else value for key, value in provenance.items()}
    document = {"provenance": provenance, "request": request.as_dict(), "pages": pages}
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    return write_text_atomically(path, text)


def _redact_urls(text: str) -> str:
    """`text` with every http(s) URL in it redacted (user info and query removed)."""
    return " ".join(redact_url(word) if word.startswith(("http://", "https://")) else word for word in text.split(" "))


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
        SnapshotError: If the file is missing (the message names `record_command`), unreadable,
            not UTF-8, not JSON or nested too deeply, is not a `SnapshotFile` (the message names
            the field), or serves one `row_idx` twice.
    """
    path = Path(path)
    fix = f"re-record with `{record_command}`"
    missing = (
        f"no snapshot of the {SERVICE} here; replay mode never downloads. Record one with `{record_command}`",
        "needs network and AWS_PROFILE",
    )
    document = strict_json.read_document(path, missing, fix, error=SnapshotError)
    if not isinstance(document, dict):
        raise SnapshotError(
            file_error(
                path, f"is a JSON {type(document).__name__}, not an object with provenance, request and pages", fix
            )
        )
    try:
        snapshot = SnapshotFile.model_validate(document)
    except ValidationError as exc:
        field, what = validation_problem(exc, musts=MUSTS)
        raise SnapshotError(file_error(path, what, fix, field=field)) from None
    seen: dict[int, int] = {}
    for index, page in enumerate(snapshot.pages):
        for number, entry in enumerate(page.rows):
            if entry.row_idx in seen:
                raise SnapshotError(
                    file_error(
                        path,
                        f"serves row {entry.row_idx} again (first in pages[{seen[entry.row_idx]}]); "
                        "a snapshot holds each row once",
                        fix,
                        field=f"pages[{index}].rows[{number}].row_idx",
                    )
                )
            seen[entry.row_idx] = index
    return Snapshot(path, document["provenance"], snapshot.request, document["pages"])


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
