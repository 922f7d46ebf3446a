"""One back-off shared by every case in flight, so a throttled provider slows the whole run down.

Each case retrying on its own would keep the provider's rate full of retries: eight cases in
flight that each sleep and try again hit the limit eight times over. Here a throttled call
pauses every call of the run until the pause ends: the provider's `Retry-After` when it sends
one, else a delay that doubles with each throttle in a row (from `FIRST_DELAY`, at most
`MAX_DELAY`). It is the only layer of retries: the provider's own client sends each call once
(`fieldeval.exchanges.client_retries`), so every throttle the provider sends is seen, paced and
counted here.

Every wait is bounded, twice over. A call is retried at most `MAX_RETRIES` times, after which its
case fails with `ThrottledError` (which Strands does not retry again) and the run goes on. And the
run gives up once the provider has been throttling for `give_up_after` seconds (counted from the
first throttle since a call last succeeded; `GIVE_UP_AFTER` unless the command was given
`--give-up-after`) with no call succeeding: every call waiting, and every
call still to be sent, ends with `GaveUpError`, so a provider that never lets up stops the run in
about that long whatever the number of cases. A pause is slept in steps of `STEP`, so a run that
is stopped (Ctrl-C) or gives up ends its pauses at once instead of sleeping them out.

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

from fieldeval.errors import EvalError

FIRST_DELAY = 1.0  # seconds, the first pause when the provider does not say how long
MAX_DELAY = 60.0  # seconds, the longest single pause (a longer Retry-After is cut to this)
MAX_RETRIES = 8  # retries of one call before its case fails
GIVE_UP_AFTER = 300.0  # seconds of throttling with no successful call before the run gives up
MAX_GIVE_UP_AFTER = 86400.0  # the longest `--give-up-after` accepted: a day
STEP = 0.1  # seconds: the longest stretch a pause sleeps before it looks whether the run stopped


class ThrottledError(EvalError, RuntimeError):
    """A call was still throttled after `MAX_RETRIES` retries; its case fails, the run goes on."""


class GaveUpError(ThrottledError):
    """The run gave up: throttled for `give_up_after` seconds with no call succeeding."""


class RunStopped(EvalError, RuntimeError):
    """The run was stopped (Ctrl-C) while this call waited out a pause; the call was not sent."""


def give_up_problem(seconds: float) -> str | None:
    """What is wrong with a `--give-up-after` value (record's and live score's), or None.

    Here, with the bound it checks, so that both flows read the one rule from the back-off they configure.
    """
    if not 0 < seconds <= MAX_GIVE_UP_AFTER:  # NaN fails this too
        return (
            f"--give-up-after {seconds:g}: give the seconds a throttled run may go without a successful call, "
            f"above 0 and at most {MAX_GIVE_UP_AFTER:g} (a day), such as {GIVE_UP_AFTER:g}."
        )
    return None


class SharedBackoff:
    """The pause every call of a run waits out before it is sent; thread-safe (each case runs in its own thread).

    Args:
        give_up_after: Seconds of throttling with no successful call (from the first throttle since
            a call last succeeded) after which the run gives up.
        provider: The provider's Strands class (`strands.models.openai.OpenAIModel`), named when
            the run gives up.
        stop: Set when the run stops (Ctrl-C); the back-off sets it too when it gives up, so
            workers start no further case. A fresh event when not given.

    Attributes:
        throttles: How many throttled answers the run met.
        paused: The seconds of pauses the run was asked to take, added up.
    """

    def __init__(
        self,
        *,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
        max_retries: int = MAX_RETRIES,
        give_up_after: float = GIVE_UP_AFTER,
        provider: str = "the provider",
        stop: threading.Event | None = None,
    ):
        self.first_delay, self.max_delay, self.max_retries = first_delay, max_delay, max_retries
        self.give_up_after, self.provider = give_up_after, provider
        self.stopped = stop if stop is not None else threading.Event()
        self.throttles = 0
        self.paused = 0.0
        self._lock = threading.Lock()
        self._resume_at = 0.0  # time.monotonic() before which no call is sent
        self._streak = 0  # throttles in a row, each after the last pause began
        self._last_throttle = float("-inf")
        self._throttled_since: float | None = None  # the first throttle since a call last succeeded
        self._gave_up = False

    async def wait(self) -> float:
        """Sleep until the run's pause is over; returns the time the call may be sent (monotonic).

        Raises:
            GaveUpError: The run gave up (now, or earlier): the call is not sent.
            RunStopped: The run was stopped: the call is not sent.
        """
        while True:
            self.check()
            with self._lock:
                delay = self._resume_at - time.monotonic()
            if delay <= 0:
                return time.monotonic()
            await asyncio.sleep(min(delay, STEP))

    def check(self) -> None:
        """Raise `GaveUpError` once the run has given up, `RunStopped` once it was stopped; else nothing."""
        if self.given_up():
            raise GaveUpError(self.gave_up_reason())
        if self.stopped.is_set():
            raise RunStopped("the run was stopped before this call was sent")

    def given_up(self) -> bool:
        """Whether the run gave up: throttled for `give_up_after` seconds with no call succeeding (latched)."""
        with self._lock:
            now = time.monotonic()
            if not self._gave_up and self._throttled_since is not None:
                self._gave_up = now - self._throttled_since >= self.give_up_after
                if self._gave_up:  # the pause still to come is not taken
                    self.paused -= max(0.0, self._resume_at - now)
                    self._resume_at = now
                    self.stopped.set()
            return self._gave_up

    def gave_up_reason(self) -> str:
        """What the run gave up on, naming the provider's class and what it did."""
        return (
            f"no model call succeeded for {self.give_up_after:g} s while {self.provider} throttled "
            f"({self.throttles} throttled answer(s) in all)"
        )

    def throttled(self, sent_at: float, retry_after: float | None) -> None:
        """A call sent at `sent_at` was throttled: pause the run for the provider's time or the next delay.

        Calls sent before the last throttle was seen met the same limit; they extend the pause but
        do not double it again, so eight calls throttled at once pause the run once.
        """
        with self._lock:
            self.throttles += 1
            if self._throttled_since is None:
                self._throttled_since = time.monotonic()
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
        """A call went through: the next throttle starts the doubling again, and the give-up clock anew."""
        with self._lock:
            self._streak = 0
            self._throttled_since = None

    def stop(self) -> None:
        """Stop the run: every pause ends now, and no further call is sent."""
        self.stopped.set()

    def summary(self) -> str | None:
        """The line a run prints when the provider throttled it, or None when it never did."""
        if not self.throttles:
            return None
        with self._lock:  # a pause still ahead when the run ends (its last cases failed) was never taken
            taken = self.paused - max(0.0, self._resume_at - time.monotonic())
        then = "before it gave up" if self._gave_up else "and sent them again"
        return f"The provider throttled {self.throttles} request(s); the run paused {taken:.1f} s in all {then}."


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
