"""`score --workers N`, `--cluster ADDRESS|local` and `--results PATH`: the score command, fanned out.

The options are added to `python -m helpers.commands.score` by `add_arguments`, checked with the standard
library only (so `--help` and a bad option answer at once), and used by `score_predictions` in
place of the one-process scoring step when any is given. The saved report (`--out`) is the
same file one process writes; `--results` writes the compact per-document file as batches
finish; with `--results` alone no report is held, so memory is bounded by the batch size.

Fan-out scores stored outputs (`--predictions`): the agent runs of `--task` are not repeated
on workers.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from helpers.scale.engine import BATCH_TIMEOUT, EngineError  # the standard library only: --help stays quick

# The per-field table's columns, named as stickler names them, so a column copied into code is a key.
FIELD_COLUMNS = ("tp", "fn", "fa", "fd", "cm_precision", "cm_recall", "cm_f1")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the scale-out options to the score command's parser."""
    group = parser.add_argument_group("scoring at scale (with --predictions)")
    group.add_argument(
        "--workers", type=int, help="score on N local processes; with --cluster local, the number of Dask workers"
    )
    group.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="score on a Dask cluster: a scheduler address (tcp://host:8786), or `local` to start one "
        "(needs pip install '.[cluster]')",
    )
    group.add_argument(
        "--results", type=_path, help="also write the compact per-document results file (JSONL) that compare reads"
    )
    group.add_argument("--batch-size", type=int, default=32, help="documents per batch sent to a worker (default 32)")
    group.add_argument(
        "--batch-timeout",
        type=float,
        default=BATCH_TIMEOUT,
        metavar="SECONDS",
        help="a batch still running after this long is scored 0, named, and its local worker replaced "
        f"(default {BATCH_TIMEOUT:g})",
    )
    group.add_argument(
        "--beyond-cores", action="store_true", help="allow more --workers than this machine has CPU cores"
    )
    group.add_argument(
        "--fan-out",
        choices=("auto", "always"),
        default="auto",
        help="auto (default): a run too small to win back the workers' start-up is scored in one process; "
        "always: use the workers whatever the size",
    )


def _path(text: str) -> Any:
    from pathlib import Path

    return Path(text)


def wanted(args: argparse.Namespace) -> bool:
    """Whether any scale-out option was given."""
    return args.workers is not None or args.cluster is not None or args.results is not None


def problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the scale-out options, as the sentence the user sees; None if nothing."""
    if args.out is None and args.results is None:
        return "Name where the run goes: --out RUN.json (the saved report), --results RUN.jsonl (compact), or both."
    if args.workers is not None and args.workers < 1:
        return f"--workers {args.workers}: give a whole number of processes, at least 1."
    if args.batch_size < 1:
        return f"--batch-size {args.batch_size}: give a whole number of documents, at least 1."
    if not args.batch_timeout > 0:
        return f"--batch-timeout {args.batch_timeout:g}: give a number of seconds above 0, such as 300."
    if args.cluster is not None:
        wrong = cluster_problem(args.cluster)
        if wrong is not None:
            return wrong
    if (args.workers is not None or args.cluster is not None) and args.predictions is None:
        return (
            "--workers and --cluster score stored outputs: score --predictions P.jsonl; a --task run "
            "is scored in one process."
        )
    if args.results is not None:
        if args.results.is_dir():
            return f"--results {args.results} is a folder; name the results file, such as {args.results / 'run.jsonl'}."
        inputs = {path.resolve() for path in (args.cases, args.predictions, args.out) if path is not None}
        if args.results.resolve() in inputs:
            return f"--results {args.results} would overwrite another file of this run; name a new file."
    return None


def cluster_problem(address: str) -> str | None:
    """What is wrong with a `--cluster` value, checked before anything starts; None if it can be used.

    A Dask scheduler address is `tcp://HOST:PORT` or `tls://HOST:PORT` (the `tcp://` may be left
    out); `local` starts a cluster here.
    """
    import re

    fix = "give a scheduler address such as tcp://10.0.0.5:8786, or `local` to start a cluster here"
    if address == "local":
        return None
    if address.strip() == "local":
        return f"--cluster {address!r}: remove the spaces around `local`."
    if address.startswith(("http://", "https://")):
        return f"--cluster {address}: that is a web (dashboard) address, not the scheduler's; {fix}."
    match = re.fullmatch(
        r"(?:(tcp|tls)://)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})", address
    )
    if match is None:
        return f"--cluster {address!r} is not a scheduler address; {fix}."
    if not 1 <= int(match.group(3)) <= 65535:
        return f"--cluster {address}: port {match.group(3)} is outside 1-65535; {fix}."
    return None


def engine_errors() -> type[EngineError]:
    """The error an engine raises when it cannot start, for the command to report with its exit code."""
    return EngineError


def write_results(report: Any, args: argparse.Namespace, out: TextIO, run_info: dict | None = None) -> None:
    """Write the compact results file of a report scored in one process (a `--task` run)."""
    import stickler

    from helpers.formats.results import ResultsHeader, ResultsWriter
    from helpers.harness.results import rows_from_report
    from helpers.harness.schema import load_schema

    spec = stickler.eval_for(load_schema(args.schema), match_threshold=args.match_threshold)
    header = ResultsHeader(schema=args.schema, match_threshold=args.match_threshold, failures=True, run=run_info)
    with ResultsWriter(args.results, header) as writer:
        for row in rows_from_report(report, spec):
            writer.write(row)
    print(f"Wrote {writer.count} document row(s) to {args.results}.", file=out)


def score_predictions(
    args: argparse.Namespace, cases: list, predictions: dict, out: TextIO, err: TextIO, run_info: dict | None = None
) -> Any:
    """Score stored outputs at scale; writes `--out` and `--results`; returns the report, or None.

    The tables and the final line go to `out`; warnings (a worker count capped at the cores, a
    case scored 0 because its batch failed) to `err`, as every command's messages do.

    Raises:
        helpers.scale.engine.EngineError: If the engine cannot start (Dask missing, no scheduler).
    """
    from helpers.harness.reports import save_report
    from helpers.scale.batches import Scorer
    from helpers.scale.engine import cores, local_workers, require_dask
    from helpers.scale.progress import progress_bar
    from helpers.scale.run import kept_here, score_at_scale

    if args.cluster is None or args.cluster == "local":
        workers = local_workers(args.workers, args.beyond_cores)
        if args.workers is not None and workers < args.workers:
            print(
                f"--workers {args.workers}: this machine has {cores()} CPU core(s); using {workers} "
                "(pass --beyond-cores to start more).",
                file=err,
            )
        if args.cluster is None and args.workers is None:
            workers = 1  # --results alone: one process
    else:
        workers = 1
    pairs = [(case, predictions[case.name]) for case in cases]
    scorer = Scorer(args.schema, args.match_threshold, directory=os.getcwd())
    if args.cluster is not None:
        require_dask()  # also for a run kept here: a missing Dask is said whatever the size
    here = kept_here(pairs, workers or 1, args.cluster, args.fan_out)
    if here is not None and args.results is None:  # the report only, in this process: the one-process step
        report, failed = score_here(cases, predictions, scorer, here, out)
        summary = None
    else:
        run = score_at_scale(
            pairs,
            scorer,
            workers=workers or 1,
            cluster=args.cluster,
            batch_size=args.batch_size,
            keep_report=args.out is not None,
            results=args.results,
            progress=progress_bar(out),
            batch_timeout=args.batch_timeout,
            fan_out=args.fan_out,
            run_info=run_info,
        )
        report, summary = run.report, run.summary
        failed = [(name, summary.reasons[name]) for name in summary.failed]
    for name, reason in failed:
        print(f"could not be scored, scored 0: case {name!r}: {reason}", file=err)
    if summary is not None and args.results is not None:
        print(f"Wrote {summary.documents} document row(s) to {args.results}.", file=out)
    if report is not None:
        save_report(report, args.out, run_info)
        return report
    print_summary(summary, out)
    return None


def score_here(cases: list, predictions: dict, scorer: Any, engine: str, out: TextIO) -> tuple[Any, list]:
    """`score_stored`, the one-process scoring step, with the final line; returns the report and what failed.

    The failed cases come as `(name, reason)`: those the harness could not score.
    """
    from helpers.harness.results import failed_cases
    from helpers.harness.scoring import score_stored
    from helpers.scale.progress import progress_bar

    progress = progress_bar(out)
    progress.start(len(cases), engine)
    try:
        report = score_stored(cases, predictions, scorer.evaluator())
        failed = failed_cases(report)
        progress.advance(len(cases), len(failed))
    finally:
        progress.finish()
    return report, failed


def print_summary(summary: Any, out: TextIO) -> None:
    """The per-field counts and the overall numbers of a run scored to the compact file only."""
    from helpers.render.text import text_table

    def ratio(part: float, whole: float) -> float:
        return part / whole if whole else 0.0

    rows = []
    for path, counts in summary.counts.items():
        precision = ratio(counts.tp, counts.tp + counts.fp)
        recall = ratio(counts.tp, counts.tp + counts.fn)
        f1 = ratio(2 * precision * recall, precision + recall)
        rows.append((path, counts.tp, counts.fn, counts.fa, counts.fd, precision, recall, f1))
    rows.sort(key=lambda row: (row[-1], row[0]))
    print("Per field:", file=out)
    print(text_table(("field", *FIELD_COLUMNS), rows), file=out)
    print(
        f"\nOverall score {summary.overall_score:.3f}; {summary.passed} of {summary.documents} case(s) pass.", file=out
    )
