"""`python -m helpers.commands.report RUN.json [--against OLD.json --gate RULE ...]` (also `eval-report`).

Writes one self-contained HTML file (no network, no server: a CI artifact to open) with the
per-field table, the interval chart of a comparison, the gates, the failures by kind and each
document's leaf diff, and prints a short Markdown summary (also written with `--summary`), for a
CI job's summary page. Exit codes: `helpers.commands.exits` (printed by --help).

Arguments, rules and files are checked before pandas, matplotlib or stickler are imported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from helpers.commands import exits
from helpers.compare.gates import GateError, parse_gate
from helpers.compare.params import RESAMPLES, SEED, check_resamples, check_seed
from helpers.outputs import OutputError, check_output, refuse_overlap

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = exits.OK, exits.GATE_FAILED, exits.BAD_INPUT, exits.INTERNAL


def parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "helpers.commands.report",
        "report",
        "Write one self-contained HTML report of a run, and print a Markdown summary.",
    )
    parser.add_argument(
        "run", type=Path, help="the run: a saved report (helpers.harness.reports.save_report) or a compact results file"
    )
    parser.add_argument("--against", type=Path, help="the baseline run to compare with, saved the same way")
    parser.add_argument(
        "--gate",
        action="append",
        default=[],
        metavar="RULE",
        help="a compare gate, e.g. 'overall >= 0.9' (needs --against; repeatable)",
    )
    parser.add_argument(
        "--schema",
        help="the scored model as module:Class, for leaf diffs of a saved report (a results file names its own)",
    )
    parser.add_argument(
        "--match-threshold", type=float, help="the evaluator's match threshold (default: the results file's, else 0.7)"
    )
    parser.add_argument("--out", type=Path, help="the HTML file to write (default: RUN with .html)")
    parser.add_argument("--summary", type=Path, help="also write the Markdown summary here")
    parser.add_argument("--page-size", type=int, default=50, help="documents per page (default %(default)s)")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help="bootstrap resamples (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SEED, help="bootstrap seed (default %(default)s)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Write the report; 0 when every gate passes, 1 when one fails, 2 on bad input, 3 on a bug."""
    # A foreign or malformed file, a schema that does not load: bad input. Anything else is a bug (exit 3).
    return exits.run(lambda: _main(argv), refused=REFUSED, note=NOTHING_WRITTEN, internal="helpers.commands.report")


REFUSED = (OSError, ValueError, ImportError)
NOTHING_WRITTEN = "; nothing was written"


def _refuse(message: object) -> int:
    return exits.refuse(message, note=NOTHING_WRITTEN)


def _main(argv: Sequence[str] | None) -> int:
    arguments = parser()
    args = arguments.parse_args(argv)
    for check, value in ((check_resamples, args.resamples), (check_seed, args.seed)):
        try:
            check(value)
        except ValueError as exc:
            arguments.error(str(exc))
    if args.page_size < 1:
        arguments.error(f"--page-size must be 1 or more; got {args.page_size}")
    if args.match_threshold is not None and not 0 <= args.match_threshold <= 1:
        arguments.error(f"--match-threshold {args.match_threshold} is outside [0, 1]; pass a score such as 0.7")
    if args.gate and args.against is None:
        return _refuse("--gate compares two runs: pass the baseline with --against OLD.json")
    try:
        gates = [parse_gate(rule) for rule in args.gate]
    except GateError as exc:
        return _refuse(exc)
    for option, path in (("RUN", args.run), ("--against", args.against)):
        if path is not None and not path.is_file():
            return _refuse(f"{option} {path}: no such file; pass a saved report or a compact results file")
    out = args.out or args.run.with_suffix(".html")
    outputs = {"--out": out} | ({"--summary": args.summary} if args.summary is not None else {})
    try:  # the checks every command makes of its outputs: no link, device or folder, and no input overwritten
        for option, path in outputs.items():
            check_output(path, option)
        refuse_overlap(outputs, {"RUN": args.run, "--against": args.against})
    except OutputError as exc:
        return _refuse(exc)
    return _write(args, gates, out)


def _spec(args: argparse.Namespace) -> object | None:
    """stickler's compiled comparison for the leaf diffs: from --schema, else the schema the run was scored with."""
    import stickler

    from helpers.compare.reading import is_results_file
    from helpers.formats.results import read_header
    from helpers.formats.run_info import RUN_KEY, read_run_info
    from helpers.harness.reports import load_run_info
    from helpers.harness.schema import load_schema, recorded_schema

    if args.schema is not None:
        threshold = 0.7 if args.match_threshold is None else args.match_threshold
        return stickler.eval_for(load_schema(args.schema), match_threshold=threshold)
    if is_results_file(args.run):
        header = read_header(args.run)
        info = read_run_info({RUN_KEY: header.run}) if header.run else None
        schema, fingerprint, threshold = header.schema_, info.schema_sha256 if info else None, header.match_threshold
    else:  # a saved report names its own schema when score wrote it
        info = load_run_info(args.run)
        if info is None:
            return None
        schema, fingerprint, threshold = info.schema_, info.schema_sha256, info.match_threshold
    threshold = threshold if args.match_threshold is None else args.match_threshold
    return stickler.eval_for(recorded_schema(schema, fingerprint, args.run), match_threshold=threshold)


def _write(args: argparse.Namespace, gates: list, out: Path) -> int:
    from helpers.files import switch_files
    from helpers.render import extra_missing

    try:
        from helpers.report.content import build
        from helpers.report.page import render
        from helpers.report.summary import summary
    except ImportError as exc:  # a slim install: the page's chart and template are the report extra
        raise extra_missing(exc, "report", "the report page's chart and template") from exc

    content = build(
        args.run, old_path=args.against, gates=gates, spec=_spec(args), resamples=args.resamples, seed=args.seed
    )
    text = summary(content, out.name)
    writes = {out: render(content, page_size=args.page_size)}
    if args.summary is not None:
        writes[args.summary] = text
    switch_files(writes)  # the page and the summary appear together, or neither does
    print(text, end="")
    print(f"Wrote {out}.", file=sys.stderr)
    return EXIT_FAILED if content.gates_failed else EXIT_PASSED


if __name__ == "__main__":
    sys.exit(main())
