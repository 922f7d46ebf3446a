"""The thin helper package the structured-output evaluation notebooks import.

Modules are imported on their own (`from fieldeval.fuzzy import FuzzyEquals`), so a notebook
that needs only `strands-agents` and `stickler-eval` never imports `strands_evals`.
`FuzzyEquals` is also offered here, loaded on first use for the same reason.

What a notebook reader uses, and what serves the commands alone:

- the notebooks (and `examples/walkthroughs`) import from `fuzzy/`, `render/`, `compare/`,
  `scale/`, `harness/` (cases, schema, scoring, saved reports, results), `exchanges/` (the
  exchange format, cassettes, fixtures, `ReplayModel`), `formats/`, `attribution/` (leaf
  diffs, failures by kind, and the partners of list items, which scale-out workers store with a
  saved report's leaf diffs), `services/bedrock.py`, `mode.py`, `files.py` and `errors.py`;
- the commands alone use `commands/` (argument parsing and printing), `flows/` (what each
  command does, step by step), `report/` (the HTML page), `outputs.py`, and the live side of
  the shared folders: `exchanges/` recorder, recording, provenance, stale, throttle and usage;
  `harness/` agent_run and tasks; `services/` models and stand_in; `formats/prices.py`.

A run goes down the layers and comes back once: `commands/` calls `flows/`, which calls the
concerns (`harness/`, `compare/`, `exchanges/`, `scale/`, `report/`, ...), which call `formats/`,
which calls `files.py`; no call climbs back up.
"""

from typing import Any

__all__ = ["FuzzyEquals"]


def __getattr__(name: str) -> Any:
    if name == "FuzzyEquals":
        from fieldeval.fuzzy import FuzzyEquals

        return FuzzyEquals
    raise AttributeError(f"module 'fieldeval' has no attribute {name!r}")
