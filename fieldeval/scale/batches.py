"""What a worker runs: one batch of documents scored through the one-process harness.

A batch travels as plain JSON-shaped data (case fields, expected and actual outputs), not as
pickled model instances: a worker, local or on another machine, then needs only the schema's
`module:Class` to rebuild the instances, and never has to unpickle a class from a module it
cannot import by name. In the worker the evaluator is rebuilt from that path (once per
process) and the batch is scored by `fieldeval.harness.scoring.score_stored`, the same step
`score --predictions` runs in one process, so every row, reason and raw comparison is the one a
single process would produce.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import stickler
from pydantic import BaseModel
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputReport, StructuredOutputSimilarity

from fieldeval.attribution.kinds import report_diffs
from fieldeval.attribution.stored import stored_document
from fieldeval.formats.results import Counts, ResultRow
from fieldeval.harness import fast_stickler
from fieldeval.harness.results import row_from_case, rows_from_report, scored_comparisons, totals
from fieldeval.harness.schema import load_schema
from fieldeval.harness.scoring import score_stored

INSTANCE = "instance"  # the value was an instance of the schema: rebuild it in the worker
AS_IS = "as_is"  # anything else (a dict, a string, None): handed over unchanged


@dataclass(frozen=True)
class Scorer:
    """How a worker rebuilds the evaluator: the schema as `module:Class` and its settings.

    In the process that made it, `loaded` (the class the run already imported) is used instead of
    importing the schema again; it never travels (a worker imports the module by its path, see the
    module docstring). The evaluator is built once per schema class and threshold in a process,
    and stickler's compiled spec is the evaluator's own, so a run calls `stickler.eval_for` once.
    """

    schema: str
    match_threshold: float = 0.7
    directory: str | None = None  # where the driver found the schema module; searched first
    leaf_diffs: bool = False  # with the report, also find each document's leaf diff (a saved report carries them)
    fast_stickler: bool = False  # the workers score with `fieldeval.harness.fast_stickler` (the score command's choice)
    loaded: type[BaseModel] | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "loaded": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def model(self) -> type[BaseModel]:
        return self.loaded if self.loaded is not None else _schema(self.schema, self.directory)

    def evaluator(self) -> StructuredOutputSimilarity:
        return _evaluator(self.model(), self.match_threshold)

    def spec(self) -> Any:
        """stickler's compiled comparison with the evaluator's settings: what failures by kind are read with."""
        return spec_of(self.evaluator())


@lru_cache(maxsize=8)
def _schema(spec: str, directory: str | None) -> type[BaseModel]:
    usable = directory if directory is not None and Path(directory).is_dir() else None
    return load_schema(spec, directory=usable)


@lru_cache(maxsize=8)
def _evaluator(model: type[BaseModel], match_threshold: float) -> StructuredOutputSimilarity:
    return StructuredOutputSimilarity(model, match_threshold=match_threshold)


def spec_of(evaluator: StructuredOutputSimilarity) -> Any:
    """The `stickler.eval_for` spec `evaluator` scores with (it builds one in its constructor).

    strands-agents-evals 1.7.0 keeps it as `_spec`, built from the same model and threshold; reading
    it saves compiling the schema a second time. Should a release rename it, the same spec is
    built here (`tests/scale/test_scoring_counts.py` then fails on the extra `eval_for`).
    """
    found = getattr(evaluator, "_spec", None)
    if found is None:
        found = stickler.eval_for(
            evaluator.model_cls, match_threshold=evaluator.match_threshold, weight_hints=evaluator.weight_hints
        )
    return found


def pack(value: Any, schema: type[BaseModel]) -> tuple[str, Any]:
    """One output in its travelling form: an instance of `schema` as its JSON, anything else as is."""
    if isinstance(value, schema):
        return INSTANCE, value.model_dump(mode="json")
    if isinstance(value, BaseModel):
        return AS_IS, value.model_dump(mode="json")
    return AS_IS, value


def unpack(packed: tuple[str, Any], schema: type[BaseModel]) -> Any:
    kind, value = packed
    return schema.model_validate(value) if kind == INSTANCE else value


@dataclass
class Batch:
    """Consecutive documents of a run: case fields and both outputs, in their travelling form."""

    index: int
    cases: list[dict[str, Any]] = field(default_factory=list)
    expected: list[tuple[str, Any]] = field(default_factory=list)
    outputs: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [case["name"] for case in self.cases]

    def add(self, case: Case, output: Any, schema: type[BaseModel]) -> None:
        self.cases.append(case.model_dump(mode="json", exclude={"expected_output"}))
        self.expected.append(pack(case.expected_output, schema))
        self.outputs.append(pack(output, schema))

    def __len__(self) -> int:
        return len(self.cases)


@dataclass
class BatchResult:
    """What comes back: the batch's report (when the driver keeps one) and one row per document.

    `totals` are the batch's overall and per-path counts when its rows carry none (a run that
    writes no results file); otherwise each row carries its own. With the report come, when the
    scorer asks (`Scorer.leaf_diffs`), its documents' leaf diffs as data
    (`fieldeval.attribution.stored.stored_document`), found here, on the worker, so the saved report
    carries them without the driver diffing every document alone.
    """

    index: int
    rows: list[ResultRow]
    report: StructuredOutputReport | None = None
    totals: tuple[Counts, dict[str, Counts]] | None = None
    leaf_diffs: list[dict[str, Any]] | None = None


def score_batch(scorer: Scorer, batch: Batch, keep_report: bool, failures: bool = True) -> BatchResult:
    """Score one batch in this process (the function every engine runs): rebuild it, then `score_cases`.

    The worker follows the run's choice of stickler classes (`Scorer.fast_stickler`) before it
    rebuilds anything, whatever an earlier run in the same worker chose.
    """
    fast_stickler.use(scorer.fast_stickler)
    schema = scorer.model()
    cases, outputs = [], {}
    for fields, expected, output in zip(batch.cases, batch.expected, batch.outputs, strict=True):
        case = Case.model_validate({**fields, "expected_output": unpack(expected, schema)})
        cases.append(case)
        outputs[case.name] = unpack(output, schema)
    return score_cases(scorer, batch.index, cases, outputs, keep_report, failures)


def score_cases(
    scorer: Scorer, index: int, cases: list[Case], outputs: dict[str, Any], keep_report: bool, failures: bool
) -> BatchResult:
    """Score consecutive cases by `score_stored`, and their rows; what one process runs with no packing.

    With `failures` (a results file is written) each row carries its counts and its failures by
    kind: finding those matches a document's lists again where an item fell below the threshold,
    which on documents of 20 line items adds about half to the scoring time. Without, the rows
    carry neither and the batch's counts come in one aggregation (`totals`), so a run that writes
    no results file pays for neither.

    A case the harness cannot score comes back scored 0 with its reason, as in one process;
    an error outside the harness (the schema does not import here) propagates, and the driver
    names every case of the batch.
    """
    report = score_stored(cases, outputs, scorer.evaluator())
    diffs = None
    if keep_report and scorer.leaf_diffs:
        diffs = [stored_document(diff) for diff in report_diffs(report, scorer.spec())]
    kept = report if keep_report else None
    if failures:
        return BatchResult(index, list(rows_from_report(report, scorer.spec())), kept, leaf_diffs=diffs)
    rows = list(rows_from_report(report, counts=False))
    return BatchResult(index, rows, kept, totals(scored_comparisons(report)), leaf_diffs=diffs)


def failed_batch(batch: Batch, scorer: Scorer, problem: str, keep_report: bool) -> BatchResult:
    """The result of a batch that could not be scored: every case scored 0, named, with the reason.

    The report rows take the shape the harness gives a case whose task raised: score 0, not
    passed, the reason, and no evaluator rows.
    """
    reason = f"An error occurred: could not be scored ({problem})"
    rows = [row_from_case(case_name, 0.0, False, reason, []) for case_name in batch.names]
    report = None
    if keep_report:
        count = len(batch)
        evaluator = scorer.evaluator()
        tags = {"evaluator": evaluator.get_name(), "evaluator_type": evaluator.get_type_name()}
        report = StructuredOutputReport(
            overall_score=0.0,
            scores=[0.0] * count,
            test_passes=[False] * count,
            cases=[{**case, **tags} for case in _failed_cases(batch)],
            reasons=[reason] * count,
            detailed_results=[[] for _ in range(count)],
            diagnoses=[None] * count,
            recommendations=[None] * count,
        )
    diffs: list[dict[str, Any]] | None = [] if keep_report and scorer.leaf_diffs else None  # no rows: nothing to diff
    return BatchResult(batch.index, rows, report, leaf_diffs=diffs)


def _failed_cases(batch: Batch) -> Sequence[dict[str, Any]]:
    """The failed cases' records, from their travelling form: they may be what could not be rebuilt."""
    pairs = zip(batch.cases, batch.expected, strict=True)
    return [{**fields, "expected_output": expected[1]} for fields, expected in pairs]
