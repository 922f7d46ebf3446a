"""`score_stored` builds, in one thread, the report `Experiment` builds: byte for byte, error rows included."""

from __future__ import annotations

import asyncio
import inspect
import textwrap

import pytest
from strands_evals import Case
from strands_evals.evaluators import Equals, Evaluator, StructuredOutputSimilarity
from strands_evals.types.evaluation import EvaluationOutput

from fieldeval.harness.scoring import CALLS_EVALUATE, score_outputs_sync, score_stored
from walkthroughs.identity_runs import Shipment, random_run, reference_pairs
from walkthroughs.invoices import Invoice, reference_cases
from walkthroughs.simulated_large import simulated_run


class Raises(Evaluator):
    """An evaluator that fails on one case, to compare the harness's error rows."""

    def evaluate(self, evaluation_case):
        if evaluation_case.name == "amount-off":
            raise ValueError("cannot score this one")
        return [EvaluationOutput(score=0.5, test_pass=True, reason="half")]


def pairs_with_every_kind_of_row() -> list[tuple[Case, object]]:
    pairs: list[tuple[Case, object]] = list(simulated_run(6, 4))
    pairs += reference_pairs(reference_cases())
    truth = pairs[0][0].expected_output
    pairs.append((Case(name="unreadable", input="x", expected_output=truth), {"unrelated": 1}))
    pairs.append((Case(name="not-json", input="x", expected_output=truth), "not json"))
    pairs.append((Case(name="no-truth", input="x", expected_output=None, metadata={"k": 1}), truth))
    return pairs


class Awaits(Equals):
    """An evaluator whose `evaluate_async` awaits: it must be scored by `Experiment`, in a loop."""

    async def evaluate_async(self, evaluation_case):
        await asyncio.sleep(0)
        return self.evaluate(evaluation_case)


EVALUATORS = [StructuredOutputSimilarity(Invoice), Raises(), Equals()]


@pytest.mark.parametrize("evaluator", EVALUATORS, ids=lambda e: e.get_name())
def test_the_report_is_experiments_byte_for_byte(evaluator):
    pairs = pairs_with_every_kind_of_row()
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    del outputs["perfect"]  # the harness's row for a task that raised (no stored output)
    expected = score_outputs_sync(cases, outputs, evaluator)
    assert score_stored(cases, outputs, evaluator).model_dump_json() == expected.model_dump_json()
    assert "An error occurred" in expected.reasons[cases.index(next(c for c in cases if c.name == "perfect"))]


def test_random_nested_documents_give_experiments_report():
    pairs = list(random_run(20, max_packages=3))
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    evaluator = StructuredOutputSimilarity(Shipment)
    assert score_stored(cases, outputs, evaluator).model_dump_json() == (
        score_outputs_sync(cases, outputs, evaluator).model_dump_json()
    )


def test_an_awaiting_evaluator_runs_through_experiment_even_inside_a_running_loop():
    pairs = pairs_with_every_kind_of_row()[:8]
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    expected = score_outputs_sync(cases, outputs, Awaits())

    async def in_a_kernel():
        return score_stored(cases, outputs, Awaits())

    assert asyncio.run(in_a_kernel()).model_dump_json() == expected.model_dump_json()


@pytest.mark.parametrize("kind", CALLS_EVALUATE, ids=lambda kind: kind.__name__)
def test_the_evaluators_scored_in_this_thread_only_call_evaluate(kind):
    """What lets `score_stored` call `evaluate` itself: the installed `evaluate_async` does nothing else."""
    source = textwrap.dedent(inspect.getsource(kind.evaluate_async))
    body = [line.strip() for line in source.splitlines()[1:] if line.strip()]
    assert body == ["return self.evaluate(evaluation_case)"]
