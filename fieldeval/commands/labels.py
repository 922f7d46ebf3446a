"""`python -m fieldeval.commands.labels --cases CASES RUN RUN [...] [--out FILE] [--top K]` (also `eval-labels`).

The label audit: the leaves where saved runs (`eval-score --out`) agree with each other against
the label, as one JSON line each (`case`, `path`, `label`, `proposed`, `agree`, `of`, `cost`),
most runs agreeing first, then the costliest. Agreement is decided by each field's comparator
(`fieldeval.attribution.labels`; the run, step by step: `fieldeval.flows.labels`). Only the
standard library is imported before the arguments are parsed, so `--help` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from fieldeval.commands import exits
from fieldeval.flows import labels as flow

NOTE = (
    "A leaf is a suspect when two runs or more read the same value, by the field's own comparator, and more\n"
    "runs read that value than read the label. Runs that share an error look exactly like a wrong label:\n"
    "review each suspect against the document before changing the case file."
)


def parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "fieldeval.commands.labels",
        "labels",
        "The leaves where saved runs agree with each other against the label: likely label errors, ranked.",
        before=NOTE,
    )
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="saved runs (eval-score --out), two or more")
    parser.add_argument("--cases", required=True, type=Path, help="the case file the runs were scored against")
    parser.add_argument("--out", type=Path, help="write the JSON lines to this file (atomically) instead of printing")
    parser.add_argument("--top", type=int, metavar="K", help="keep the first K suspects")
    parser.add_argument(
        "--schema",
        metavar="MODULE:CLASS",
        help="compare with this schema's own comparators and options (a numeric tolerance); default: rebuilt "
        "from the comparator names and thresholds the runs stored",
    )
    return parser


def check(args: argparse.Namespace) -> None:
    """The ranges argparse cannot check."""
    if args.top is not None and args.top < 1:
        raise ValueError(f"--top must be 1 or more; got {args.top}")


def main(argv: Sequence[str] | None = None) -> int:
    """Audit the labels; 0 audited, 2 on bad input, 3 on a bug (`exits.TABLE["labels"]`)."""
    return exits.run(
        lambda: _main(argv),
        refused=(OSError, ValueError),
        internal="fieldeval.commands.labels",
        user_folder=False,
    )


def _main(argv: Sequence[str] | None) -> int:
    audited = flow.labels_run(flow.LabelsRequest.from_arguments(exits.parse(parser(), argv, check)))
    for note in audited.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in audited.lines:
        print(line)
    if audited.written is not None:
        print(f"Saved {audited.suspects} suspect(s) to {audited.written}")
    return exits.OK


if __name__ == "__main__":
    sys.exit(main())
