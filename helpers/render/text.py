"""Plain-text tables for notebooks that run with strands and stickler alone (no pandas).

Long cells are wrapped at word boundaries inside their column, so a wide table never reaches
the notebook's own line wrapping, which breaks lines mid-word. Floats are printed with the
same three decimals as the styled tables; a missing value is `-`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

# Wide enough for a field path or a short value; anything longer wraps onto more lines.
COLUMN_WIDTH = 40
GAP = "  "


def cell_text(value: Any) -> str:
    """One value as table text: `-` for None, three decimals for a float, `str()` otherwise."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], column_width: int = COLUMN_WIDTH) -> str:
    """The rows as aligned columns, each cell wrapped at word boundaries to `column_width`."""
    lines = [[str(name) for name in header]] + [[cell_text(value) for value in row] for row in rows]
    wrapped = [[textwrap.wrap(text, column_width, break_long_words=False) or [""] for text in line] for line in lines]
    widths = [max(len(part) for line in wrapped for part in line[index]) for index in range(len(header))]
    out = []
    for line in wrapped:
        for depth in range(max(len(parts) for parts in line)):
            parts = [cell[depth] if depth < len(cell) else "" for cell in line]
            out.append(GAP.join(part.ljust(width) for part, width in zip(parts, widths, strict=True)).rstrip())
    return "\n".join(out)


def print_table(header: Sequence[str], rows: Iterable[Sequence[Any]], column_width: int = COLUMN_WIDTH) -> None:
    """Print `text_table(header, rows)`: what a notebook cell calls."""
    print(text_table(header, rows, column_width))
