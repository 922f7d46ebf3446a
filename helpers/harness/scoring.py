"""The one way this project scores anything: `Experiment(..., report_cls=StructuredOutputReport)`.

Stored outputs and live tasks go through the same harness, one evaluator per experiment
(`overall_score` averages every evaluator's rows together, so two evaluators in one experiment
give a number that describes neither). The harness facts this code relies on:

- `@eval_task()` passes a dict through and `str()`s anything else, so the output is wrapped as
  `{"output": ...}`; a bare dict of fields would be read as the task's own result wrapper.
- `Experiment.run_evaluations` wraps `asyncio.run`, which fails inside a running kernel, so the
  async form is the primary one here and the sync form is for scripts and tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from strands_evals import Case, Experiment, eval_task
from strands_evals.evaluators import Evaluator, StructuredOutputReport


def stored_output_task(outputs: Mapping[str, Any]) -> Callable[[Case], dict[str, Any]]:
    """A harness task that hands back the stored output of each case, looked up by name."""

    @eval_task()
    def task(case: Case) -> dict[str, Any]:
        return {"output": outputs[case.name]}

    return task


async def score_task(cases: Sequence[Case], task: Callable, evaluator: Evaluator) -> StructuredOutputReport:
    """Run `task` over `cases` and score it with `evaluator`, in one experiment."""
    experiment = Experiment(cases=list(cases), evaluators=[evaluator], report_cls=StructuredOutputReport)
    return await experiment.run_evaluations_async(task)


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


def score_task_sync(cases: Sequence[Case], task: Callable, evaluator: Evaluator) -> StructuredOutputReport:
    """`score_task` for code that is not already inside an event loop (commands, tests)."""
    return asyncio.run(score_task(cases, task, evaluator))
