"""One progress line for a live run of many cases: done, failed, in flight and the time left.

Drawn on standard error only when it is a terminal, at most a few times a second, and cleared
when the run ends, so logs, CI and stored notebook outputs never hold it. The time left is the
wall time so far per finished case (which already counts the cases run side by side) times the
cases still to go.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

REDRAW = 0.25  # seconds between redraws


class CaseProgress:
    """Counts cases as they start and end; thread-safe."""

    def __init__(self, total: int, stream: TextIO, *, what: str = "recorded") -> None:
        self.total, self.stream, self.what = total, stream, what
        self.done = self.failed = self.in_flight = 0
        self.shown = _is_terminal(stream)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._drawn = 0.0

    def start(self) -> None:
        with self._lock:
            self.in_flight += 1
        self._draw()

    def end(self, ok: bool) -> None:
        with self._lock:
            self.in_flight -= 1
            self.done += ok
            self.failed += not ok
        self._draw()

    def line(self) -> str:
        finished = self.done + self.failed
        left = self.total - finished
        eta = ""
        if finished and left:
            per_case = (time.monotonic() - self._started) / finished
            eta = f", about {_clock(per_case * left)} left"
        failed = f", {self.failed} failed" if self.failed else ""
        return f"{self.done} of {self.total} {self.what}{failed}, {self.in_flight} in flight{eta}"

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    def _draw(self) -> None:
        if not self.shown:
            return
        now = time.monotonic()
        with self._lock:
            if now - self._drawn < REDRAW and self.done + self.failed < self.total:
                return
            self._drawn = now
            self.stream.write("\r\x1b[2K" + self.line())
            self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{rest:02d}" if minutes >= 60 else f"{minutes}:{rest:02d}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
