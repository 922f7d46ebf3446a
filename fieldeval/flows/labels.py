"""What one `labels` run does, in order: the recipe `python -m fieldeval.commands.labels` follows.

    check(request)                       # 1. two runs or more, each named once; --out is no input (standard library)
    runs, labels = read(request)         # 2. the runs' leaf diffs and rules, the case file's labels, as data
    comparators = rules(request, runs)   # 3. one schema, one case set; the --schema's comparators, if named
    found = audit(runs, labels, ...)     # 4. the leaves runs agree on against the label, ranked
    write(request, found)                # 5. to --out atomically, or returned for standard output

`labels_run` is that recipe. The audit itself is `fieldeval.attribution.labels`'s; this module only
orders it and raises `Refused` for what it refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fieldeval.flows import Refused, Request
from fieldeval.outputs import OutputError, check_outputs, module_file, refuse_inputs

if TYPE_CHECKING:
    from fieldeval.attribution.labels import Audit, Comparators, SavedRun


@dataclass(frozen=True)
class LabelsRequest(Request):
    """Everything a `labels` run was asked, as the command line gave it (ranges already checked)."""

    cases: Path
    runs: list[Path]
    out: Path | None = None
    top: int | None = None
    schema: str | None = None


@dataclass(frozen=True)
class Audited:
    """What the command prints: the suspects' JSON lines (empty when written to --out), and notes for standard error."""

    lines: list[str]
    notes: list[str]
    suspects: int
    written: Path | None = None


def labels_run(request: LabelsRequest) -> Audited:
    """The recipe: check, read, check the rules, audit, write."""
    check(request)
    from fieldeval.attribution.labels import LabelsError, audit

    try:
        runs, labels = read(request)
        comparators = rules(request, runs, labels)
        found = audit(runs, labels, comparators)
    except LabelsError as exc:
        raise Refused(str(exc)) from exc
    return write(request, found)


# 1. Check ------------------------------------------------------------------------------------------


def inputs(request: LabelsRequest) -> dict[str, Path | None]:
    found: dict[str, Path | None] = {"--cases": request.cases}
    found.update({f"RUN {run}": run for run in request.runs})
    return found


def check(request: LabelsRequest) -> None:
    """Refuse, before anything loads, a run named twice, fewer than two runs, or an --out that is an input.

    Raises:
        Refused: Naming the file and the fix.
    """
    if len(request.runs) < 2:
        raise Refused(
            "name two saved runs or more: a leaf is a suspect when runs agree with each other against its label, "
            "and one run agrees with no one (its misses are its leaf diff: eval-report RUN shows them)"
        )
    seen: set[Path] = set()
    for run in request.runs:
        key = run.resolve()
        if key in seen:
            raise Refused(f"{run} is named twice; a run would agree with itself: name each run once")
        seen.add(key)
    for path in [request.cases, *request.runs]:
        if not path.is_file():
            raise Refused(f"{path}: no such file (check the path)")
    if request.out is not None:
        try:
            check_outputs({"--out": request.out}, inputs(request))
        except OutputError as exc:
            raise Refused(str(exc)) from exc


# 2. Read -------------------------------------------------------------------------------------------


def read(request: LabelsRequest) -> tuple[list[SavedRun], dict[str, dict]]:
    """Every run as data, and the case file's labels by case name."""
    from fieldeval.attribution.labels import read_labels, read_run

    return [read_run(run) for run in request.runs], read_labels(request.cases)


# 3. Rules ------------------------------------------------------------------------------------------


def rules(request: LabelsRequest, runs: list[SavedRun], labels: dict[str, dict]) -> Comparators:
    """The runs share one schema's rules and the case file's cases; the comparators to compare them by.

    With --schema, its compiled comparators (options included), once its fingerprint is the runs'.
    """
    from fieldeval.attribution.labels import Comparators, check_runs, check_schema_fingerprint

    check_runs(runs, labels, request.cases)
    if request.schema is None:
        return Comparators()
    import stickler

    from fieldeval.formats.run_info import schema_fingerprint
    from fieldeval.harness.schema import load_schema

    schema = load_schema(request.schema)
    if request.out is not None:
        try:
            refuse_inputs({"--out": request.out}, {"the --schema module": module_file(request.schema)})
        except OutputError as exc:
            raise Refused(str(exc)) from exc
    check_schema_fingerprint(runs, schema_fingerprint(schema), request.schema)
    return Comparators(stickler.eval_for(schema, match_threshold=runs[0].info.match_threshold).eval_model)


# 5. Write ------------------------------------------------------------------------------------------


def write(request: LabelsRequest, found: Audit) -> Audited:
    """The suspects' lines to --out (atomically), or back to the command to print."""
    lines = found.lines(request.top)
    if request.out is None:
        return Audited(lines, found.notes, len(lines))
    from fieldeval.files import write_text_atomically

    write_text_atomically(request.out, "".join(f"{line}\n" for line in lines))
    return Audited([], found.notes, len(lines), written=request.out)
