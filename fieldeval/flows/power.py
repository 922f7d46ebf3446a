"""What one `power` run does, in order: the recipe `python -m fieldeval.commands.power` follows.

    check(request)                       # 1. the baseline file is there (standard library only)
    baseline = Baseline.of(...)          # 2. read it, the target's per-document counts
    text(baseline, request)              # 3. the smallest drop caught, and the documents a named drop needs

`power_run` is that recipe and returns what the command prints. The estimates themselves are
`fieldeval.compare.power`'s; this module only orders them and words the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fieldeval.compare.params import CONFIDENCE, POWER, check_run_file
from fieldeval.compare.params import POWER_RESAMPLES as RESAMPLES
from fieldeval.compare.params import POWER_SIMULATIONS as SIMULATIONS
from fieldeval.flows import Refused, Request

if TYPE_CHECKING:
    from fieldeval.compare.power import Baseline


@dataclass(frozen=True)
class PowerRequest(Request):
    """Everything a `power` run was asked, as the command line gave it (ranges already checked)."""

    baseline: Path
    target: str
    change: float | None = None
    power: float = POWER
    seed: int = 0
    simulations: int = SIMULATIONS
    resamples: int = RESAMPLES


def power_run(request: PowerRequest) -> str:
    """The recipe: find the baseline before numpy and pandas load, read it, estimate, word the answer."""
    try:
        check_run_file(request.baseline)
    except FileNotFoundError as exc:
        raise Refused(str(exc)) from exc
    from fieldeval.compare.power import Baseline

    baseline = Baseline.of(request.baseline, request.target)
    options = {"seed": request.seed, "simulations": request.simulations, "resamples": request.resamples}
    return text(baseline, request.change, request.power, **options)


def text(baseline: Baseline, change: float | None, power: float, **options) -> str:
    """What the command prints: the baseline, the smallest change caught, and the documents a named change needs."""
    from fieldeval.compare.power import MAX_DOCUMENTS, documents_needed, smallest_change

    size = len(baseline.counts)
    lines = [
        f"baseline: {baseline.source}, {size:,} documents; {baseline.target} = {baseline.value():.3f}",
        f"gate: high(delta({baseline.target})) >= 0 on its own {CONFIDENCE:.0%} interval, "
        f"{options.get('simulations', SIMULATIONS)} simulated regressions per setting",
    ]
    smallest = smallest_change(baseline, power=power, **options)
    if smallest.power >= power:
        lines.append(
            f"smallest drop caught with {power:.0%} power at {size:,} documents: {-smallest.change:.3f} "
            f"(each correct value broken with chance {smallest.rate:.2f})"
        )
    else:
        lines.append(
            f"no drop is caught with {power:.0%} power at {size:,} documents: breaking every correct value is caught "
            f"{smallest.power:.0%} of the time"
        )
    if change is not None:
        needed = documents_needed(baseline, change, power=power, **options)
        if needed is None:
            lines.append(
                f"a drop of {-change:.3f}: not caught with {power:.0%} power within {MAX_DOCUMENTS:,} documents"
            )
        else:
            lines.append(
                f"documents needed to catch a drop of {-change:.3f} with {power:.0%} power: about {needed.documents:,} "
                f"(power {needed.power:.0%} there)"
            )
    lines.append("best case: the simulated candidate differs only by the regression; real runs need more")
    return "\n".join(lines)
