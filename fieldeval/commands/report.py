"""`python -m fieldeval.commands.report RUN.json [RUN.json ...] [--against OLD.json --gate RULE ...]` (`eval-report`).

Writes one self-contained HTML file (no network, no server: a CI artifact to open) with the
per-field table, the interval chart of a comparison, the gates, the failures by kind and each
document's leaf diff, and prints a short Markdown summary (also written with `--summary`), for a
CI job's summary page. With two or more RUNs (and `--against BASELINE`) the page and the summary
show instead the leaderboard `compare` prints for them: quality against cost, the field-by-candidate
map of changes, the table and the recommended run (`fieldeval.flows.report_candidates`). Exit
codes: `fieldeval.commands.exits` (printed by --help).

`fieldeval.flows.report` is the run, step by step. Arguments, rules and files are checked before
pandas, matplotlib or stickler are imported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fieldeval.commands import exits
from fieldeval.compare.params import RESAMPLES, SEED, check_resamples, check_seed
from fieldeval.flows import report as flow

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = exits.OK, exits.GATE_FAILED, exits.BAD_INPUT, exits.INTERNAL


def parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "fieldeval.commands.report",
        "report",
        "Write one self-contained HTML report of a run, and print a Markdown summary.",
    )
    parser.add_argument(
        "run",
        type=Path,
        help="the run: a saved report (fieldeval.harness.reports.save_report) or a compact results file",
    )
    parser.add_argument(
        "more",
        type=Path,
        nargs="*",
        metavar="RUN",
        help="further candidates (needs --against): one page of every run against the baseline, with the "
        "leaderboard compare prints for them, quality against cost and a field-by-candidate map of changes; "
        "the exit code then says whether the recommended run passes every gate",
    )
    parser.add_argument("--against", type=Path, help="the baseline run to compare with, saved the same way")
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="with two or more RUNs: a JSON price table by model id, to place each run at its cost per 1,000 "
        "documents (no prices are built in)",
    )
    parser.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="RULE",
        help="a compare gate, e.g. 'overall >= 0.9' (needs --against; repeatable; with several RUNs, applied to "
        "each run as compare applies it)",
    )
    parser.add_argument(
        "--schema",
        help="the scored model as module:Class, imported to compute each document's leaf diff afresh: for a run "
        "saved before runs stored them, or to read one with another schema (a run saved by score --out carries its "
        "own; no module a file names is ever imported)",
    )
    parser.add_argument(
        "--match-threshold",
        type=float,
        help="with --schema: the match threshold to compute the diffs at (default: the run's own, else 0.7)",
    )
    parser.add_argument(
        "--allow-scoring-change",
        action="store_true",
        help="with --against: compare two runs whose saved schema fingerprint, comparators or match threshold "
        "differ (refused otherwise); the page and the summary then say first what differs",
    )
    parser.add_argument("--out", type=Path, help="the HTML file to write (default: RUN with .html)")
    parser.add_argument("--summary", type=Path, help="also write the Markdown summary here")
    parser.add_argument(
        "--page-size", type=int, default=50, help="documents per page, on a one-run page (default %(default)s)"
    )
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="bootstrap seed (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report; 0 when every gate passes, 1 when one fails, 2 on bad input, 3 on a bug."""
    # A foreign or malformed file, a --schema that does not load: bad input. Anything else is a bug (exit 3).
    return exits.run(
        lambda: _main(argv),
        refused=REFUSED,
        note=NOTHING_WRITTEN,
        internal="fieldeval.commands.report",
        user_folder=False,
    )


REFUSED = (OSError, ValueError, ImportError)
NOTHING_WRITTEN = "; nothing was written"


def check(args: argparse.Namespace) -> None:
    """The ranges argparse cannot check; the first one broken is the error."""
    check_resamples(args.resamples)
    check_seed(args.seed)
    if args.page_size < 1:
        raise ValueError(f"--page-size must be 1 or more; got {args.page_size}")
    if args.match_threshold is not None and not 0 <= args.match_threshold <= 1:
        raise ValueError(f"--match-threshold {args.match_threshold} is outside [0, 1]; pass a score such as 0.7")


def _main(argv: Sequence[str] | None) -> int:
    request = flow.ReportRequest.from_arguments(exits.parse(parser(), argv, check))
    if request.more:
        from fieldeval.flows import report_candidates

        reported = report_candidates.report_runs(request)
    else:
        reported = flow.report_run(request)
    print(reported.summary, end="")
    print(f"Wrote {reported.page}.", file=sys.stderr)
    return EXIT_FAILED if reported.gates_failed else EXIT_PASSED


if __name__ == "__main__":
    sys.exit(main())
