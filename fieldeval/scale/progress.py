"""The package's one progress mechanism, on rich: a bar over documents, and a line over live cases.

Over documents (scoring at scale): rich on a terminal, a live bar in a notebook, a final line
always. In a notebook the bar lives in one display slot that is updated while scoring and emptied
when scoring ends, so a stored notebook keeps only the empty slot and the final line, which says
how many documents were scored and how many could not be: nothing that varies between runs. Off a
terminal (CI logs) only the final line is printed.

Over live cases (`CaseProgress`, for `record` and `score --mode live`): done, failed, in flight
and the time left, drawn by rich on standard error only when it is a terminal, and gone when the
run ends, so logs, CI and stored notebook outputs never hold it. Both are drawn by `terminal_bar`.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Protocol, TextIO

REDRAW = 4  # redraws of a live line per second at most


class Progress(Protocol):
    """What the fan-out reports to: the run's size, documents as they finish, and the end."""

    def start(self, total: int | None, engine: str) -> None: ...

    def advance(self, documents: int, failed: int = 0) -> None: ...

    def finish(self) -> None: ...


class FinalLine:
    """No live bar: one line at the end, `scored N documents on ENGINE; K could not be scored`."""

    def __init__(self, stream=None) -> None:
        self.stream = stream
        self.done = 0
        self.failed = 0
        self.total: int | None = None
        self.engine = ""

    def start(self, total: int | None, engine: str) -> None:
        self.total, self.engine = total, engine

    def advance(self, documents: int, failed: int = 0) -> None:
        self.done += documents
        self.failed += failed

    def line(self) -> str:
        could_not = f"{self.failed:,} could not be scored" if self.failed else "none failed"
        return f"scored {self.done:,} documents on {self.engine}; {could_not}"

    def finish(self) -> None:
        print(self.line(), file=self.stream or sys.stdout)


class TerminalBar(FinalLine):
    """rich's bar on stderr while scoring, then the final line on stdout."""

    def start(self, total: int | None, engine: str) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn

        super().start(total, engine)
        self._bar = terminal_bar(TextColumn("scoring"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        self._bar.start()
        self._task = self._bar.add_task("scoring", total=total)

    def advance(self, documents: int, failed: int = 0) -> None:
        super().advance(documents, failed)
        self._bar.advance(self._task, documents)

    def finish(self) -> None:
        self._bar.stop()
        super().finish()


class NotebookBar(FinalLine):
    """An HTML `<progress>` bar in one display slot, updated live and emptied at the end."""

    EMPTY = {"text/plain": ""}

    def start(self, total: int | None, engine: str) -> None:
        from IPython.display import display

        super().start(total, engine)
        self._slot = display(self.EMPTY, raw=True, display_id=True)

    def advance(self, documents: int, failed: int = 0) -> None:
        super().advance(documents, failed)
        maximum = f' max="{self.total}"' if self.total else ""
        counted = f"{self.done:,}" + (f" of {self.total:,}" if self.total else "")
        html = f'<progress value="{self.done}"{maximum} style="width:40%"></progress> {counted} documents'
        self._slot.update({"text/html": html, "text/plain": f"{counted} documents"}, raw=True)

    def finish(self) -> None:
        self._slot.update(self.EMPTY, raw=True)
        super().finish()


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where a display slot can be updated)."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return type(shell).__name__ == "ZMQInteractiveShell"


def progress_bar(stream=None) -> Progress:
    """The bar that suits where this runs: a notebook, a terminal, or neither; the final line goes to `stream`."""
    if in_notebook():
        return NotebookBar(stream)
    if sys.stderr.isatty():
        return TerminalBar(stream)
    return FinalLine(stream)


def terminal_bar(*columns: Any, stream: TextIO | None = None, refresh_per_second: float = 10) -> Any:
    """rich's live progress with these columns, on standard error (or `stream`), erased when it stops.

    Drawn on a given `stream`, it leaves `sys.stdout` and `sys.stderr` alone: a live case's task may
    print, and what it prints to standard output must stay there (the command's results), not move
    to the terminal the line is drawn on.
    """
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True) if stream is None else Console(file=stream)
    redirect = stream is None
    return Progress(
        *columns,
        console=console,
        transient=True,
        refresh_per_second=refresh_per_second,
        redirect_stdout=redirect,
        redirect_stderr=redirect,
    )


class CaseProgress:
    """Counts live cases as they start and end, and shows them on a terminal; thread-safe.

    The line reads `3 of 10 recorded, 1 failed, 2 in flight, about 4:30 left`: the time left is the
    wall time so far per finished case (which already counts the cases run side by side) times the
    cases still to go. Whoever prints while it is shown calls `close` first, so no line is drawn
    over; the next start or end draws it again.
    """

    def __init__(self, total: int, stream: TextIO, *, what: str = "recorded") -> None:
        self.total, self.stream, self.what = total, stream, what
        self.done = self.failed = self.in_flight = 0
        self.shown = _is_terminal(stream)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._bar: Any = None

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
        """Erase the line (drawn once more first, so the last count is what was on screen)."""
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

    def _draw(self) -> None:
        """Start rich's display if it is not running; it redraws the line itself, `REDRAW` times a second."""
        if not self.shown or self._bar is not None:
            return
        from rich.progress import ProgressColumn
        from rich.text import Text

        line = self.line

        class Line(ProgressColumn):
            def render(self, task: Any) -> Text:
                return Text(line())

        self._bar = terminal_bar(Line(), stream=self.stream, refresh_per_second=REDRAW)
        self._bar.add_task("cases", total=self.total)
        self._bar.start()


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{rest:02d}" if minutes >= 60 else f"{minutes}:{rest:02d}"


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
