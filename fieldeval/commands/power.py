"""`python -m fieldeval.commands.power BASELINE --target FIELD.METRIC [--change -0.02]` (also `eval-power`).

How many documents a gate needs, estimated from a baseline run by `fieldeval.compare.power` (the run,
step by step: `fieldeval.flows.power`). Only the standard library is imported before the arguments
are parsed, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fieldeval.commands import exits
from fieldeval.compare.params import POWER, check_seed
from fieldeval.compare.params import POWER_RESAMPLES as RESAMPLES
from fieldeval.compare.params import POWER_SIMULATIONS as SIMULATIONS
from fieldeval.flows import power as flow


def parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "fieldeval.commands.power",
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


def check(args: argparse.Namespace) -> None:
    """The ranges argparse cannot check; the first one broken is the error."""
    if not 0 < args.power < 1:
        raise ValueError(f"--power must be between 0 and 1; got {args.power}")
    if not 10 <= args.simulations <= 10_000:
        raise ValueError(f"--simulations must be 10 to 10,000; got {args.simulations}")
    if not 2 <= args.resamples <= 10_000:
        raise ValueError(f"--resamples must be 2 to 10,000; got {args.resamples}")
    check_seed(args.seed)  # the bound compare and report use


def main(argv: Sequence[str] | None = None) -> int:
    """Estimate from the baseline; 0 estimated, 2 on bad input, 3 on a bug (`exits.TABLE["power"]`)."""
    return exits.run(
        lambda: _main(argv), refused=(OSError, ValueError), internal="fieldeval.commands.power", user_folder=False
    )


def _main(argv: Sequence[str] | None) -> int:
    print(flow.power_run(flow.PowerRequest.from_arguments(exits.parse(parser(), argv, check))))
    return exits.OK


if __name__ == "__main__":
    sys.exit(main())
