"""The general recorder: run a task live on each case and write its cassette, case by case.

`record_cases` is what `python -m helpers.commands.record` runs once its arguments, files and
model are checked, and what an example's own refresh command (`walkthroughs.fcc.record`) runs on
its staged cases; `record_command` is the command line that re-records a cassette folder, named
in each cassette's provenance and in every replay error.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from helpers.commands import exits
from helpers.exchanges.cassettes import CassetteError, cassette_paths
from helpers.exchanges.recording import DEFAULT_MAX_CALLS, EXIT_AGENT_FAILED, capture_task, commit_fixture
from helpers.formats.exchange import DEFAULT_MATCH_ON


def record_cases(
    schema: Any,
    cases: Sequence[Any],
    task: Callable[[Any, Any], Any],
    cassettes: Path | str,
    *,
    model: Any,
    model_id: str,
    record_command: str,
    only: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    match_on: Sequence[str] = DEFAULT_MATCH_ON,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> int:
    """Record each case (or each `only` case) through `model` into its cassette; returns the exit code.

    Each case is captured, then written atomically, before the next one runs, so a failure later
    on keeps what already succeeded; a failed case leaves its cassette byte for byte. Paths that
    would collide are refused before anything runs.

    Args:
        schema: The pydantic output model.
        cases: The Strands Evals cases (`helpers.harness.cases.load_cases`).
        task: `task(case, model)`, returning the structured output.
        model: The provider to record (any Strands Model).
        record_command: Named in each cassette's provenance note and in replay errors.
        match_on: The request parts a replay of these cassettes must match.
        max_calls: The model calls one case may make.
        out: Where progress and each recording's review are printed (standard output).
        err: Where refusals and each failed case are printed (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        paths = cassette_paths(cassettes, [case.name for case in cases])
    except CassetteError as exc:
        print(f"{exc}. Nothing was written.", file=err)
        return exits.BAD_INPUT
    unknown = [name for name in only or [] if name not in paths]
    if unknown:
        print(
            f"--only {', '.join(map(repr, unknown))}: no such case in the case file; "
            f"the cases are {', '.join(map(repr, paths))}. Nothing was written.",
            file=err,
        )
        return exits.BAD_INPUT
    selected = [case for case in cases if not only or case.name in only]
    note = (
        f"Recorded from {model_id} by `{record_command}`: the requests are what the agent sent and the events "
        "exactly what the provider streamed."
    )
    failures: list[tuple[str, int]] = []
    for case in selected:
        path = paths[case.name]
        captured = capture_task(
            task,
            case,
            model,
            schema,
            source=str(path),
            model_id=model_id,
            note=note,
            label=case.name,
            err=err,
            match_on=match_on,
            max_calls=max_calls,
        )
        if isinstance(captured, int):
            print(f"{case.name}: {path} was left unchanged.", file=err)
            failures.append((case.name, captured))
            continue
        try:
            commit_fixture(captured, path, out, label=case.name)
        except OSError as exc:  # a WriteError (a full disk, a read-only folder): the old file is whole
            print(f"{case.name}: {exc}.", file=err)
            print(f"{case.name}: {path} was left unchanged.", file=err)
            failures.append((case.name, EXIT_AGENT_FAILED))
    recorded = len(selected) - len(failures)
    print(f"Recorded {recorded} of {len(selected)} case(s) into {cassettes}.", file=out)
    if failures:
        print(f"Failed: {', '.join(name for name, _ in failures)} (their cassettes are unchanged).", file=err)
        return failures[0][1]
    return exits.OK


def record_command(schema: str, cases: Path | str, task: str, cassettes: Path | str, model: str | None = None) -> str:
    """The command that records this cassette folder, for provenance notes and replay errors."""
    parts = ["python", "-m", "helpers.commands.record", "--schema", schema, "--cases", str(cases)]
    parts += ["--task", task, "--cassettes", str(cassettes)]
    if model is not None:
        parts += ["--model", model]
    return shlex.join(parts)
