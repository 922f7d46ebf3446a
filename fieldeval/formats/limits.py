"""The size caps on what the tools read and record, in one table, and the check made before a read.

A JSON reader holds the whole text, then builds objects several times its size: a valid 1 GB
cassette took `score` to 23 GB before the kernel stopped it. So every file a command reads whole is
measured before a byte of it is read, and refused past its cap with a message naming the file,
the cap and what to do. A results file is read a line at a time, so its lines are bounded
instead: its length grows with the run, and the memory its reader takes does not.

The caps sit far above what real runs write (measured: a cassette of one case is kilobytes; a
saved report holds about 13 KB per document of twenty line items; a results file's header about
230 bytes per case and a row under a kilobyte), and low enough that the memory a file at its cap
takes to read is bounded. REFERENCE.md lists them in one table, which a test checks against these.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

MIB = 1 << 20
SEE = "the caps are listed in REFERENCE.md"


@dataclass(frozen=True)
class Cap:
    """A size cap: the bytes, what it is a cap on (`a cassette`), and what to do about a file over it."""

    bytes: int
    what: str
    fix: str

    def fixed(self, fix: str) -> Cap:
        """The same cap with the fix a reader knows better (the exact command that re-records a case)."""
        return replace(self, fix=fix)


# One exchange file (a cassette): every request and every event of one case's model calls.
EXCHANGE = Cap(
    64 * MIB,
    "a cassette",
    f"a real case records kilobytes; lower the model's max_tokens if it ran on; {SEE}",
)
# What a model streams for one case while `record` captures it, counted as compact JSON of its
# events: the events and their assembled copy both go into the cassette, which must stay under its cap.
STREAM = Cap(
    16 * MIB,
    "what a model streams for one case",
    "the model ran on far past any structured output: lower its max_tokens, or check the prompt; "
    "nothing was written for this case",
)
# A results file's header line, which lists every case (about 230 bytes each): 128 MiB holds more
# than half a million cases. Its rows are streamed, so the file itself has no cap.
HEADER = Cap(128 * MIB, "a results file's header line", f"re-score the run in parts of fewer cases; {SEE}")
# One row line of a results file: one document's score and its counts per field path.
ROW = Cap(16 * MIB, "one row of a results file", f"the file was not written by score: re-score the run; {SEE}")
# A saved report (`score --out`), read whole: about 40,000 documents of twenty line items.
RUN = Cap(
    512 * MIB,
    "a saved report",
    f"for a run this large, write the compact results file with `score --results` and compare that; {SEE}",
)


class TooLarge(ValueError):
    """A file, line or stream over its cap; the message names it, the cap and what to do."""


def size_text(count: int) -> str:
    """A byte count as people read it: `64 MiB`, `1.5 GiB`, `812 bytes`."""
    for unit, size in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if count >= size:
            value = count / size
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{count:,} bytes"


def over_cap(path: Path | str, size: int | None, cap: Cap, action: str = "read") -> str:
    """The one wording of a refusal for size: `FILE: 1 GiB, over the 64 MiB cap on a cassette, ... (fix)`.

    `size` is None when only "more than the cap" is known (a stream or a line cut off at the cap);
    `action` is what was not done (`read`, `written`).
    """
    amount = f"{size_text(size)}, over" if size is not None else "larger than"
    return f"{path}: {amount} the {size_text(cap.bytes)} cap on {cap.what}, so it was not {action} ({cap.fix})"


def check_file(path: Path | str, cap: Cap, *, error: type[Exception] = TooLarge) -> None:
    """Refuse a file larger than `cap` by its size on disk, before any of it is read.

    A sparse file counts at its full length, which is what reading it would produce.

    Raises:
        TooLarge: As `error`, naming the file, its size, the cap and what to do.
        OSError: If the file cannot be looked at (the caller's reader reports it).
    """
    size = os.stat(path).st_size
    if size > cap.bytes:
        raise error(over_cap(path, size, cap))


def read_bounded(file: BinaryIO, path: Path | str, cap: Cap, *, error: type[Exception] = TooLarge) -> bytes:
    """All of an open file's bytes, refusing one over `cap` by its size before reading, or at the cap.

    The size on disk answers for a regular file; reading at most one byte past the cap is the bound
    for one whose size is not known in advance (a pipe, a device, a file still growing).

    Raises:
        TooLarge: As `error`, as `check_file`.
    """
    size = os.fstat(file.fileno()).st_size
    if size > cap.bytes:
        raise error(over_cap(path, size, cap))
    data = file.read(cap.bytes + 1)
    if len(data) > cap.bytes:
        raise error(over_cap(path, None, cap))
    return data


def read_line(file: BinaryIO, path: Path | str, cap: Cap, line: int, *, error: type[Exception] = TooLarge) -> bytes:
    """The next line of an open file, refusing one longer than `cap` once that much is read (not all of it).

    Raises:
        TooLarge: As `error`, naming the file, the line, the cap and what to do.
    """
    text = file.readline(cap.bytes + 1)
    if len(text) > cap.bytes:
        raise error(over_cap(f"{path}: line {line}", None, cap))
    return text
