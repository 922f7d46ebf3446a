"""The thin helper package the structured-output evaluation notebooks import.

Modules are imported on their own (`from helpers.fuzzy import FuzzyEquals`), so a notebook
that needs only `strands-agents` and `stickler-eval` never imports `strands_evals`.
`FuzzyEquals` is also offered here, loaded on first use for the same reason.

The walkthroughs import from every folder but two: `commands/` (argument parsing and printing
only) and `flows/` (what each command does, step by step) serve the commands alone.
"""

from typing import Any

__all__ = ["FuzzyEquals"]


def __getattr__(name: str) -> Any:
    if name == "FuzzyEquals":
        from helpers.fuzzy import FuzzyEquals

        return FuzzyEquals
    raise AttributeError(f"module 'helpers' has no attribute {name!r}")
