"""Score your agent's structured output field by field, and save the run for `compare`.

    python -m fieldeval.commands.score --schema M:Class --cases CASES.jsonl --predictions PREDS.jsonl --out RUN.json
    python -m fieldeval.commands.score --schema M:Class --cases CASES.jsonl --task M:function --cassettes DIR \\
        --out RUN.json

Each case's `expected_output` is compared with its output by Strands Evals'
`StructuredOutputSimilarity(schema)` in one `Experiment(..., report_cls=StructuredOutputReport)`.
The outputs come from a predictions file, or from running `task(case, model)`, where `model`
replays the case's cassette (`--mode replay`, the default) or is the live model (`--mode live`:
Bedrock with AWS credentials, or any Strands Model a `--model module:function` factory returns;
each case may make at most `fieldeval.exchanges.recording.DEFAULT_MAX_CALLS` model calls). The
saved report is the report's own pydantic JSON; the per-field table and the per-case scores are
printed.

The command scores with fieldeval's faster stickler classes (`fieldeval.harness.fast_stickler`:
the same numbers, about twice as fast on long lists), here and on its workers, and says so in its
first line; `--stock-stickler` (or FIELDEVAL_STOCK_STICKLER=1) scores with stickler as shipped.

Arguments and files are checked before Strands Evals is imported, so `--help` and a bad
argument answer at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from fieldeval.commands import exits
from fieldeval.commands.logs import strands_logs
from fieldeval.files import WriteError
from fieldeval.flows import Refused
from fieldeval.flows import score as flow  # the standard library only at import: --help stays fast
from fieldeval.scale.engine import BATCH_TIMEOUT

STICKLER_NOTE = (
    "Scores with fieldeval's faster stickler classes (the same numbers, about twice as fast on long\n"
    "lists), here and on the workers, and says so in its first line; --stock-stickler or\n"
    "FIELDEVAL_STOCK_STICKLER=1 scores with stickler as shipped."
)
EXIT_OK = exits.OK
EXIT_MISSING_DEPENDENCY = exits.MISSING_DEPENDENCY
EXIT_BAD_INPUT = exits.BAD_INPUT
EXIT_BROKEN_PIPE = exits.BROKEN_PIPE


def build_parser() -> argparse.ArgumentParser:
    parser = exits.parser("fieldeval.commands.score", "score", __doc__.split("\n\n")[0].strip(), before=STICKLER_NOTE)
    parser.add_argument("--schema", required=True, help="the output model, as module:Class")
    parser.add_argument("--cases", required=True, type=Path, help="the JSONL case file")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", type=Path, help="a JSONL file of stored outputs, one per case")
    source.add_argument("--task", help="the task function task(case, model), as module:function")
    parser.add_argument("--cassettes", type=Path, help="the cassette folder the task replays (with --task)")
    parser.add_argument("--mode", choices=("replay", "live"), help="replay the cassettes (default) or call the model")
    parser.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        help="a function returning the Strands Model: the one called with --mode live (default: Bedrock); in a "
        "replay, the one each cassette's model and settings are checked against (building it opens no connection)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        help="cases in flight at once (default 4 live, the harness's 10 in a replay; fewer, said, if the "
        "open-file limit would not hold them)",
    )
    parser.add_argument(
        "--give-up-after",
        type=float,
        metavar="SECONDS",
        help="--mode live: stop the run (exit 2, nothing written) once the provider has been throttling this long "
        f"with no call succeeding, above 0 and at most {flow.MAX_GIVE_UP_AFTER:g} (default {flow.GIVE_UP_AFTER:g})",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print Strands' own log lines (its warnings, such as one per throttled call) to standard error",
    )
    parser.add_argument("--out", type=Path, help="where to write the saved report (JSON); --results can replace it")
    parser.add_argument(
        "--match-threshold",
        type=float,
        default=0.7,
        help="similarity at which list items pair and the score and recall a case needs to pass, in [0, 1] "
        "(default 0.7)",
    )
    parser.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="a JSON price table by model id, to print what the run's tokens cost (no prices are built in)",
    )
    parser.add_argument(
        "--failures", action="store_true", help="also print the failures by kind per field path (list indices folded)"
    )
    parser.add_argument(
        "--stock-stickler",
        action="store_true",
        help="score with stickler as shipped, here and on the workers, instead of fieldeval's faster stickler "
        "classes (the same numbers; the first line says when they are on); also FIELDEVAL_STOCK_STICKLER=1",
    )
    add_scale_arguments(parser)
    return parser


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """The scale-out options: when any is given, stored outputs are scored fanned out (`fieldeval.flows.score`).

    The saved report (`--out`) is the same file one process writes; `--results` writes the compact
    per-document file as batches finish; with `--results` alone no report is held, so memory is
    bounded by the batch size. The agent runs of `--task` are not repeated on workers.
    """
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
        "--results", type=Path, help="also write the compact per-document results file (JSONL) that compare reads"
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


def main(argv: list[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command; returns the exit code (`exits.run`: a closed pipe, Ctrl-C, a missing library).

    The tables and summaries go to `out` (standard output), every error to `err` (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    return exits.run(lambda: _main(argv, out, err), err=err, extra="cluster")


def _main(argv: list[str] | None, out: TextIO, err: TextIO) -> int:
    from fieldeval.scale.engine import EngineError

    request = flow.ScoreRequest.from_arguments(build_parser().parse_args(argv))
    try:
        with strands_logs(request.verbose, err):
            scored = flow.score_run(request, out, err)
    except Refused as exc:
        print(exits.nothing_written(exc), file=err)
        return EXIT_BAD_INPUT
    except WriteError as exc:  # the old file is whole and no temporary file is left
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    except EngineError as exc:
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_MISSING_DEPENDENCY if exc.missing else EXIT_BAD_INPUT
    print(flow.summarize(scored), file=out)
    if scored.report is not None and request.out is not None:
        print(f"Saved the report to {request.out}.", file=out)
    if request.failures:
        from fieldeval.attribution.kinds import failures_text

        print("\nFailures by kind (per field path, list indices folded):", file=out)
        print(failures_text(flow.failures(request, scored)), file=out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
