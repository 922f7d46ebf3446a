"""A progress bar over documents: rich on a terminal, a live bar in a notebook, a final line always.

In a notebook the bar lives in one display slot that is updated while scoring and emptied when
scoring ends, so a stored notebook keeps only the empty slot and the final line, which says how
many documents were scored and how many could not be: nothing that varies between runs. Off a
terminal (CI logs) only the final line is printed.
"""

from __future__ import annotations

import sys
from typing import Protocol


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
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        super().start(total, engine)
        self._bar = Progress(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
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
