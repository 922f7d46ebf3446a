"""The shared back-off's run-level bound: when it gives up, and what stops a pause.

Each check sleeps past a tiny `give_up_after` rather than timing anything: what is asserted is
which state the back-off is in afterwards, never how long something took.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from fieldeval.exchanges.throttle import GaveUpError, RunStopped, SharedBackoff

SHORT = 0.02  # seconds: the give-up bound in these checks
PROVIDER = "strands.models.openai.OpenAIModel"


def past_the_bound() -> None:
    time.sleep(SHORT * 2)


def test_a_run_that_was_never_throttled_never_gives_up_however_slow():
    backoff = SharedBackoff(give_up_after=SHORT, provider=PROVIDER)
    past_the_bound()
    assert not backoff.given_up() and not backoff.stopped.is_set()


def test_throttled_with_no_success_for_the_bound_gives_up_stops_the_run_and_names_the_provider():
    backoff = SharedBackoff(give_up_after=SHORT, provider=PROVIDER, first_delay=60.0)
    backoff.throttled(time.monotonic(), None)  # a pause of a minute ahead
    past_the_bound()
    assert backoff.given_up() and backoff.stopped.is_set()
    with pytest.raises(GaveUpError, match=f"no model call succeeded for {SHORT:g} s while {PROVIDER} throttled"):
        asyncio.run(backoff.wait())  # no call is sent, and the minute is not slept
    assert backoff.paused < 60.0  # the pause it did not take is not counted as paused
    assert backoff.summary().endswith("before it gave up.")


def test_the_clock_starts_at_the_first_throttle_since_a_success_and_a_success_stops_it():
    backoff = SharedBackoff(give_up_after=SHORT, provider=PROVIDER)
    past_the_bound()  # a quiet stretch (slow calls, no throttle) counts for nothing
    backoff.throttled(time.monotonic(), 0.0)
    assert not backoff.given_up()
    backoff.succeeded()
    past_the_bound()
    assert not backoff.given_up()  # throttled once, but a call went through since
    backoff.throttled(time.monotonic(), 0.0)
    past_the_bound()
    backoff.throttled(time.monotonic(), 0.0)
    assert backoff.given_up() and backoff.throttles == 3


def test_stopping_the_run_ends_a_pause_in_flight_and_sends_nothing():
    backoff = SharedBackoff(give_up_after=3600.0, provider=PROVIDER)
    backoff.throttled(time.monotonic(), 3600.0)  # cut to the longest single pause, still a minute
    threading.Timer(0.05, backoff.stop).start()
    with pytest.raises(RunStopped):
        asyncio.run(backoff.wait())
    assert not backoff.given_up()


def test_a_pause_still_ahead_when_the_run_ends_is_not_counted_as_paused():
    backoff = SharedBackoff(provider=PROVIDER)
    backoff.throttled(time.monotonic(), 30.0)  # the run's last case failed on this throttle: nobody waits it out
    said = backoff.summary()
    assert said is not None and said.startswith("The provider throttled 1 request(s); the run paused 0.0 s in all")
