"""Plain-text tables for notebooks that run with strands and stickler alone (no pandas).

A notebook wraps an output line longer than its cell, and it breaks it anywhere, mid-word
included. So a table is fitted to `width` characters here: the widest columns are narrowed
first, and their cells are wrapped at word boundaries onto more lines. Floats are printed with
the same three decimals as the styled tables; a missing value is `-`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

# What a notebook cell shows without wrapping on a laptop screen.
WIDTH = 100
# Every score the project prints itself has this many decimals, in text and in styled tables.
DECIMALS = 3
GAP = "  "
# No column is narrowed below this, so a short word is never squeezed onto its own line.
MIN_COLUMN = 8


def format_number(value: float) -> str:
    """Every score the project prints itself, in one format: three decimals."""
    return f"{value:.{DECIMALS}f}"


def cell_text(value: Any) -> str:
    """One value as table text: `-` for None, three decimals for a float, `str()` otherwise."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return format_number(value)
    return str(value)


def column_widths(lines: list[list[str]], width: int) -> list[int]:
    """Each column's natural width, the widest narrowed one step at a time until the row fits."""
    widths = [max(len(part) for line in lines for part in line[index].split("\n")) for index in range(len(lines[0]))]
    budget = width - len(GAP) * (len(widths) - 1)
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda index: widths[index])
        if widths[widest] <= MIN_COLUMN:
            break
        widths[widest] -= 1
    return widths


def wrap(text: str, limit: int) -> list[str]:
    """`text` as lines of at most `limit` characters, broken only between words and at its own newlines."""
    return [line for paragraph in text.split("\n") for line in _wrap_paragraph(paragraph, limit)]


def _wrap_paragraph(paragraph: str, limit: int) -> list[str]:
    """One paragraph wrapped as `textwrap.wrap` wraps it; a cell that already fits is returned as it is.

    Most cells of a long table (a score, a case name) fit: textwrap would hand them back unchanged,
    since it only rewrites whitespace other than single inner spaces, which they do not have. On
    a run of thousands of cases that check is most of the time the table took.
    """
    if len(paragraph) <= limit and paragraph.isprintable() and paragraph == paragraph.strip():
        return [paragraph]
    return textwrap.wrap(paragraph, limit, break_long_words=False, break_on_hyphens=False) or [""]


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], width: int = WIDTH) -> str:
    """The rows as aligned columns fitted to `width`, long cells wrapped at word boundaries.

    A single word longer than its column is kept whole, so the table can exceed `width`
    only where breaking it would split a word.
    """
    lines = [[str(name) for name in header]] + [[cell_text(value) for value in row] for row in rows]
    # A cell's own line breaks start new lines; its width is its longest line.
    limits = column_widths(lines, width)
    wrapped = [[wrap(text, limit) for text, limit in zip(line, limits, strict=True)] for line in lines]
    widths = [max(len(part) for line in wrapped for part in line[index]) for index in range(len(header))]
    out = []
    for line in wrapped:
        for depth in range(max(len(parts) for parts in line)):
            parts = [cell[depth] if depth < len(cell) else "" for cell in line]
            out.append(GAP.join(part.ljust(size) for part, size in zip(parts, widths, strict=True)).rstrip())
    return "\n".join(out)


def print_table(header: Sequence[str], rows: Iterable[Sequence[Any]], width: int = WIDTH) -> None:
    """Print `text_table(header, rows, width)`: what a notebook cell calls."""
    print(text_table(header, rows, width))
