"""`python -m helpers.commands.power BASELINE --target FIELD.METRIC [--change -0.02]` (also `eval-power`).

How many documents a gate needs, estimated from a baseline run by `helpers.compare.power`. Only
the standard library is imported before the arguments are parsed, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.commands import exits

if TYPE_CHECKING:
    from helpers.compare.power import Baseline

from helpers.compare.params import CONFIDENCE, POWER, check_run_file, check_seed
from helpers.compare.params import POWER_RESAMPLES as RESAMPLES
from helpers.compare.params import POWER_SIMULATIONS as SIMULATIONS


def parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "helpers.commands.power",
        "power",
        "From a baseline run: the smallest regression a gate would catch, and the documents needed.",
    )
    parser.add_argument("baseline", type=Path, help="a saved report or compact results file")
    parser.add_argument("--target", required=True, help="FIELD.METRIC the gate reads, e.g. invoice_date.f1")
    parser.add_argument("--change", type=float, help="also: documents needed to catch this drop (e.g. -0.02)")
    parser.add_argument("--power", type=float, default=POWER, help="share of regressions caught (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="simulation seed (default %(default)s)")
    parser.add_argument(
        "--simulations", type=int, default=SIMULATIONS, help="simulated regressions per setting (default %(default)s)"
    )
    parser.add_argument(
        "--resamples", type=int, default=RESAMPLES, help="bootstrap resamples per simulation (default %(default)s)"
    )
    return parser


def report(baseline: Baseline, change: float | None, power: float, **options) -> str:
    """What the command prints: the baseline, the smallest change caught, and the documents a named change needs."""
    from helpers.compare.power import MAX_DOCUMENTS, documents_needed, smallest_change

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


def main(argv: Sequence[str] | None = None) -> int:
    """Estimate from the baseline; 0 estimated, 2 on bad input, 3 on a bug (`exits.TABLE["power"]`)."""
    return exits.run(
        lambda: _main(parser().parse_args(argv)),
        refused=(OSError, ValueError),
        internal="helpers.commands.power",
    )


def _main(args: argparse.Namespace) -> int:
    problem = next(
        (
            message
            for bad, message in (
                (not 0 < args.power < 1, f"--power must be between 0 and 1; got {args.power}"),
                (not 10 <= args.simulations <= 10_000, f"--simulations must be 10 to 10,000; got {args.simulations}"),
                (not 2 <= args.resamples <= 10_000, f"--resamples must be 2 to 10,000; got {args.resamples}"),
            )
            if bad
        ),
        None,
    )
    if problem:
        return exits.refuse(problem)
    check_seed(args.seed)  # the bound compare and report use; a ValueError is refused as bad input
    check_run_file(args.baseline)  # before numpy and pandas load (an OSError, refused as bad input)
    from helpers.compare.power import Baseline

    options = {"seed": args.seed, "simulations": args.simulations}
    baseline = Baseline.of(args.baseline, args.target)
    print(report(baseline, args.change, args.power, resamples=args.resamples, **options))
    return exits.OK


if __name__ == "__main__":
    sys.exit(main())
