"""What one `score` run does, in order: the recipe `python -m fieldeval.commands.score` follows.

    mode = check(request)                        # 1. arguments, files and output paths (standard library only)
    fast = choose_stickler(request, out)          #    fieldeval's faster stickler classes, unless turned off
    inputs = resolve(request, mode, out, fast)    # 2. schema, cases, then predictions or the task and its models
    check_overlap(request, inputs)                #    nor any module or cassette it imported or found
    with one_step():                              #    --out and --results: both written, or neither
        scored = score(request, inputs, out, err) # 3. here, on local workers, or on Dask
        account(request, inputs, scored, out)     # 4. what the model calls cost (tokens, prices)
        write(request, scored, out)               # 5. the results file and the saved report

Each output path is checked once (step 1, and in step 2 only against the modules and cassettes
found then); the schema is imported once (step 2) and travels down in the run's `Scorer`, which
builds the one evaluator and with it the one stickler spec every later step reads. Stored outputs
are always scored by `fieldeval.scale.run.score_at_scale` (in this process unless workers are asked
for and pay), whichever of `--out` and `--results` is asked for.

`score_run` is that recipe; the command parses its arguments into a `ScoreRequest`, calls it and
prints the tables of what it returns (`Scored`). Each step is the only place its refusals are
raised: `Refused` (exit 2, nothing written), and from step 3 `fieldeval.scale.engine.EngineError`
(an engine that cannot start). Standard library only at import, so `--help` and a bad argument
answer before Strands Evals is imported.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from fieldeval import outputs
from fieldeval.exchanges.throttle import GIVE_UP_AFTER, MAX_GIVE_UP_AFTER  # noqa: F401 (the command's --help)
from fieldeval.files import one_step
from fieldeval.flows import Refused, Request
from fieldeval.mode import ENV_VAR, ModeError, requested_mode
from fieldeval.scale.engine import BATCH_TIMEOUT  # the standard library only: --help stays quick


@dataclass(frozen=True)
class ScoreRequest(Request):
    """Everything a `score` run was asked, as the command line gave it."""

    schema: str
    cases: Path
    predictions: Path | None = None
    task: str | None = None
    cassettes: Path | None = None
    mode: str | None = None
    model: str | None = None
    concurrency: int | None = None
    give_up_after: float | None = None  # live only; None: fieldeval.exchanges.throttle.GIVE_UP_AFTER
    verbose: bool = False
    out: Path | None = None
    results: Path | None = None
    match_threshold: float = 0.7
    prices: Path | None = None
    failures: bool = False
    workers: int | None = None
    cluster: str | None = None
    batch_size: int = 32
    batch_timeout: float = BATCH_TIMEOUT
    beyond_cores: bool = False
    fan_out: str = "auto"
    stock_stickler: bool = False  # or STOCK_ENV_VAR=1: stickler as shipped, here and on the workers

    def outputs(self) -> dict[str, Path]:
        """The files the run writes, by option."""
        return {option: path for option, path in (("--out", self.out), ("--results", self.results)) if path}

    def inputs(self) -> dict[str, Path | None]:
        """The files the command line names for the run to read, by option: none may be an output."""
        return {"--cases": self.cases, "--predictions": self.predictions, "--prices": self.prices}

    def fanned_out(self) -> bool:
        """Whether a scale-out option was given for stored outputs (any of --workers, --cluster, --results).

        It decides only what is printed (the scoring line, no price line); every run of stored
        outputs is scored by the same step.
        """
        return self.predictions is not None and (
            self.workers is not None or self.cluster is not None or self.results is not None
        )


@dataclass
class Inputs:
    """What step 2 loaded: the schema class, the cases, and the predictions or the agent run."""

    schema: Any
    cases: list
    predictions: dict | None = None
    predicted_by: dict | None = None  # per case, the model_id and usage a predictions file gives
    agent: Any = None  # fieldeval.harness.agent_run.AgentRun, for a --task run
    prices: dict | None = None
    scorer: Any = None  # fieldeval.scale.batches.Scorer: the schema as loaded, its one evaluator and spec


@dataclass
class Scored:
    """What step 3 produced: the report (None when scored to --results only) and the run's self-description."""

    report: Any
    run_info: dict[str, Any]
    summary: Any = None  # fieldeval.scale.run.Summary, when the results file was written as batches finished
    results_written: bool = False
    usage: Any = None  # fieldeval.exchanges.usage.Usage, the task run's model calls in all
    measured: bool = False  # every case's output came from a model
    failed: list = field(default_factory=list)
    leaf_diffs: list | None = None  # every document's leaf diff as data, once found (`leaf_diffs`)
    scorer: Any = None  # the run's fieldeval.scale.batches.Scorer (its spec reads the report after the run)


def score_run(request: ScoreRequest, out: TextIO, err: TextIO) -> Scored:
    """The recipe: check, resolve, score, account, write. What the run reports goes to `out`, warnings to `err`."""
    mode = check(request)
    fast = choose_stickler(request, out)
    inputs = resolve(request, mode, out, fast)
    check_overlap(request, inputs)
    with one_step():  # --out and --results: both written, or neither
        scored = score(request, inputs, out, err)
        account(request, inputs, scored, out)
        write(request, scored, out)
    return scored


# 1. Check ------------------------------------------------------------------------------------------


def check(request: ScoreRequest) -> str | None:
    """Refuse bad arguments, missing files and unwritable outputs; returns the mode of a task run (else None)."""
    if not 0.0 <= request.match_threshold <= 1.0:
        raise Refused(f"--match-threshold {request.match_threshold} is outside [0, 1]; pass a score such as 0.7.")
    _need_file(request.cases, "--cases", "the JSONL case file")
    if request.prices is not None:
        _need_file(request.prices, "--prices", "a JSON price table by model id")
    mode = _check_source(request)
    try:  # the one check of the output paths (scale_problem leaves them to it)
        outputs.check_outputs(request.outputs(), request.inputs())
    except outputs.OutputError as exc:
        raise Refused(f"{exc}.") from exc
    problem = scale_problem(request)
    if problem is not None:
        raise Refused(problem)
    return mode


def choose_stickler(request: ScoreRequest, out: TextIO) -> bool:
    """Put fieldeval's faster stickler classes in effect for this run, and say so first; or stickler as shipped.

    This process is the command's own, so the choice is applied both ways (an earlier run in the
    same process may have made the other). `--stock-stickler` or `STOCK_ENV_VAR=1` turns the
    speed-up off; the workers follow (`Scorer.fast_stickler`). Returns whether it is in effect.
    """
    from fieldeval.harness import fast_stickler

    try:
        stock = request.stock_stickler or fast_stickler.stock_requested(os.environ)
    except ValueError as exc:
        raise Refused(f"{exc}.") from exc
    fast = fast_stickler.use(not stock)
    if fast:
        print(fast_stickler.NOTICE, file=out)
    return fast


def _check_source(request: ScoreRequest) -> str | None:
    """The predictions file, or the task's mode and cassette folder."""
    if request.predictions is not None:
        given = (request.cassettes, request.mode, request.model, request.concurrency, request.give_up_after)
        if any(value is not None for value in given):
            raise Refused(
                "--cassettes, --mode, --model, --concurrency and --give-up-after go with --task; scoring "
                "--predictions runs no agent."
            )
        _need_file(request.predictions, "--predictions", "the JSONL predictions file")
        return None
    mode = request.mode or "replay"
    try:  # a value that is no mode is a typo the user must hear of, not a silent replay
        forced = requested_mode()
    except ModeError as exc:
        raise Refused(f"{exc}.") from exc
    if request.concurrency is not None and request.concurrency < 1:
        raise Refused(f"--concurrency {request.concurrency}: at least one case must be in flight; pass 4.")
    if request.give_up_after is not None:
        from fieldeval.exchanges.throttle import give_up_problem

        if mode != "live":
            raise Refused(
                "--give-up-after bounds a live run's throttling; a replay makes no model call (pass --mode live)."
            )
        problem = give_up_problem(request.give_up_after)
        if problem is not None:
            raise Refused(problem)
    if mode == "live" and forced == "replay":
        raise Refused(f"--mode live, but {ENV_VAR}=replay forbids live calls; unset it to call Bedrock.")
    if mode == "replay":
        if request.cassettes is None:
            raise Refused("--task in replay mode needs --cassettes DIR, the folder its exchanges are in.")
        if not request.cassettes.is_dir():
            raise Refused(
                f"--cassettes {request.cassettes}: no such folder; record it with "
                "`python -m fieldeval.commands.record` (same --schema, --cases, --task and --cassettes)."
            )
    return mode


def scale_problem(request: ScoreRequest) -> str | None:
    """What is wrong with the outputs and scale-out options, as the sentence the user sees; None if nothing."""
    if request.out is None and request.results is None:
        return "Name where the run goes: --out RUN.json (the saved report), --results RUN.jsonl (compact), or both."
    if request.workers is not None and request.workers < 1:
        return f"--workers {request.workers}: give a whole number of processes, at least 1."
    if request.batch_size < 1:
        return f"--batch-size {request.batch_size}: give a whole number of documents, at least 1."
    if not request.batch_timeout > 0:
        return f"--batch-timeout {request.batch_timeout:g}: give a number of seconds above 0, such as 300."
    if request.cluster is not None:
        wrong = cluster_problem(request.cluster)
        if wrong is not None:
            return wrong
    if (request.workers is not None or request.cluster is not None) and request.predictions is None:
        return (
            "--workers and --cluster score stored outputs: score --predictions P.jsonl; a --task run "
            "is scored in one process."
        )
    return None


def cluster_problem(address: str) -> str | None:
    """What is wrong with a `--cluster` value, checked before anything starts; None if it can be used.

    A Dask scheduler address is `tcp://HOST:PORT` or `tls://HOST:PORT` (the `tcp://` may be left
    out); `local` starts a cluster here.
    """
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


def _need_file(path: Path, option: str, what: str) -> None:
    if not path.is_file():
        raise Refused(f"{option} {path}: no such file; pass {what}.")


# 2. Resolve ----------------------------------------------------------------------------------------


def resolve(request: ScoreRequest, mode: str | None, out: TextIO, fast: bool = False) -> Inputs:
    """Import the schema, read the cases and the predictions, or load the task and set up its models.

    The schema is imported here only: the run's `Scorer` carries the class (and `fast`, the
    stickler classes its workers use) to every later step.
    """
    from fieldeval.exchanges.fixtures import FixtureError
    from fieldeval.formats.prices import PricesError, read_prices
    from fieldeval.harness.agent_run import AgentRun, TaskOptions
    from fieldeval.harness.cases import CaseFileError, load_cases, load_predictions
    from fieldeval.harness.schema import SchemaError, load_schema, load_task
    from fieldeval.scale.batches import Scorer

    try:
        prices = read_prices(request.prices) if request.prices is not None else None
        schema = load_schema(request.schema)
        scorer = Scorer(
            request.schema,
            request.match_threshold,
            directory=os.getcwd(),
            leaf_diffs=request.out is not None,
            fast_stickler=fast,
            loaded=schema,
        )
        cases = load_cases(request.cases, schema)
        if request.predictions is not None:
            predicted_by: dict = {}
            predictions = load_predictions(request.predictions, schema, cases, predicted_by)
            print(f"Scoring {len(cases)} case(s) from {request.predictions}.", file=out)
            return Inputs(schema, cases, predictions, predicted_by, prices=prices, scorer=scorer)
        assert mode is not None and request.task is not None  # check gives every --task run its mode
        task = load_task(request.task)
        if mode == "live":
            model = _model(request.model, live=True)
        else:  # the model each cassette is checked against; building a provider opens no socket
            model = _model(request.model, live=False) if request.model is not None else None
        options = TaskOptions(
            request.schema,
            request.cases,
            request.task,
            request.cassettes,
            request.model,
            request.concurrency,
            request.give_up_after,
        )
        agent = AgentRun(task, schema, options, mode, cases, out, model=model)
    except (SchemaError, CaseFileError, FixtureError, PricesError) as exc:
        raise Refused(str(exc).rstrip(".") + ".") from exc
    return Inputs(schema, cases, agent=agent, prices=prices, scorer=scorer)


def _model(factory: str | None, live: bool) -> Any:
    """The model a `--model` factory returns, else Bedrock's (live only)."""
    from fieldeval.services.bedrock import CredentialsError
    from fieldeval.services.models import ModelFactoryError, bedrock_model, model_from_factory

    try:
        return model_from_factory(factory) if factory is not None else bedrock_model(None, None)[0]
    except (CredentialsError, ModelFactoryError) as exc:
        raise Refused(f"--mode live: {exc}." if live else f"{exc}.") from exc


def check_overlap(request: ScoreRequest, inputs: Inputs) -> None:
    """Refuse an output that is a file the run found in step 2: a module it imported, a cassette.

    The output paths themselves, against each other and the files the command line names, were
    checked in step 1 (`check`); only these inputs are new.
    """
    read: dict[str, Path | None] = {}
    for option in ("schema", "task", "model"):  # each module, now imported
        spec = getattr(request, option)
        if spec is not None:
            read[f"the --{option} module"] = outputs.module_file(spec)
    if request.task is not None and request.cassettes is not None:
        from fieldeval.exchanges.cassettes import cassette_paths

        paths = cassette_paths(request.cassettes, [case.name for case in inputs.cases])
        read |= {f"the cassette of case {name!r}": path for name, path in paths.items()}
    try:
        outputs.refuse_inputs(request.outputs(), read)
    except outputs.OutputError as exc:
        raise Refused(f"{exc}.") from exc


# 3. Score ------------------------------------------------------------------------------------------


def score(request: ScoreRequest, inputs: Inputs, out: TextIO, err: TextIO) -> Scored:
    """Score every case: the task run through the harness, or stored outputs by the one step for them."""
    step = _score_task if inputs.agent is not None else _score_stored
    scored = step(request, inputs, out, err)
    scored.scorer = inputs.scorer
    return scored


def _score_task(request: ScoreRequest, inputs: Inputs, out: TextIO, err: TextIO) -> Scored:
    """Run the task on every case through `Experiment` (replayed or live), then refuse what did not complete.

    No more cases are in flight than the open-file limit holds (said on `err` when that is fewer).
    """
    from fieldeval.exchanges.open_files import cases_in_flight
    from fieldeval.exchanges.usage import total
    from fieldeval.harness.scoring import score_task_sync

    agent = inputs.agent
    evaluator = inputs.scorer.evaluator()
    concurrency, lowered = cases_in_flight(agent.concurrency, len(inputs.cases))
    if lowered is not None:
        print(lowered, file=err)
    try:
        with agent.stopping_on_interrupt():  # Ctrl-C ends every back-off pause at once
            report = score_task_sync(inputs.cases, agent.task, evaluator, max_workers=concurrency)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(agent.interrupted()) from None
    agent.finish(out)
    problem = agent.incomplete()
    if problem is not None:
        raise Refused(problem)
    sources = agent.sources()
    measured = all(source["origin"] == "model" for source in sources.values())
    usage = total(agent.usages().values())
    return Scored(report, describe_run(request, inputs.scorer, sources), usage=usage, measured=measured)


def _score_stored(request: ScoreRequest, inputs: Inputs, out: TextIO, err: TextIO) -> Scored:
    """Stored outputs by `score_at_scale`: in this process, on local workers or on a Dask cluster.

    One step whatever the outputs asked for, so `--out` and `--results` score by the same path
    (in this process when no workers are asked for, or the run is too small to win them back).
    With `--results` the results file is written as batches finish (so memory is bounded by the
    batch size); with `--results` alone no report is held. The scoring line is printed when a
    scale-out option was given (`ScoreRequest.fanned_out`).
    """
    from fieldeval.scale.engine import cores, local_workers
    from fieldeval.scale.progress import progress_bar
    from fieldeval.scale.run import score_at_scale

    run_info = describe_run(request, inputs.scorer, _predicted(request, inputs))
    workers = 1  # no --workers: this process; a Dask cluster: its own workers
    if request.workers is not None and (request.cluster is None or request.cluster == "local"):
        workers = local_workers(request.workers, request.beyond_cores)
        if workers < request.workers:
            print(
                f"--workers {request.workers}: this machine has {cores()} CPU core(s); using {workers} "
                "(pass --beyond-cores to start more).",
                file=err,
            )
    elif request.cluster == "local":
        workers = local_workers(None, request.beyond_cores)
    predictions = inputs.predictions or {}
    pairs = [(case, predictions[case.name]) for case in inputs.cases]
    run = score_at_scale(
        pairs,
        inputs.scorer,
        workers=workers,
        cluster=request.cluster,
        batch_size=request.batch_size,
        keep_report=request.out is not None,
        results=request.results,
        progress=progress_bar(out) if request.fanned_out() else _Quiet(),
        batch_timeout=request.batch_timeout,
        fan_out=request.fan_out,
        run_info=run_info,
    )
    failed = [(name, run.summary.reasons[name]) for name in run.summary.failed]
    scored = Scored(run.report, run_info, summary=run.summary, results_written=True, failed=failed)
    scored.leaf_diffs = run.leaf_diffs  # found batch by batch, with the report
    for name, reason in scored.failed if request.fanned_out() else ():  # as the report's reasons otherwise
        print(f"could not be scored, scored 0: case {name!r}: {reason}", file=err)
    if request.results is not None:
        print(f"Wrote {scored.summary.documents} document row(s) to {request.results}.", file=out)
    return scored


class _Quiet:
    """No bar and no scoring line: a run of stored outputs that asked for no scale-out option prints neither."""

    def start(self, total: int | None, engine: str) -> None:
        pass

    def advance(self, documents: int, failed: int = 0) -> None:
        pass

    def finish(self) -> None:
        pass


def _predicted(request: ScoreRequest, inputs: Inputs) -> dict[str, dict[str, Any]]:
    """Each case's source: the predictions file, with the model and usage its line gives, if any."""
    given = inputs.predicted_by or {}
    return {
        case.name: {"origin": "predictions", "file": str(request.predictions), **given.get(case.name, {})}
        for case in inputs.cases
    }


def describe_run(request: ScoreRequest, scorer: Any, sources: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The saved run's self-description: schema, threshold, the comparators stickler used, each case's source.

    `scorer` is the run's `Scorer`: its schema class and its evaluator's stickler spec.
    """
    from fieldeval.formats.run_info import RunInfo, comparators_of, schema_fingerprint

    spec = scorer.spec()
    described = {
        "schema": request.schema,
        "schema_sha256": schema_fingerprint(scorer.model()),
        "match_threshold": request.match_threshold,
        "comparators": comparators_of(spec),
        "cases": sources,
    }
    return RunInfo.model_validate(described).to_json()


# 4. Account ----------------------------------------------------------------------------------------


def account(request: ScoreRequest, inputs: Inputs, scored: Scored, out: TextIO) -> None:
    """Say what the model calls cost: the task run's tokens (and live, their time), priced with --prices.

    A fanned-out run of stored outputs made no model calls and prints no price line.
    """
    if inputs.agent is not None:
        what = "Model use" if scored.measured else "Model use as the cassettes record it (not all from a model)"
        print(f"{what}: {scored.usage.describe()}.", file=out)
    if inputs.prices is not None and not request.fanned_out():
        from fieldeval.formats.prices import cost_line
        from fieldeval.formats.run_info import RunInfo

        print(f"Model {cost_line(RunInfo.model_validate(scored.run_info), inputs.prices)}.", file=out)


# 5. Write ------------------------------------------------------------------------------------------


def write(request: ScoreRequest, scored: Scored, out: TextIO) -> None:
    """The results file (unless written as batches finished) and the saved report; `score_run` switches both at once.

    The saved report carries every document's leaf diff as data (`fieldeval.formats.leaf_diffs`),
    computed here with the schema this command line named, so `report` never imports a module a
    file names to show them.
    """
    from fieldeval.formats.leaf_diffs import leaf_diffs_json
    from fieldeval.harness.reports import save_report

    if request.results is not None and not scored.results_written:
        _write_results(request, scored, out)
    if request.out is not None and scored.report is not None:
        save_report(scored.report, request.out, scored.run_info, leaf_diffs_json(leaf_diffs(request, scored)))


def _write_results(request: ScoreRequest, scored: Scored, out: TextIO) -> None:
    """The compact results file of a report scored in one process (a `--task` run)."""
    from fieldeval.formats.results import ResultsHeader, ResultsWriter
    from fieldeval.harness.results import rows_from_report

    assert request.results is not None, "written only when asked for"
    spec = scored.scorer.spec()
    header = ResultsHeader(
        schema=request.schema, match_threshold=request.match_threshold, failures=True, run=scored.run_info
    )
    with ResultsWriter(request.results, header) as writer:
        for row in rows_from_report(scored.report, spec):
            writer.write(row)
    print(f"Wrote {writer.count} document row(s) to {request.results}.", file=out)


# After the run -------------------------------------------------------------------------------------


def leaf_diffs(request: ScoreRequest, scored: Scored) -> list:
    """Every document's leaf diff as data (`fieldeval.attribution.stored.stored_document`), found once.

    A run scored on workers brings them back with its batches; otherwise they are found here, with
    the schema and match threshold the run was scored with.
    """
    if scored.leaf_diffs is None:
        from fieldeval.attribution.kinds import report_diffs
        from fieldeval.attribution.stored import stored_document

        scored.leaf_diffs = [stored_document(diff) for diff in report_diffs(scored.report, scored.scorer.spec())]
    return scored.leaf_diffs


def failures(request: ScoreRequest, scored: Scored) -> Any:
    """The failures by kind per document: from the report's leaf diffs, or from the results file written."""
    from fieldeval.attribution.kinds import results_failures
    from fieldeval.attribution.stored import stored_failures

    if scored.report is None:
        return results_failures(request.results)
    return stored_failures(leaf_diffs(request, scored))


# 6. Summarize --------------------------------------------------------------------------------------

# The per-field table's columns, named as stickler names them, so a column copied into code is a key.
FIELD_COLUMNS = ("tp", "fn", "fa", "fd", "cm_precision", "cm_recall", "cm_f1")


def summarize(scored: Scored) -> str:
    """The per-field table (stickler's own key names), worst F1 first, the per-case scores and the overall line."""
    if scored.report is None:  # scored to the results file only: its streamed rollups
        return _summary_text(scored.summary)
    from fieldeval.render.text import text_table

    report = scored.report
    fields = report.metrics().field_metrics
    rows = sorted(fields.items(), key=lambda item: (item[1].get("cm_f1", 0.0), item[0]))
    table = text_table(
        ("field", *FIELD_COLUMNS), [(path, *(counts.get(key) for key in FIELD_COLUMNS)) for path, counts in rows]
    )
    cases = report.per_case()
    verdicts = [(row["case"], float(row["overall_score"]), "pass" if row["test_pass"] else "FAIL") for row in cases]
    passed = sum(1 for row in cases if row["test_pass"])
    return (
        f"Per field:\n{table}\n\nPer case:\n{text_table(('case', 'score', 'verdict'), verdicts)}\n"
        f"\nOverall score {report.overall_score:.3f}; {passed} of {len(cases)} case(s) pass."
    )


def _summary_text(summary: Any) -> str:
    """The per-field counts and the overall numbers of a run scored to the compact file only."""
    from fieldeval.render.text import text_table

    def ratio(part: float, whole: float) -> float:
        return part / whole if whole else 0.0

    rows = []
    for path, counts in summary.counts.items():
        precision = ratio(counts.tp, counts.tp + counts.fp)
        recall = ratio(counts.tp, counts.tp + counts.fn)
        f1 = ratio(2 * precision * recall, precision + recall)
        rows.append((path, counts.tp, counts.fn, counts.fa, counts.fd, precision, recall, f1))
    rows.sort(key=lambda row: (row[-1], row[0]))
    return (
        f"Per field:\n{text_table(('field', *FIELD_COLUMNS), rows)}\n"
        f"\nOverall score {summary.overall_score:.3f}; {summary.passed} of {summary.documents} case(s) pass."
    )
