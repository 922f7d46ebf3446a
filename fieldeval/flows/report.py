"""What one `report` run does, in order: the recipe `python -m fieldeval.commands.report` follows.

    gates = check(request)                  # 1. rules, run files and output paths (standard library only)
    spec = comparison_spec(request)         # 2. only with --schema: stickler's compiled schema, for fresh diffs
    content = build(request, gates, spec)   # 3. the content: tables, intervals, gates, failures, diffs
    reported = write(request, content)      # 4. the page and the summary, together or neither

`report_run` is that recipe for one RUN and returns what the command prints (`Reported`); with two
or more RUNs the command follows `fieldeval.flows.report_candidates` instead. Step 1 refuses with
`Refused`; later steps with the readers' own errors (a foreign or malformed file, a --schema that
does not import, two runs scored by different rules), all of them bad input, and nothing is
written before step 4.

The report imports no module because a file names it. A run saved by `score --out` carries its
leaf diffs as data (`fieldeval.formats.leaf_diffs`), and a results file its failures by kind, so
neither needs its schema; the one module imported is the one `--schema` names, to compute the
diffs afresh (a run saved before runs stored them, or one read with another schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fieldeval.compare.gates import GateError, parse_gate
from fieldeval.compare.params import RESAMPLES, SEED
from fieldeval.flows import Refused, Request
from fieldeval.outputs import OutputError, check_outputs, module_file, refuse_overlap

if TYPE_CHECKING:
    from fieldeval.compare.gates import Gate


@dataclass(frozen=True)
class ReportRequest(Request):
    """Everything a `report` run was asked, as the command line gave it (ranges already checked)."""

    run: Path
    more: Sequence[Path] = ()  # further candidates: the several-run page (`fieldeval.flows.report_candidates`)
    against: Path | None = None
    prices: Path | None = None  # with several RUNs only: each run's cost per 1,000 documents
    gate: Sequence[str] = ()
    schema: str | None = None
    match_threshold: float | None = None
    allow_scoring_change: bool = False
    out: Path | None = None
    summary: Path | None = None
    page_size: int = 50
    resamples: int = RESAMPLES
    seed: int = SEED

    def page(self) -> Path:
        """The HTML file: --out, else the run's path with .html."""
        return self.out or self.run.with_suffix(".html")


@dataclass
class Reported:
    """What the run wrote: the page, the Markdown summary it printed, and whether a gate failed."""

    page: Path
    summary: str
    gates_failed: bool


def report_run(request: ReportRequest) -> Reported:
    """The recipe: check, the schema for the diffs, build, write."""
    gates = check(request)
    content = build(request, gates, comparison_spec(request))
    return write(request, content)


# 1. Check ------------------------------------------------------------------------------------------


def check(request: ReportRequest) -> list[Gate]:
    """Refuse a gate without a baseline, a bad rule, a missing run and an output the writer would break."""
    if request.prices is not None:
        raise Refused(
            "--prices places several runs at their cost, and a one-run page shows no cost: pass two or more RUNs "
            "with --against BASELINE, or drop --prices"
        )
    if request.gate and request.against is None:
        raise Refused("--gate compares two runs: pass the baseline with --against OLD.json")
    if request.match_threshold is not None and request.schema is None:
        raise Refused(
            "--match-threshold goes with --schema, which computes the leaf diffs afresh at that threshold; without "
            "--schema the report shows the diffs the run stored, at the threshold it was scored with"
        )
    try:
        gates = [parse_gate(rule) for rule in request.gate]
    except GateError as exc:
        raise Refused(str(exc)) from exc
    for option, path in (("RUN", request.run), ("--against", request.against)):
        if path is not None and not path.is_file():
            raise Refused(f"{option} {path}: no such file; pass a saved report or a compact results file")
    outputs = {"--out": request.page()} | ({"--summary": request.summary} if request.summary is not None else {})
    try:  # the checks every command makes of its outputs: no link, device or folder, and no input overwritten
        check_outputs(outputs, {"RUN": request.run, "--against": request.against})
    except OutputError as exc:
        raise Refused(str(exc)) from exc
    return gates


# 2. The schema for fresh leaf diffs ---------------------------------------------------------------


def comparison_spec(request: ReportRequest) -> object | None:
    """stickler's compiled comparison of the --schema the command line names, or None without one.

    The threshold is --match-threshold, else the one the run says it was scored with, else 0.7.
    The schema module, once imported, is an input like the run: no output may be its file.

    Raises:
        SchemaError: If --schema does not import or names no pydantic model.
        Refused: If --out or --summary is the schema module's file.
    """
    if request.schema is None:
        return None
    import stickler

    from fieldeval.harness.schema import load_schema

    schema = load_schema(request.schema)
    outputs = {"--out": request.page()} | ({"--summary": request.summary} if request.summary is not None else {})
    try:
        refuse_overlap(outputs, {"the --schema module": module_file(request.schema)})
    except OutputError as exc:
        raise Refused(str(exc)) from exc
    threshold = request.match_threshold
    if threshold is None:
        threshold = _recorded_threshold(request.run)
    return stickler.eval_for(schema, match_threshold=threshold)


def _recorded_threshold(path: Path) -> float:
    """The match threshold the run says it was scored with (read as data), else stickler's default 0.7."""
    from fieldeval.compare.reading import is_results_file
    from fieldeval.formats.results import read_header
    from fieldeval.harness.reports import load_run_info

    if is_results_file(path):
        return read_header(path).match_threshold
    info = load_run_info(path)
    return info.match_threshold if info is not None else 0.7


# 3. Build ------------------------------------------------------------------------------------------


def build(request: ReportRequest, gates: list[Gate], spec: object | None) -> Any:
    """The report's content (`fieldeval.report.content.Content`): everything the page and the summary show."""
    build_content, _, _ = _report_modules()
    return build_content(
        request.run,
        old_path=request.against,
        gates=gates,
        spec=spec,
        resamples=request.resamples,
        seed=request.seed,
        allow_scoring_change=request.allow_scoring_change,
    )


# 4. Write ------------------------------------------------------------------------------------------


def write(request: ReportRequest, content: Any) -> Reported:
    """Render the page and the summary and write them in one step: both appear, or neither does.

    Both are rendered before anything is written, and `one_step` renames them in only once both
    are staged whole, so a full disk or a read-only folder leaves both old files as they were.
    """
    from fieldeval.files import one_step, write_text_atomically

    _, render, summary = _report_modules()
    page = request.page()
    text = summary(content, page.name)
    html = render(content, page_size=request.page_size)
    with one_step():
        write_text_atomically(page, html)
        if request.summary is not None:
            write_text_atomically(request.summary, text)
    return Reported(page, text, bool(content.gates_failed))


def _report_modules() -> tuple[Any, Any, Any]:
    """The content builder, the page renderer and the summary; a slim install lacks the report extra."""
    from fieldeval.render import extra_missing

    try:
        from fieldeval.report.content import build
        from fieldeval.report.page import render
        from fieldeval.report.summary import summary
    except ImportError as exc:  # the page's chart and template are the report extra
        raise extra_missing(exc, "report", "the report page's chart and template") from exc
    return build, render, summary
