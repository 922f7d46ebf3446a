"""One back-off shared by every case in flight, so a throttled provider slows the whole run down.

Each case retrying on its own would keep the provider's rate full of retries: eight cases in
flight that each sleep and try again hit the limit eight times over. Here a throttled call
pauses every call of the run until the pause ends: the provider's `Retry-After` when it sends
one, else a delay that doubles with each throttle in a row (from `FIRST_DELAY`, at most
`MAX_DELAY`). A call is retried at most `MAX_RETRIES` times, so a provider that never lets up ends
the case in bounded time with `ThrottledError`, which Strands does not retry again.

Throttling is recognised in the forms the providers raise it: Strands' `ModelThrottledException`
(Bedrock's `ThrottlingException`, as an HTTP 429 or as the stream's `throttlingException` event,
and OpenAI's rate-limit error), or any error carrying HTTP status 429.
"""

from __future__ import annotations

import asyncio
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any

from helpers.errors import EvalError

FIRST_DELAY = 1.0  # seconds, the first pause when the provider does not say how long
MAX_DELAY = 60.0  # seconds, the longest single pause (a longer Retry-After is cut to this)
MAX_RETRIES = 8  # retries of one call before its case fails


class ThrottledError(EvalError, RuntimeError):
    """A call was still throttled after `MAX_RETRIES` retries; its case fails, the run goes on."""


class SharedBackoff:
    """The pause every call of a run waits out before it is sent; thread-safe (each case runs in its own thread).

    Attributes:
        throttles: How many throttled answers the run met.
        paused: The seconds of pauses the run was asked to take, added up.
    """

    def __init__(
        self, *, first_delay: float = FIRST_DELAY, max_delay: float = MAX_DELAY, max_retries: int = MAX_RETRIES
    ):
        self.first_delay, self.max_delay, self.max_retries = first_delay, max_delay, max_retries
        self.throttles = 0
        self.paused = 0.0
        self._lock = threading.Lock()
        self._resume_at = 0.0  # time.monotonic() before which no call is sent
        self._streak = 0  # throttles in a row, each after the last pause began
        self._last_throttle = float("-inf")

    async def wait(self) -> float:
        """Sleep until the run's pause is over; returns the time the call may be sent (monotonic)."""
        while True:
            with self._lock:
                delay = self._resume_at - time.monotonic()
            if delay <= 0:
                return time.monotonic()
            await asyncio.sleep(delay)

    def throttled(self, sent_at: float, retry_after: float | None) -> None:
        """A call sent at `sent_at` was throttled: pause the run for the provider's time or the next delay.

        Calls sent before the last throttle was seen met the same limit; they extend the pause but
        do not double it again, so eight calls throttled at once pause the run once.
        """
        with self._lock:
            self.throttles += 1
            if sent_at > self._last_throttle:
                self._streak += 1
            self._last_throttle = time.monotonic()
            delay = retry_after if retry_after is not None else self.first_delay * 2 ** (self._streak - 1)
            delay = min(max(delay, 0.0), self.max_delay)
            resume_at = self._last_throttle + delay
            if resume_at > self._resume_at:
                self.paused += resume_at - max(self._resume_at, self._last_throttle)
                self._resume_at = resume_at

    def succeeded(self) -> None:
        """A call went through: the next throttle starts the doubling again."""
        with self._lock:
            self._streak = 0

    def summary(self) -> str | None:
        """The line a run prints when the provider throttled it, or None when it never did."""
        if not self.throttles:
            return None
        return (
            f"The provider throttled {self.throttles} call(s); the run paused {self.paused:.1f} s "
            "in all and sent them again."
        )


def is_throttle(exc: BaseException) -> bool:
    """Whether `exc`, or anything in its cause chain, says the provider is throttling."""
    from strands.types.exceptions import ModelThrottledException

    for seen in _chain(exc):
        if isinstance(seen, ModelThrottledException) or _status(seen) == 429:
            return True
        error = getattr(seen, "response", None)
        if isinstance(error, dict) and error.get("Error", {}).get("Code") in (
            "ThrottlingException",
            "throttlingException",
        ):
            return True
    return False


def retry_after(exc: BaseException) -> float | None:
    """The seconds the provider asked to wait (`Retry-After`, in seconds or as an HTTP date), if it said."""
    for seen in _chain(exc):
        headers = _headers(seen)
        value = headers.get("retry-after") if headers else None
        if value is None:
            continue
        try:
            return float(value)
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None
    return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    else:
        status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _headers(exc: BaseException) -> dict[str, str]:
    """The response headers an error carries, names lowercased: botocore's dict or an httpx response's."""
    response: Any = getattr(exc, "response", None)
    if isinstance(response, dict):
        headers = response.get("ResponseMetadata", {}).get("HTTPHeaders") or {}
    else:
        headers = getattr(response, "headers", None) or {}
    try:
        return {str(key).lower(): str(value) for key, value in headers.items()}
    except AttributeError:
        return {}
