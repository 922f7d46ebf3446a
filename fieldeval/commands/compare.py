"""`python -m fieldeval.commands.compare OLD NEW [NEW ...] [--gate RULE ...]` (also installed as `eval-compare`).

Compares two saved runs (saved reports, or compact per-document results files) over the cases
they share, prints the tables, and applies the gates: `fieldeval.flows.compare` is the run, step by
step. With several candidates it prints one leaderboard instead (`fieldeval.flows.candidates`).
Exit codes: `fieldeval.commands.exits` (printed by --help).

Arguments are parsed and range-checked, rules parsed and files found before numpy, pandas or
stickler are imported, so `--help` and every such error answer at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fieldeval.commands import exits
from fieldeval.compare.params import (
    CONFIDENCE,
    INTERVAL_MODES,
    JOINT,
    MAX_RESAMPLES,
    MAX_SEED,
    RESAMPLES,
    SEED,
    check_confidence,
    check_resamples,
    check_seed,
)
from fieldeval.flows import compare as flow

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = exits.OK, exits.GATE_FAILED, exits.BAD_INPUT, exits.INTERNAL


def parser() -> argparse.ArgumentParser:
    """The command's arguments; argparse itself exits 2 on a missing or malformed one."""
    parser = exits.parser(
        "fieldeval.commands.compare", "compare", "Compare two saved StructuredOutputReport runs and gate on the result."
    )
    parser.add_argument(
        "old",
        type=Path,
        help="the baseline run: a report saved with fieldeval.harness.reports.save_report, or a compact results file",
    )
    parser.add_argument("new", type=Path, help="the run under test, saved the same way")
    parser.add_argument(
        "more",
        type=Path,
        nargs="*",
        metavar="CANDIDATE",
        help=(
            "further candidates: one leaderboard of every candidate against the baseline, with verdicts that hold "
            "together over every candidate and field, cost per 1,000 documents (--prices), latency, the "
            "quality-cost frontier and a recommended run; the exit code then says whether the recommended run "
            "passes every gate"
        ),
    )
    parser.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="RULE",
        help=(
            "e.g. 'total_amount.recall >= 0.98', 'overall >= 0.8', 'delta(line_items.f1) >= -0.02', "
            "'high(delta(invoice_date.f1)) >= 0' (repeatable)"
        ),
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=RESAMPLES,
        help=f"bootstrap resamples, 1 to {MAX_RESAMPLES:,} (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"bootstrap seed, 0 to {MAX_SEED} (default %(default)s)")
    parser.add_argument(
        "--confidence", type=float, default=CONFIDENCE, help="interval level, between 0 and 1 (default %(default)s)"
    )
    parser.add_argument(
        "--intervals",
        choices=INTERVAL_MODES,
        default=JOINT,
        help=(
            "how gates on interval ends (low(...), high(...)) read them: joint (default), one simultaneous band "
            "over every field they gate, so all hold together at the confidence level; per-field, each field's "
            "own interval, whose false alarms add up over fields"
        ),
    )
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="a JSON price table by model id: also print what each run's tokens cost (no prices are built in)",
    )
    parser.add_argument("--top", type=int, default=5, help="how many moved documents to list, 0 or more")
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also save the comparison and each gate's result (with the interval mode that produced it) as JSON",
    )
    parser.add_argument(
        "--allow-scoring-change",
        action="store_true",
        help="compare two runs whose saved schema fingerprint, comparators or match threshold differ (refused "
        "otherwise); every table is then headed by what differs",
    )
    return parser


def check(args: argparse.Namespace) -> None:
    """The ranges argparse cannot check; the first one broken is the error."""
    check_resamples(args.resamples)
    check_seed(args.seed)
    check_confidence(args.confidence)
    if args.top < 0:
        raise ValueError(f"--top must be 0 or more; got {args.top}")


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two saved runs; 0 when every gate passes, 1 when one fails, 2 on bad input, 3 on a bug."""
    # A foreign or malformed file, nothing to pair: bad input. Anything else is a bug (exit 3).
    refused = (OSError, ValueError, RecursionError, MemoryError)
    return exits.run(lambda: _main(argv), refused=refused, internal="fieldeval.commands.compare", user_folder=False)


def _main(argv: Sequence[str] | None) -> int:
    request = flow.CompareRequest.from_arguments(exits.parse(parser(), argv, check))
    if request.more:
        return _leaderboard(request)
    compared = flow.compare_run(request)
    print(flow.compared_text(compared, top=request.top), flush=True)  # `| head`: exits.BROKEN_PIPE
    return EXIT_PASSED if compared.passed else EXIT_FAILED


def _leaderboard(request: flow.CompareRequest) -> int:
    """Several candidates: the leaderboard, and whether the recommended run passes every gate."""
    from fieldeval.flows import candidates

    gates = candidates.check(request)
    chosen = candidates.choose(request, gates)
    if request.json is not None:
        candidates.save(request, chosen)
    print(candidates.text(chosen), flush=True)
    return EXIT_PASSED if chosen.passed else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
