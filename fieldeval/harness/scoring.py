"""The one way this project scores anything: Strands Evals' harness and its `StructuredOutputReport`.

Tasks (an agent per case) go through `Experiment(..., report_cls=StructuredOutputReport)`, one
evaluator per experiment (`overall_score` averages every evaluator's rows together, so two
evaluators in one experiment give a number that describes neither). The harness facts this
code relies on:

- `@eval_task()` passes a dict through and `str()`s anything else, so the output is wrapped as
  `{"output": ...}`; a bare dict of fields would be read as the task's own result wrapper.
- `Experiment.run_evaluations` wraps `asyncio.run`, which fails inside a running kernel, so the
  async form is the primary one here and the sync form is for scripts and tests.

Stored outputs (`score_stored`, what `score --predictions` and every scale-out worker run) are
scored in this thread, case by case, into the report `Experiment` builds. For pure-Python
scoring the experiment's pool is pure overhead: it hands each case to a thread twice (the task,
then `evaluate_async`'s `to_thread`) and runs ten of them under one GIL, which measured 1.3-1.9x
the bare stickler loop. `score_stored` builds each row from the harness's own parts in the same
order (`EvaluationData`, `evaluator.evaluate`, `evaluator.aggregator`, the same error rows,
`report_cls.calculate_overall_score`), and `tests/harness/test_scoring.py` checks the saved report is
byte-identical to `Experiment`'s. An evaluator with its own `evaluate_async` (a model judge,
anything that awaits) still runs through `Experiment`, except Strands Evals' own deterministic
evaluators (`Equals`, `Contains`, ...), whose `evaluate_async` only returns `self.evaluate(case)`:
the same call made here, without an event loop and a thread pool per report (about 50 ms each).

Nothing here installs `fieldeval.harness.fast_stickler`: a notebook scores with stickler as
shipped unless it installs the speed-up itself; the `score` command installs it for its own run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from strands_evals import Case, Experiment, eval_task
from strands_evals.evaluators import (
    Contains,
    Equals,
    Evaluator,
    SkillInvoked,
    StartsWith,
    StateEquals,
    StructuredOutputReport,
    ToolCalled,
)
from strands_evals.types.evaluation import EvaluationData

# Evaluators whose `evaluate_async` does no more than `return self.evaluate(evaluation_case)`
# (strands-agents-evals 1.7.0; `tests/harness/test_scoring.py` reads their source), so calling
# `evaluate` in this thread is the same call; the base class's runs `evaluate` in a thread.
CALLS_EVALUATE = (Equals, Contains, StartsWith, StateEquals, SkillInvoked, ToolCalled)
SCORED_IN_THREAD = frozenset({Evaluator.evaluate_async, *(kind.evaluate_async for kind in CALLS_EVALUATE)})


def stored_output_task(outputs: Mapping[str, Any]) -> Callable[[Case], dict[str, Any]]:
    """A harness task that hands back the stored output of each case, looked up by name."""

    @eval_task()
    def task(case: Case) -> dict[str, Any]:
        return {"output": outputs[case.name]}

    return task


async def score_task(
    cases: Sequence[Case], task: Callable, evaluator: Evaluator, max_workers: int = 10
) -> StructuredOutputReport:
    """Run `task` over `cases` and score it with `evaluator`, in one experiment, `max_workers` cases at once."""
    experiment = Experiment(cases=list(cases), evaluators=[evaluator], report_cls=StructuredOutputReport)
    return await experiment.run_evaluations_async(task, max_workers=max_workers)


async def score_outputs(
    cases: Sequence[Case], outputs: Mapping[str, Any], evaluator: Evaluator
) -> StructuredOutputReport:
    """Score stored outputs (by case name) against `cases` with `evaluator`, in one experiment."""
    return await score_task(cases, stored_output_task(outputs), evaluator)


def score_outputs_sync(
    cases: Sequence[Case], outputs: Mapping[str, Any], evaluator: Evaluator
) -> StructuredOutputReport:
    """`score_outputs` for code that is not already inside an event loop (scripts, tests)."""
    return asyncio.run(score_outputs(cases, outputs, evaluator))


def score_task_sync(
    cases: Sequence[Case], task: Callable, evaluator: Evaluator, max_workers: int = 10
) -> StructuredOutputReport:
    """`score_task` for code that is not already inside an event loop (commands, tests)."""
    return asyncio.run(score_task(cases, task, evaluator, max_workers))


def score_stored(cases: Sequence[Case], outputs: Mapping[str, Any], evaluator: Evaluator) -> StructuredOutputReport:
    """The report `score_outputs` builds, scored in this thread with no event loop or pool.

    Safe to call inside a running kernel (nothing is awaited). An evaluator that overrides
    `evaluate_async` (other than those of `CALLS_EVALUATE`) is handed to `Experiment` instead,
    on a loop of its own.
    """
    if type(evaluator).evaluate_async not in SCORED_IN_THREAD:
        return _in_own_loop(score_outputs(cases, outputs, evaluator))
    name, kind = evaluator.get_name(), evaluator.get_type_name()
    rows = [_score_case(case, outputs, evaluator) for case in cases]
    scores = [row["score"] for row in rows]
    detailed = [row["detailed_results"] for row in rows]
    return StructuredOutputReport(
        overall_score=StructuredOutputReport.calculate_overall_score(scores, detailed),
        scores=scores,
        test_passes=[row["test_pass"] for row in rows],
        cases=[{**row["case"], "evaluator": name, "evaluator_type": kind} for row in rows],
        reasons=[row["reason"] for row in rows],
        detailed_results=detailed,
        diagnoses=[None] * len(rows),
        recommendations=[None] * len(rows),
    )


def _score_case(case: Case, outputs: Mapping[str, Any], evaluator: Evaluator) -> dict[str, Any]:
    """One case as `Experiment._worker` records it: the evaluation data, or the case when that failed."""
    try:
        context = EvaluationData(
            name=case.name,
            input=case.input,
            expected_output=case.expected_output,
            expected_assertion=case.expected_assertion,
            expected_trajectory=case.expected_trajectory,
            expected_interactions=case.expected_interactions,
            expected_environment_state=case.expected_environment_state,
            metadata=case.metadata,
        )
        context.actual_output = outputs[case.name]
        result = _evaluate(evaluator, context)
        return {"case": context.model_dump(), **result}
    except Exception as exc:  # the harness's row for a task that raised
        reason = f"An error occurred: {exc}"
        return {"case": case.model_dump(), "test_pass": False, "score": 0, "reason": reason, "detailed_results": []}


def _evaluate(evaluator: Evaluator, context: EvaluationData) -> dict[str, Any]:
    """`Experiment._run_evaluator`'s result: the rows and their aggregate, or the evaluator's error as a row."""
    try:
        outputs = evaluator.evaluate(context)
        score, passed, reason = evaluator.aggregator(outputs)
    except Exception as exc:
        return {"test_pass": False, "score": 0, "reason": f"Evaluator error: {exc}", "detailed_results": []}
    return {"test_pass": passed, "score": float(score), "reason": reason or "", "detailed_results": outputs}


def _in_own_loop(coroutine: Any) -> Any:
    """Run a coroutine to the end even when this thread already runs a loop (a kernel)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
