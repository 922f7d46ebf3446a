"""Plain-text tables for notebooks that run with strands and stickler alone (no pandas).

Every column is as wide as its widest line; a cell's own line breaks start new lines of its row.
Floats get the three decimals every score the walkthroughs print has; a missing value is `-`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import zip_longest
from typing import Any

# What a notebook cell shows without wrapping on a laptop screen.
WIDTH = 100
DECIMALS = 3


def format_number(value: float) -> str:
    """A score as the walkthroughs print it: three decimals."""
    return f"{value:.{DECIMALS}f}"


def _text(value: Any) -> list[str]:
    if value is None:
        return ["-"]
    return (format_number(value) if isinstance(value, float) else str(value)).split("\n")


def print_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """Print the rows under `header` as aligned columns, two spaces apart."""
    table = [[_text(name) for name in header]] + [[_text(value) for value in row] for row in rows]
    widths = [max(len(line) for row in table for line in row[column]) for column in range(len(header))]
    for row in table:
        for parts in zip_longest(*row, fillvalue=""):
            print("  ".join(part.ljust(width) for part, width in zip(parts, widths, strict=True)).rstrip())
