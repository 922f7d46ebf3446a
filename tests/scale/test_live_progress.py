"""The progress line of a live run: drawn by rich on a terminal only, its counts and time left, erased at the end."""

from __future__ import annotations

import io
import re
import sys
from types import SimpleNamespace

import pytest

from fieldeval.scale import progress as live_progress
from fieldeval.scale.progress import CaseProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def screen(raw: str) -> str:
    """What a terminal shows after `raw`: text, carriage returns, line feeds, erase-line and cursor-up applied."""
    rows, row, col = [""], 0, 0
    for token in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", raw):
        if token == "\n":
            row, col = row + 1, 0
            rows += [""] * (row + 1 - len(rows))
        elif token == "\r":
            col = 0
        elif token == "\x1b[2K":
            rows[row] = ""
        elif token.startswith("\x1b[") and token.endswith("A"):
            row = max(row - int(token[2:-1] or 1), 0)
        elif token and not token.startswith("\x1b["):
            rows[row] = rows[row][:col].ljust(col) + token + rows[row][col + len(token) :]
            col += len(token)
    return "\n".join(rows).strip()


@pytest.fixture
def clock(monkeypatch) -> SimpleNamespace:
    """A clock the test moves by hand (`clock.now`), read by the progress line alone."""
    fake = SimpleNamespace(now=100.0)
    fake.monotonic = lambda: fake.now
    monkeypatch.setattr(live_progress, "time", fake)
    return fake


def test_a_terminal_sees_done_failed_in_flight_and_the_time_left(clock):
    terminal = Terminal()
    progress = CaseProgress(10, terminal)
    progress.start()
    assert screen(terminal.getvalue()) == "0 of 10 recorded, 1 in flight"  # drawn at once
    progress.start()
    clock.now += 30.0
    progress.end(True)  # 30 s for one finished case, nine to go: 30 s x 9
    assert progress.line() == "1 of 10 recorded, 1 in flight, about 4:30 left"
    progress.close()  # drawn once more, then erased
    assert terminal.getvalue().count("1 of 10 recorded, 1 in flight, about 4:30 left") >= 1
    assert screen(terminal.getvalue()) == ""  # nothing of the line is left on the screen
    progress.end(False)  # 15 s x 8; drawn again after a close
    assert progress.line() == "1 of 10 recorded, 1 failed, 0 in flight, about 2:00 left"
    assert screen(terminal.getvalue()) == progress.line()
    progress.close()
    assert screen(terminal.getvalue()) == ""


def test_the_last_case_is_always_drawn_and_an_hour_reads_as_hours(clock):
    terminal = Terminal()
    progress = CaseProgress(2, terminal, what="scored live")
    progress.start()
    progress.start()
    clock.now += 3600.0
    progress.end(True)
    assert progress.line() == "1 of 2 scored live, 1 in flight, about 1:00:00 left"
    progress.end(True)  # at once, and still shown before the line goes: the run is complete
    progress.close()
    assert terminal.getvalue().endswith("\x1b[2K") and screen(terminal.getvalue()) == ""
    last = terminal.getvalue().rsplit("2 of 2", 1)
    assert len(last) == 2 and last[1].startswith(" scored live, 0 in flight")


def test_what_the_task_prints_stays_on_its_own_stream_while_the_line_is_shown(clock, capsys):
    terminal = Terminal()
    progress = CaseProgress(3, terminal)
    progress.start()
    print("a result line")
    print("a task's warning", file=sys.stderr)
    progress.close()
    printed = capsys.readouterr()
    assert (printed.out, printed.err) == ("a result line\n", "a task's warning\n")
    assert "a result line" not in terminal.getvalue() and "warning" not in terminal.getvalue()


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
