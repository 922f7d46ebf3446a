"""The progress line of a live run: on a terminal only, redrawn a few times a second at most, cleared at the end."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from fieldeval.exchanges import live_progress
from fieldeval.exchanges.live_progress import CaseProgress

CLEAR = "\r\x1b[2K"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch) -> SimpleNamespace:
    """A clock the test moves by hand (`clock.now`), read by the progress line alone."""
    fake = SimpleNamespace(now=100.0)
    fake.monotonic = lambda: fake.now
    monkeypatch.setattr(live_progress, "time", fake)
    return fake


def test_a_terminal_sees_done_failed_in_flight_and_the_time_left(clock):
    screen = Terminal()
    progress = CaseProgress(10, screen)
    progress.start()
    progress.start()
    assert screen.getvalue() == CLEAR + "0 of 10 recorded, 1 in flight"  # the second start came too soon to redraw
    clock.now += 30.0
    progress.end(True)  # 30 s for one finished case, nine to go: 30 s x 9
    assert screen.getvalue().endswith(CLEAR + "1 of 10 recorded, 1 in flight, about 4:30 left")
    progress.end(False)  # too soon to redraw; the line it would draw: 15 s x 8
    assert progress.line() == "1 of 10 recorded, 1 failed, 0 in flight, about 2:00 left"
    assert screen.getvalue().endswith("about 4:30 left")
    progress.close()
    assert screen.getvalue().endswith(CLEAR)  # nothing of the line is left on the screen


def test_the_last_case_is_always_drawn_and_an_hour_reads_as_hours(clock):
    screen = Terminal()
    progress = CaseProgress(2, screen, what="scored live")
    progress.start()
    progress.start()
    clock.now += 3600.0
    progress.end(True)
    assert progress.line() == "1 of 2 scored live, 1 in flight, about 1:00:00 left"
    progress.end(True)  # at once, yet drawn: the run is complete
    assert screen.getvalue().endswith(CLEAR + "2 of 2 scored live, 0 in flight")


def test_a_log_a_pipe_or_a_closed_stream_never_holds_the_line(clock):
    for stream in (io.StringIO(), SimpleNamespace(write=None)):
        progress = CaseProgress(3, stream)  # type: ignore[arg-type]
        progress.start()
        progress.end(True)
        progress.close()
        assert progress.shown is False
    log = io.StringIO()
    CaseProgress(3, log).start()
    assert log.getvalue() == ""
