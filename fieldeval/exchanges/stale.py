"""Which cassettes a replay would refuse, and why, found without a model: what `--record-mode stale` re-records.

A cassette is stale when it is missing or unreadable, when it was recorded with other request
matching or from another model (provider, model id or a setting, compared when the model is
given and the cassette names the model it came from, hand-authored or not), or when replaying it
through the user's task is refused: the agent sent a request the cassette was not recorded for,
asked for a call it does not hold, or stopped before its end. The reasons name no file and no
case, so one change that made many cassettes stale reads as one reason with the cases it hit
(`grouped`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fieldeval.exchanges.cassettes import Cassettes
from fieldeval.exchanges.fixtures import Exchange, FixtureError
from fieldeval.exchanges.provenance import model_differences

NO_CASSETTE = "no cassette"


def check_cassette(
    cassettes: Cassettes, name: str, *, model: Any = None, match_on: Sequence[str] | None = None
) -> tuple[Exchange | None, str | None]:
    """The case's exchange and why it is stale before any replay (None when it is not), checked offline."""
    if not cassettes.paths[name].is_file():
        return None, NO_CASSETTE
    try:
        exchange = cassettes.load(name)
    except FixtureError as exc:
        return None, str(exc)
    if match_on is not None and tuple(exchange.match_on) != tuple(match_on):
        return exchange, f"match_on: recorded {','.join(exchange.match_on)}, given {','.join(match_on)}"
    if model is not None and records_a_model(exchange):
        differences = model_differences(exchange.provenance, model)
        if differences:
            return exchange, "the model differs: " + "; ".join(differences)
    return exchange, None


def records_a_model(exchange: Exchange) -> bool:
    """Whether a cassette names the model it came from, so that a given model can be checked against it.

    A hand-authored cassette served through a model (the sample's, through the stand-in's
    `BedrockModel`) names that model and is checked like a recording: a replay given another
    model would not be replaying that model's answers, and `--record-mode stale` with another
    model re-records it. One that names neither a provider nor a model id (a hand-authored file
    written without one; a recording always names its model id) cannot be checked, and is
    counted as not checked, never called checked.
    """
    provenance = exchange.provenance
    return bool(provenance.get("provider") or provenance.get("model_id"))


@dataclass
class Staleness:
    """What replaying a cassette folder offline found, by case name."""

    stale: dict[str, str] = field(default_factory=dict)  # a replay would refuse it: re-recording fixes it
    broken: dict[str, str] = field(default_factory=dict)  # the task fails on a replay its cassette allows
    unchecked: list[str] = field(default_factory=list)  # its cassette names no model, so none was checked


def stale_cases(
    user_task: Callable[[Any, Any], Any],
    schema: Any,
    cases: Sequence[Any],
    cassettes: Cassettes,
    *,
    model: Any = None,
    match_on: Sequence[str] | None = None,
) -> Staleness:
    """Replay every case's cassette through `user_task`, offline: which are stale, which broken, which unchecked.

    A task that fails on a replay its cassette did not refuse is a bug re-recording would not fix,
    so it is kept apart. With a model given, a cassette that names no model is listed as unchecked
    (`records_a_model`) and is stale only for another reason: stale is what a replay would refuse.
    """
    from fieldeval.harness.tasks import run_case

    found = Staleness()
    for case in cases:
        exchange, reason = check_cassette(cassettes, case.name, model=model, match_on=match_on)
        if exchange is not None and model is not None and not records_a_model(exchange):
            found.unchecked.append(case.name)
        if reason is None:
            assert exchange is not None
            _, problem = run_case(user_task, case, cassettes.replay(case.name, exchange), schema)
            if problem is not None:
                (found.stale if problem.stale else found.broken)[case.name] = problem.reason
            continue
        found.stale[case.name] = reason
    return found


def grouped(reasons: dict[str, str], order: Sequence[str]) -> list[str]:
    """One line per distinct reason, naming every case it hit in case order."""
    position = {name: index for index, name in enumerate(order)}
    cases: dict[str, list[str]] = {}
    for name in sorted(reasons, key=lambda name: position.get(name, len(order))):
        cases.setdefault(reasons[name], []).append(name)
    lines = []
    for reason, names in cases.items():
        where = f"case {names[0]}" if len(names) == 1 else f"{len(names)} cases ({', '.join(names)})"
        lines.append(f"{where}: {reason.rstrip('.')}.")
    return lines
