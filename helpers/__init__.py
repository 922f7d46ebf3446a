"""The walkthroughs' thin package: what a notebook needs beside the libraries it teaches.

- `fixtures`: where the bundled data lives, and reading its case and prediction files;
- `replay`: `ReplayModel`, which streams a stored exchange to the real Strands `Agent`, offline;
- `render`: plain-text tables, pandas tables with fixed Styler ids, matplotlib charts;
- `fuzzy`: `FuzzyEquals`, a configurable deterministic evaluator (until Strands Evals ships one).

It imports nothing of the tool (`fieldeval`), so the seed walkthroughs run on Strands, Strands
Evals, stickler, pandas and this package alone. `FuzzyEquals` is offered here, loaded on first
use, so a notebook that needs only `strands-agents` and `stickler-eval` never imports
`strands_evals`.
"""

from typing import Any

__all__ = ["FuzzyEquals"]


def __getattr__(name: str) -> Any:
    if name == "FuzzyEquals":
        from helpers.fuzzy import FuzzyEquals

        return FuzzyEquals
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")
