"""The harness task a run scores: the user's `task(case, model)`, with every case's problem kept.

The harness would score a case whose task raised as 0 and carry on. A report that hides a broken
cassette or a failing task behind a low score is worse than none, so the task records each case's
problem and the command refuses the run, saying each distinct problem once (`said_once`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def checked_task(
    user_task: Callable[[Any, Any], Any], schema: Any, models: dict[str, Callable[[], Any]]
) -> tuple[Callable[[Any], dict[str, Any]], list[tuple[str, str]]]:
    """The `@eval_task` around `user_task(case, models[case.name]())`, and the (case, problem) list it fills."""
    from strands_evals import eval_task

    from helpers.exchanges.recording import output_problem

    problems: list[tuple[str, str]] = []  # (case name, what went wrong)

    @eval_task()
    def task(case: Any) -> dict[str, Any]:
        model = models[case.name]()
        try:
            output = user_task(case, model)
        except Exception as exc:
            cause = _replay_problem(exc)
            problems.append((case.name, cause or f"the task raised {type(exc).__name__}: {exc}"))
            raise
        problem = output_problem(output, schema)
        if problem is not None:  # an AgentResult or a str would be scored, then fail to save
            problems.append((case.name, f"the task {problem}."))
            return {"output": None}
        if hasattr(model, "check_finished"):
            try:
                model.check_finished()
            except Exception as exc:
                problems.append((case.name, str(exc)))
        return {"output": output}

    return task, problems


def said_once(problems: list[tuple[str, str]], order: list[str]) -> str:
    """Each distinct problem once, with the cases it hit in case order: one task bug is one message."""
    cases: dict[str, list[str]] = {}
    position = {name: index for index, name in enumerate(order)}
    for name, problem in sorted(problems, key=lambda item: position.get(item[0], len(order))):
        cases.setdefault(problem, []).append(name)
    parts = []
    for problem, names in cases.items():
        shown = ", ".join(repr(name) for name in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        where = f"case {names[0]!r}" if len(names) == 1 else f"{len(names)} cases ({shown})"
        parts.append(f"{where}: {problem.rstrip('.')}.")
    return " ".join(parts)


def _replay_problem(exc: BaseException) -> str | None:
    """The message of a cassette mismatch anywhere in the exception's cause chain, else None."""
    from helpers.exchanges.fixtures import FixtureError
    from helpers.exchanges.replay import ReplayExhaustedError

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (FixtureError, ReplayExhaustedError)):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    return None
