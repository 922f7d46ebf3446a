"""`python -m helpers.commands.compare OLD NEW [--gate RULE ...]` (also installed as `eval-compare`).

Compares two saved runs (saved reports, or compact per-document results files) over the cases
they share, prints the tables, and applies the gates. Exit codes: `helpers.commands.exits`
(printed by --help).

Arguments are parsed and range-checked, rules parsed and files found before numpy, pandas or
stickler are imported, so `--help` and every such error answer at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.commands import exits
from helpers.compare.gates import GateError, GateResult, gates_table, interval_note, parse_gate
from helpers.compare.params import (
    CONFIDENCE,
    INTERVAL_MODES,
    JOINT,
    MAX_RESAMPLES,
    MAX_SEED,
    RESAMPLES,
    SEED,
    check_confidence,
    check_resamples,
    check_run_file,
    check_seed,
)
from helpers.outputs import OutputError, check_output, refuse_overlap

if TYPE_CHECKING:
    import pandas as pd

    from helpers.compare.runs import Comparison

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERNAL = exits.OK, exits.GATE_FAILED, exits.BAD_INPUT, exits.INTERNAL


def parser() -> argparse.ArgumentParser:
    """The command's arguments; argparse itself exits 2 on a missing or malformed one."""
    parser = exits.parser(
        "helpers.commands.compare", "compare", "Compare two saved StructuredOutputReport runs and gate on the result."
    )
    parser.add_argument(
        "old",
        type=Path,
        help="the baseline run: a report saved with helpers.harness.reports.save_report, or a compact results file",
    )
    parser.add_argument("new", type=Path, help="the run under test, saved the same way")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Compare two saved runs; 0 when every gate passes, 1 when one fails, 2 on bad input, 3 on a bug."""
    # A foreign or malformed file, nothing to pair: bad input. Anything else is a bug (exit 3).
    refused = (OSError, ValueError, RecursionError, MemoryError)
    return exits.run(lambda: _main(argv), refused=refused, internal="helpers.commands.compare")


def _main(argv: Sequence[str] | None) -> int:
    arguments = parser()
    args = arguments.parse_args(argv)
    for check, value in (
        (check_resamples, args.resamples),
        (check_seed, args.seed),
        (check_confidence, args.confidence),
    ):
        try:
            check(value)
        except ValueError as exc:
            arguments.error(str(exc))
    if args.top < 0:
        arguments.error(f"--top must be 0 or more; got {args.top}")
    try:
        gates = [parse_gate(rule) for rule in args.gate]
        for path in (args.old, args.new):
            check_run_file(path)
        if args.json is not None:
            check_output(args.json, "--json")
            refuse_overlap({"--json": args.json}, {"the old run": args.old, "the new run": args.new})
    except (OSError, GateError, OutputError) as exc:
        return exits.refuse(exc)
    return _compare(args, gates)


def _compare(args: argparse.Namespace, gates: list) -> int:
    from helpers.compare.gates import evaluate_gates, gated_intervals
    from helpers.compare.reading import read_run_file
    from helpers.compare.runs import compare_runs
    from helpers.formats.prices import read_prices

    old = read_run_file(args.old)
    new = read_run_file(args.new)
    comparison = compare_runs(old, new, resamples=args.resamples, seed=args.seed, confidence=args.confidence)
    results = evaluate_gates(gates, comparison, intervals=args.intervals)
    prices = read_prices(args.prices) if args.prices is not None else None
    # once: on many paths each call re-draws evicted chunks of resampled sums; gated rows print what their gate read
    fields = comparison.field_table(gated=gated_intervals(results))
    if args.json is not None:
        _save(args.json, comparison, results, args.intervals, fields)
    _show(report_text(comparison, results, top=args.top, fields=fields, prices=prices))
    return EXIT_FAILED if any(not result.passed for result in results) else EXIT_PASSED


def _save(
    output: Path, comparison: Comparison, results: Sequence[GateResult], intervals: str, fields: pd.DataFrame
) -> None:
    """The comparison's overall row, its per-field changes and the gate results, written in one step."""
    import json

    from helpers.compare.gates import gate_records, gated_intervals
    from helpers.files import write_text_atomically

    overall = gated_intervals(results).get("overall") or comparison.delta("overall")
    record = {
        "old": comparison.old_run.source,
        "new": comparison.new_run.source,
        "paired_cases": len(comparison.pairing.cases),
        "resamples": comparison.resamples,
        "seed": comparison.seed,
        "confidence": comparison.confidence,
        "interval_mode": intervals,
        "overall": {"delta": overall.estimate, "low": overall.low, "high": overall.high, "verdict": overall.verdict},
        "fields": fields.to_dict(orient="records"),
        "gates": gate_records(results, comparison.confidence),
    }
    try:
        write_text_atomically(output, json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise OSError(f"--json {output}: could not write ({exc.strerror or exc}); nothing was written") from None


def _show(text: str) -> None:
    """Print the tables; a reader that stops early (`| head`) ends the command with `exits.BROKEN_PIPE`."""
    print(text, flush=True)


def provenance(comparison: Comparison, fields: pd.DataFrame, prices: dict | None = None) -> list[str]:
    """Where each run's outputs came from, quality beside cost, and the money, given a price table."""
    from helpers.formats.prices import cost_line
    from helpers.formats.run_info import provenance_lines

    old, new = comparison.old_run.info, comparison.new_run.info
    lines = provenance_lines(old, new, comparison.headline(fields))
    if prices is not None and lines:
        lines += [f"old {cost_line(old, prices)}; new {cost_line(new, prices)}"]
    return lines


def report_text(
    comparison: Comparison,
    results: Sequence[GateResult],
    top: int = 5,
    fields: pd.DataFrame | None = None,
    prices: dict | None = None,
) -> str:
    """Everything the command line prints, as plain text (`fields`: the field table, if already computed)."""
    from helpers.compare.gates import gated_intervals

    old_run, new_run = comparison.old_run, comparison.new_run
    gated = gated_intervals(results)
    fields = comparison.field_table(gated=gated) if fields is None else fields

    def show(table: pd.DataFrame) -> str:
        return table.to_string(index=False, float_format=lambda value: f"{value:.3f}")

    level = f"{comparison.confidence:.0%}"
    parts = [
        f"old: {old_run.source}  new: {new_run.source}",
        f"paired {len(comparison.pairing.cases)} cases; left out {len(comparison.pairing.excluded)}",
        *provenance(comparison, fields, prices),
    ]
    if comparison.pairing.excluded:
        parts.append(show(comparison.pairing.table()))
    unreadable = [run.columns.unreadable(comparison.pairing.cases) for run in (old_run, new_run)]
    if any(unreadable):
        parts.append(
            f"outputs not readable as the schema (scored 0, no field counts): old {unreadable[0]}, new {unreadable[1]}"
        )
    parts += [
        "",
        f"Overall ({level} paired bootstrap over documents, {comparison.resamples} resamples, seed {comparison.seed})",
        show(comparison.overall_table(gated)),
        "",
        "Per field",
        show(fields),
        "",
        f"Documents that moved most (top {top})",
        show(comparison.movers(limit=top)),
    ]
    if results:
        failed = sum(not result.passed for result in results)
        parts += ["", f"Gates: {len(results) - failed} passed, {failed} failed"]
        note = interval_note(results, comparison.confidence)
        parts += [note] if note else []
        parts.append(show(gates_table(results)))
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
