"""The harness task a run scores: the user's `task(case, model)`, with every case's problem kept.

The harness would score a case whose task raised as 0 and carry on. A report that hides a broken
cassette or a failing task behind a low score is worse than none, so the task records each case's
problem and the command refuses the run, saying each distinct problem once (`said_once`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Problem:
    """Why one case's task did not give a usable output; `stale` when its cassette refused (re-recording fixes it)."""

    reason: str
    stale: bool = False


def run_case(user_task: Callable[[Any, Any], Any], case: Any, model: Any, schema: Any) -> tuple[Any, Problem | None]:
    """`user_task(case, model)`, its output checked, and the replay finished: (output, None) or (None, problem)."""
    from fieldeval.exchanges.recording import output_problem

    try:
        output = user_task(case, model)
    except Exception as exc:
        refusal = _replay_refusal(exc)
        if refusal is not None:
            return None, Problem(getattr(refusal, "reason", str(refusal)), stale=True)
        return None, Problem(f"the task raised {type(exc).__name__}: {exc}")
    problem = output_problem(output, schema)
    if problem is not None:  # an AgentResult or a str would be scored, then fail to save
        return None, Problem(f"the task {problem}.")
    if hasattr(model, "check_finished"):
        try:
            model.check_finished()
        except Exception as exc:
            return None, Problem(getattr(exc, "reason", str(exc)), stale=True)
    return output, None


def checked_task(
    user_task: Callable[[Any, Any], Any], schema: Any, models: dict[str, Callable[[], Any]]
) -> tuple[Callable[[Any], dict[str, Any]], dict[str, Problem]]:
    """The `@eval_task` around `user_task(case, models[case.name]())`, and the case -> problem map it fills.

    A case with no model (its cassette was refused before the run) is scored as an error row.
    """
    from strands_evals import eval_task

    problems: dict[str, Problem] = {}

    @eval_task()
    def task(case: Any) -> dict[str, Any]:
        if case.name not in models:
            raise RuntimeError(f"case {case.name!r} has no usable cassette")
        output, problem = run_case(user_task, case, models[case.name](), schema)
        if problem is not None:  # the run is refused; the harness keeps the case as an error row meanwhile
            problems[case.name] = problem
            raise RuntimeError(problem.reason)
        return {"output": output}

    return task, problems


def said_once(problems: dict[str, Problem], order: list[str]) -> str:
    """Each distinct problem once, with the cases it hit in case order: one task bug is one message."""
    cases: dict[str, list[str]] = {}
    position = {name: index for index, name in enumerate(order)}
    for name in sorted(problems, key=lambda name: position.get(name, len(order))):
        cases.setdefault(problems[name].reason, []).append(name)
    parts = []
    for problem, names in cases.items():
        shown = ", ".join(repr(name) for name in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        where = f"case {names[0]!r}" if len(names) == 1 else f"{len(names)} cases ({shown})"
        parts.append(f"{where}: {problem.rstrip('.')}.")
    return " ".join(parts)


def _replay_refusal(exc: BaseException) -> BaseException | None:
    """A cassette's refusal anywhere in the exception's cause chain, else None."""
    from fieldeval.exchanges.fixtures import FixtureError
    from fieldeval.exchanges.replay import ReplayExhaustedError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (FixtureError, ReplayExhaustedError)):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
