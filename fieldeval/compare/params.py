"""The words and limits of a comparison, importable without numpy or pandas.

The command line checks its arguments against these before it imports anything heavy, so
`--help` and every bad-argument error answer at once.
"""

from __future__ import annotations

from pathlib import Path

from fieldeval.errors import EvalError

RATIOS = ("precision", "recall", "f1")
RESAMPLES = 2000
SEED = 0
CONFIDENCE = 0.95
MAX_RESAMPLES = 100_000  # far past where a percentile interval stops moving; beyond it only time grows
MAX_SEED = 2**63 - 1
ROW_BLOCK = 8192  # rows of a count table widened, gathered or compared at once: a few MB, whatever the run's size
JOINT, PER_FIELD = "joint", "per-field"  # how gates on interval ends read them: one band over all, or each alone
INTERVAL_MODES = (JOINT, PER_FIELD)


class CompareError(EvalError, ValueError):
    """Two runs cannot be compared; the message says which run and what to fix."""


def check_run_file(path: Path) -> None:
    """Refuse a run path that holds no file, before anything heavy loads: a mistyped name answers at once."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no saved report here; write one with fieldeval.harness.reports.save_report")


def check_resamples(resamples: int) -> None:
    """Refuse a resample count that gives no interval, or one that would only exhaust memory and time."""
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise ValueError(f"resamples must be at least 1 and at most {MAX_RESAMPLES:,}; got {resamples}")


def check_confidence(confidence: float) -> None:
    """Refuse a confidence level no interval can have, before any resampling is spent on it."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence}")


def check_seed(seed: int) -> None:
    """Refuse a seed the random generator cannot take."""
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be a whole number from 0 to {MAX_SEED}; got {seed}")


# The power estimate's defaults (`fieldeval.compare.power`, and `eval-power` before it imports numpy).
POWER = 0.8  # the share of planted regressions a gate must catch
POWER_SIMULATIONS = 200  # simulated regressions per setting
POWER_RESAMPLES = 400  # bootstrap resamples per simulation
