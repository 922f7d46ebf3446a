"""Score your agent's structured output field by field, and save the run for `compare`.

    python -m helpers.commands.score --schema M:Class --cases CASES.jsonl --predictions PREDICTIONS.jsonl --out RUN.json
    python -m helpers.commands.score --schema M:Class --cases CASES.jsonl --task M:function --cassettes DIR \\
        --out RUN.json

Each case's `expected_output` is compared with its output by Strands Evals'
`StructuredOutputSimilarity(schema)` in one `Experiment(..., report_cls=StructuredOutputReport)`.
The outputs come from a predictions file, or from running `task(case, model)`, where `model`
replays the case's cassette (`--mode replay`, the default) or is the live model (`--mode live`:
Bedrock with AWS credentials, or any Strands Model a `--model module:function` factory returns;
each case may make at most `helpers.exchanges.recording.DEFAULT_MAX_CALLS` model calls). The
saved report is the report's own pydantic JSON; the per-field table and the per-case scores are
printed.

Arguments and files are checked before Strands Evals is imported, so `--help` and a bad
argument answer at once.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from helpers import outputs
from helpers.commands import exits
from helpers.commands import scale_options as scale  # standard library only at import: --help stays fast
from helpers.errors import EvalError
from helpers.files import WriteError, one_step

EXIT_OK = exits.OK
EXIT_MISSING_DEPENDENCY = exits.MISSING_DEPENDENCY
EXIT_BAD_INPUT = exits.BAD_INPUT
EXIT_BROKEN_PIPE = exits.BROKEN_PIPE
MODE_VARIABLE = "EVAL_NOTEBOOKS_MODE"  # helpers.mode.ENV_VAR, which tests set to replay
DEFAULT_CONCURRENCY = 4  # live cases in flight: helpers.exchanges.recorder.DEFAULT_CONCURRENCY, which says why
HARNESS_WORKERS = 10  # Experiment.run_evaluations_async's own default, for a replay


class BadInput(EvalError, ValueError):
    """Ends the command with exit 2; the message is the one paragraph the user sees."""


def build_parser() -> argparse.ArgumentParser:
    parser = exits.parser("helpers.commands.score", "score", __doc__.split("\n\n")[0].strip())
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
        help="cases in flight at once (default 4 live, the harness's 10 in a replay)",
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
    scale.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command; returns the exit code (`exits.run`: a closed pipe, Ctrl-C, a missing library).

    The tables and summaries go to `out` (standard output), every error to `err` (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    return exits.run(lambda: _main(argv, out, err), err=err, extra="cluster")


def _main(argv: list[str] | None, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        mode = check_arguments(args)
        with one_step():  # --out and --results: both written, or neither
            report = run(args, mode, out, err)
    except BadInput as exc:
        print(f"{exc}{chr(10) if chr(10) in str(exc) else ' '}Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    except outputs.OutputError as exc:
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    except WriteError as exc:  # the old file is whole and no temporary file is left
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    except scale.engine_errors() as exc:
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_MISSING_DEPENDENCY if exc.missing else EXIT_BAD_INPUT
    if report is not None:  # None: scored to --results only, whose summary is printed
        print_report(report, out)
        if args.out is not None:
            print(f"Saved the report to {args.out}.", file=out)
    if args.failures:
        print_failures(report, args, out)
    return EXIT_OK


def check_arguments(args: argparse.Namespace) -> str | None:
    """Refuse bad arguments and missing files with the standard library only; returns the mode (task runs)."""
    if not 0.0 <= args.match_threshold <= 1.0:
        raise BadInput(f"--match-threshold {args.match_threshold} is outside [0, 1]; pass a score such as 0.7.")
    _need_file(args.cases, "--cases", "the JSONL case file")
    if args.prices is not None:
        _need_file(args.prices, "--prices", "a JSON price table by model id")
    if args.predictions is not None:
        if any(value is not None for value in (args.cassettes, args.mode, args.model, args.concurrency)):
            raise BadInput(
                "--cassettes, --mode, --model and --concurrency go with --task; scoring --predictions runs no agent."
            )
        _need_file(args.predictions, "--predictions", "the JSONL predictions file")
        mode = None
    else:
        mode = args.mode or "replay"
        forced = os.environ.get(MODE_VARIABLE, "").strip().lower()
        if args.concurrency is not None and args.concurrency < 1:
            raise BadInput(f"--concurrency {args.concurrency}: at least one case must be in flight; pass 4.")
        if mode == "live" and forced == "replay":
            raise BadInput(f"--mode live, but {MODE_VARIABLE}=replay forbids live calls; unset it to call Bedrock.")
        if mode == "replay":
            if args.cassettes is None:
                raise BadInput("--task in replay mode needs --cassettes DIR, the folder its exchanges are in.")
            if not args.cassettes.is_dir():
                raise BadInput(
                    f"--cassettes {args.cassettes}: no such folder; record it with `python -m helpers.commands.record` "
                    "(same --schema, --cases, --task and --cassettes)."
                )
    for option, path in _outputs(args).items():
        outputs.check_output(path, option)
    outputs.refuse_overlap(_outputs(args), {"--cases": args.cases, "--predictions": args.predictions})
    problem = scale.problem(args)
    if problem is not None:
        raise BadInput(problem)
    return mode


def run(args: argparse.Namespace, mode: str | None, out: TextIO, err: TextIO) -> Any:
    """Load everything, score it in one call, and save the report; raises `BadInput` on bad data.

    What the run reports goes to `out`; a scaled run's warnings go to `err`.
    """
    from strands_evals.evaluators import StructuredOutputSimilarity

    from helpers.exchanges.fixtures import FixtureError
    from helpers.formats.prices import PricesError, read_prices
    from helpers.harness.cases import CaseFileError, load_cases, load_predictions
    from helpers.harness.reports import save_report
    from helpers.harness.schema import SchemaError, load_schema, load_task
    from helpers.harness.scoring import score_stored, score_task_sync

    try:
        prices = read_prices(args.prices) if args.prices is not None else None
        schema = load_schema(args.schema)
        cases = load_cases(args.cases, schema)
        if args.predictions is not None:
            predictions = load_predictions(args.predictions, schema, cases)
            print(f"Scoring {len(cases)} case(s) from {args.predictions}.", file=out)
        else:
            assert mode is not None  # check_arguments gives every --task run its mode
            agent = AgentRun(load_task(args.task), schema, args, mode, cases, out)
    except (SchemaError, CaseFileError, FixtureError, PricesError) as exc:
        raise BadInput(str(exc).rstrip(".") + ".") from exc
    outputs.refuse_overlap(_outputs(args), _run_inputs(args, cases))  # the modules are known once imported
    if args.predictions is not None and scale.wanted(args):  # the same step in batches, on workers
        run_info = describe_run(args, schema, _predicted(args, cases))
        return scale.score_predictions(args, cases, predictions, out, err, run_info)
    evaluator = StructuredOutputSimilarity(schema, match_threshold=args.match_threshold)
    if args.predictions is not None:
        report = score_stored(cases, predictions, evaluator)  # the harness's report, scored in this thread
    else:
        try:
            report = score_task_sync(
                cases, agent.task, evaluator, max_workers=agent.concurrency
            )  # the one scoring step
        except KeyboardInterrupt:
            raise KeyboardInterrupt(agent.interrupted()) from None
        agent.finish(out)
        agent.refuse_if_incomplete()
    sources = _predicted(args, cases) if args.predictions is not None else agent.sources()
    if args.predictions is None:
        from helpers.exchanges.usage import total

        measured = all(source["origin"] == "model" for source in sources.values())
        what = "Model use" if measured else "Model use as the cassettes record it (not all from a model)"
        print(f"{what}: {total(agent.usages().values()).describe()}.", file=out)
    run_info = describe_run(args, schema, sources)
    if prices is not None:
        from helpers.formats.prices import cost_line
        from helpers.formats.run_info import RunInfo

        print(f"Model {cost_line(RunInfo.model_validate(run_info), prices)}.", file=out)
    if args.results is not None:
        scale.write_results(report, args, out, run_info)
    if args.out is not None:
        save_report(report, args.out, run_info)
    return report


def _predicted(args: argparse.Namespace, cases: list) -> dict[str, dict[str, Any]]:
    return {case.name: {"origin": "predictions", "file": str(args.predictions)} for case in cases}


def describe_run(args: argparse.Namespace, schema: Any, sources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The saved run's self-description: schema, threshold, the comparators stickler used, each case's source."""
    import stickler

    from helpers.formats.run_info import RunInfo, comparators_of, schema_fingerprint

    spec = stickler.eval_for(schema, match_threshold=args.match_threshold)
    described = {
        "schema": args.schema,
        "schema_sha256": schema_fingerprint(schema),
        "match_threshold": args.match_threshold,
        "comparators": comparators_of(spec),
        "cases": sources,
    }
    return RunInfo.model_validate(described).to_json()


class AgentRun:
    """The harness task around `task(case, model)` with this run's models, and what it found on the way.

    In a replay every cassette is checked before any agent runs (and, given `--model`, its model and
    settings against that model's); a refused cassette does not stop the others, so every stale case
    is listed at once, with the one `record` command that re-records exactly them.
    """

    def __init__(
        self,
        user_task: Callable[[Any, Any], Any],
        schema: Any,
        args: argparse.Namespace,
        mode: str,
        cases: list,
        out: TextIO,
    ) -> None:
        from helpers.exchanges.live_progress import CaseProgress
        from helpers.harness.tasks import checked_task

        self.args, self.mode, self.names = args, mode, [case.name for case in cases]
        self.stale: dict[str, str] = {}
        self.exchanges: dict[str, Any] = {}
        self.recorders: dict[str, Any] = {}
        self.backoff: Any = None  # live: the one back-off every case in flight shares
        self.progress = CaseProgress(len(cases), sys.stderr, what="scored live")
        models = self._live(args, cases, out) if mode == "live" else self._replays(args, schema, cases, out)
        self.concurrency = args.concurrency or (DEFAULT_CONCURRENCY if mode == "live" else HARNESS_WORKERS)
        self.task, self.problems = checked_task(
            self._counted(user_task) if mode == "live" else user_task, schema, models
        )

    def _live(self, args: argparse.Namespace, cases: list, out: TextIO) -> dict[str, Callable[[], Any]]:
        from helpers.exchanges.recording import RecordingModel
        from helpers.exchanges.throttle import SharedBackoff
        from helpers.services.models import describe_live

        model, backoff = _live_model(args.model), SharedBackoff()  # one back-off for every case in flight
        self.backoff = backoff
        print(f"Scoring {len(cases)} case(s) live with {describe_live(model)}.", file=out)

        def recorder(name: str) -> Any:  # a fresh one per case, which bounds its calls and keeps its usage
            self.recorders[name] = RecordingModel(model, backoff=backoff)
            return self.recorders[name]

        return {case.name: partial(recorder, case.name) for case in cases}

    def _counted(self, user_task: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        def task(case: Any, model: Any) -> Any:
            self.progress.start()
            ok = False
            try:
                output = user_task(case, model)
                ok = True
                return output
            finally:
                self.progress.end(ok)

        return task

    def _replays(self, args: argparse.Namespace, schema: Any, cases: list, out: TextIO) -> dict[str, Callable[[], Any]]:
        from helpers.exchanges.cassettes import Cassettes
        from helpers.exchanges.provenance import describe_origins
        from helpers.exchanges.record_options import record_command
        from helpers.exchanges.stale import check_cassette

        given = (
            _live_model(args.model, live=False) if args.model is not None else None
        )  # building a provider opens no socket
        command = record_command(args.schema, args.cases, args.task, args.cassettes)
        self.cassettes = Cassettes(
            args.cassettes, self.names, tool_name=schema.__name__, record_command=command, output_model=schema
        )
        for name in self.names:
            exchange, reason = check_cassette(self.cassettes, name, model=given)
            if exchange is not None:
                self.exchanges[name] = exchange
            if reason is not None:
                self.stale[name] = reason
        checked = (
            f"each cassette's model and settings checked against --model {args.model}"
            if given is not None
            else "model settings not checked (pass --model to check them)"
        )
        print(
            f"Scoring {len(cases)} case(s) by replaying {args.cassettes}"
            f"{describe_origins(self.exchanges.values())}; {checked}.",
            file=out,
        )
        fresh = {name: exchange for name, exchange in self.exchanges.items() if name not in self.stale}
        return {name: partial(self.cassettes.replay, name, exchange) for name, exchange in fresh.items()}

    def finish(self, out: TextIO) -> None:
        self.progress.close()
        if self.backoff is not None and self.backoff.summary():
            print(self.backoff.summary(), file=out)
        for name, problem in list(self.problems.items()):
            if problem.stale:
                self.stale[name] = problem.reason
                del self.problems[name]

    def interrupted(self) -> str:
        """What Ctrl-C stopped: the cases run, abandoned and not started, their cost, and that nothing was written."""
        nothing = "nothing was written (--out and --results are written only when every case has run)"
        if self.mode != "live":  # a replay makes no calls: nothing was spent
            return f"Interrupted: {nothing}."
        from helpers.exchanges.usage import total

        self.progress.close()
        done, failed, in_flight = self.progress.done, self.progress.failed, self.progress.in_flight
        waiting = len(self.names) - done - failed - in_flight
        return (
            f"Interrupted: {done} of {len(self.names)} case(s) ran live, {failed} failed, {in_flight} in flight were "
            f"abandoned and {waiting} not started; the calls made cost {total(self.usages().values()).describe()}; "
            f"{nothing}."
        )

    def refuse_if_incomplete(self) -> None:
        """Raise `BadInput` listing every stale case (grouped by reason) and every task problem."""
        from helpers.exchanges.stale import grouped
        from helpers.harness.tasks import said_once

        if not self.stale and not self.problems:
            return
        lines = [f"The {self.mode} run did not complete."]
        if self.stale:
            lines.append(f"{len(self.stale)} of {len(self.names)} case(s) would be refused by their cassettes:")
            lines += [f"  {line}" for line in grouped(self.stale, self.names)]
            lines += self._fix_lines()
        if self.problems:
            lines.append(said_once(self.problems, self.names))
        raise BadInput("\n".join(lines))

    def _fix_lines(self) -> list[str]:
        """The `record --record-mode stale` command(s) that re-record exactly the stale cases, with their options."""
        from helpers.exchanges.record_options import RecordOptions, record_command

        known = [RecordOptions.of(exchange) for exchange in self.exchanges.values()]
        fallback = known[0] if known else RecordOptions(model=self.args.model)
        groups: dict[RecordOptions, list[str]] = {}
        for name in self.stale:
            exchange = self.exchanges.get(name)
            groups.setdefault(RecordOptions.of(exchange) if exchange else fallback, []).append(name)
        lines = ["Re-record exactly those with:"]
        for options, names in groups.items():
            command = record_command(
                self.args.schema, self.args.cases, self.args.task, self.args.cassettes, options, record_mode="stale"
            )
            lines.append(
                f"  {command}" + (" --only " + " ".join(shlex.quote(n) for n in names) if len(groups) > 1 else "")
            )
        return lines

    def usages(self) -> dict[str, Any]:
        """What each case's model calls cost: read from its cassette in a replay, measured live otherwise."""
        from helpers.exchanges.usage import Usage, events_usage, exchange_usage

        if self.mode == "live":
            return {
                name: events_usage(call["events"] for call in recorder.calls) + Usage(seconds=recorder.seconds)
                for name, recorder in self.recorders.items()
            }
        return {name: exchange_usage(exchange) for name, exchange in self.exchanges.items()}

    def sources(self) -> dict[str, dict[str, Any]]:
        """Where each case's output came from, for the saved run."""
        from helpers.exchanges.provenance import exchange_source, live_source

        if self.mode == "live":
            usages = self.usages()
            return {name: live_source(recorder.inner, usages[name]) for name, recorder in self.recorders.items()}
        return {name: exchange_source(exchange) for name, exchange in self.exchanges.items()}


def _live_model(factory: str | None, live: bool = True) -> Any:
    from helpers.services.bedrock import CredentialsError
    from helpers.services.models import ModelFactoryError, bedrock_model, model_from_factory

    try:
        return model_from_factory(factory) if factory is not None else bedrock_model(None, None)[0]
    except (CredentialsError, ModelFactoryError) as exc:
        raise BadInput(f"--mode live: {exc}." if live else f"{exc}.") from exc


def _outputs(args: argparse.Namespace) -> dict[str, Path]:
    return {option: path for option, path in (("--out", args.out), ("--results", args.results)) if path is not None}


def _run_inputs(args: argparse.Namespace, cases: list) -> dict[str, Path | None]:
    """Every file this run reads: the case and predictions files, the modules, each case's cassette."""
    inputs = {"--cases": args.cases, "--predictions": args.predictions}
    for option in ("schema", "task", "model"):  # each module, once imported
        if getattr(args, option, None) is not None:
            inputs[f"the --{option} module"] = outputs.module_file(getattr(args, option))
    if args.task is not None and args.cassettes is not None:
        from helpers.exchanges.cassettes import cassette_paths

        paths = cassette_paths(args.cassettes, [case.name for case in cases])
        inputs |= {f"the cassette of case {name!r}": path for name, path in paths.items()}
    return inputs


def print_report(report: Any, out: TextIO) -> None:
    """The per-field table (stickler's own key names), worst F1 first, and the per-case scores, as plain text."""
    from helpers.render.text import text_table

    fields = report.metrics().field_metrics
    rows = sorted(fields.items(), key=lambda item: (item[1].get("cm_f1", 0.0), item[0]))
    print("Per field:", file=out)
    keys = scale.FIELD_COLUMNS
    print(text_table(("field", *keys), [(path, *(counts.get(key) for key in keys)) for path, counts in rows]), file=out)
    print("\nPer case:", file=out)
    cases = report.per_case()
    table = [(row["case"], float(row["overall_score"]), "pass" if row["test_pass"] else "FAIL") for row in cases]
    print(text_table(("case", "score", "verdict"), table), file=out)
    passed = sum(1 for row in cases if row["test_pass"])
    print(f"\nOverall score {report.overall_score:.3f}; {passed} of {len(cases)} case(s) pass.", file=out)


def print_failures(report: Any, args: argparse.Namespace, out: TextIO) -> None:
    """The failures by kind per field path: from the report, or from the results file written."""
    import stickler

    from helpers.attribution.kinds import failures_text, report_diffs, results_failures, run_failures
    from helpers.harness.schema import load_schema

    if report is None:
        documents = results_failures(args.results)
    else:
        spec = stickler.eval_for(load_schema(args.schema), match_threshold=args.match_threshold)
        documents = run_failures(report_diffs(report, spec))
    print("\nFailures by kind (per field path, list indices folded):", file=out)
    print(failures_text(documents), file=out)


def _need_file(path: Path, option: str, what: str) -> None:
    if not path.is_file():
        raise BadInput(f"{option} {path}: no such file; pass {what}.")


if __name__ == "__main__":
    sys.exit(main())
