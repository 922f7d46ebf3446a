"""The harness task around the user's `task(case, model)`: which model each case gets, and what it found.

In a replay every cassette is checked before any agent runs (and, given a model, its provider and
settings against that model's); a refused cassette does not stop the others, so every stale case
is listed at once, with the one `record` command that re-records exactly them. Live, each case gets
a fresh recording wrapper around the one model, sharing one back-off, so its calls are bounded and
its usage is kept; the model's own client retries nothing (`fieldeval.exchanges.client_retries`), a
provider that throttles every call for `--give-up-after` seconds stops the run, and Ctrl-C ends
every pause at once (`fieldeval.exchanges.throttle`).
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, TextIO

DEFAULT_CONCURRENCY = 4  # live cases in flight: fieldeval.exchanges.recorder.DEFAULT_CONCURRENCY, which says why
HARNESS_WORKERS = 10  # Experiment.run_evaluations_async's own default, for a replay


@dataclass(frozen=True)
class TaskOptions:
    """What the agent run needs of a score request: how many cases in flight, and what `record` would need."""

    schema: str
    cases: Path
    task: str
    cassettes: Path | None  # None live
    model: str | None
    concurrency: int | None
    give_up_after: float | None = None  # live: None for fieldeval.exchanges.throttle.GIVE_UP_AFTER


class AgentRun:
    """The harness task around `task(case, model)` with this run's models, and what it found on the way.

    `model` is the live model (`mode="live"`), or in a replay the model each cassette is checked
    against (None: settings not checked). Nothing here refuses: `incomplete()` says what stopped
    the run, for the run's one refusal.
    """

    def __init__(
        self,
        user_task: Callable[[Any, Any], Any],
        schema: Any,
        options: TaskOptions,
        mode: str,
        cases: list,
        out: TextIO,
        model: Any = None,
    ) -> None:
        from fieldeval.harness.tasks import checked_task
        from fieldeval.scale.progress import CaseProgress

        self.options, self.mode, self.names = options, mode, [case.name for case in cases]
        self.stale: dict[str, str] = {}
        self.exchanges: dict[str, Any] = {}
        self.recorders: dict[str, Any] = {}
        self.backoff: Any = None  # live: the one back-off every case in flight shares
        self.gave_up: set[str] = set()  # live: the cases the back-off stopped when it gave up
        self.progress = CaseProgress(len(cases), sys.stderr, what="scored live")
        models = self._live(model, cases, out) if mode == "live" else self._replays(model, schema, cases, out)
        self.concurrency = options.concurrency or (DEFAULT_CONCURRENCY if mode == "live" else HARNESS_WORKERS)
        self.task, self.problems = checked_task(
            self._counted(user_task) if mode == "live" else user_task, schema, models
        )

    def _live(self, model: Any, cases: list, out: TextIO) -> dict[str, Callable[[], Any]]:
        from fieldeval.exchanges.client_retries import send_once
        from fieldeval.exchanges.provenance import provider_name
        from fieldeval.exchanges.recording import RecordingModel
        from fieldeval.exchanges.throttle import GIVE_UP_AFTER, SharedBackoff
        from fieldeval.services.models import describe_live

        give_up_after = self.options.give_up_after or GIVE_UP_AFTER
        # one back-off for every case in flight, the only layer of retries
        backoff = self.backoff = SharedBackoff(give_up_after=give_up_after, provider=provider_name(model))
        print(f"Scoring {len(cases)} case(s) live with {describe_live(model)}.", file=out)
        said = send_once(model)
        if said is not None:
            print(said, file=out)

        def recorder(name: str) -> Any:  # a fresh one per case, which bounds its calls and keeps its usage
            self.recorders[name] = RecordingModel(model, backoff=backoff)
            return self.recorders[name]

        return {case.name: partial(recorder, case.name) for case in cases}

    def _counted(self, user_task: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        from fieldeval.exchanges.throttle import GaveUpError

        def task(case: Any, model: Any) -> Any:
            self.progress.start()
            ok = False
            try:
                output = user_task(case, model)
                ok = True
                return output
            except Exception as exc:
                if _in_chain(exc, GaveUpError):  # said once, for every such case, by `incomplete`
                    self.gave_up.add(case.name)
                raise
            finally:
                self.progress.end(ok)

        return task

    def _replays(self, given: Any, schema: Any, cases: list, out: TextIO) -> dict[str, Callable[[], Any]]:
        from fieldeval.exchanges.cassettes import Cassettes
        from fieldeval.exchanges.provenance import describe_origins
        from fieldeval.exchanges.record_options import record_command
        from fieldeval.exchanges.stale import check_cassette

        options = self.options
        assert options.cassettes is not None, "a replay reads a cassette folder"
        command = record_command(options.schema, options.cases, options.task, options.cassettes)
        self.cassettes = Cassettes(
            options.cassettes, self.names, tool_name=schema.__name__, record_command=command, output_model=schema
        )
        for name in self.names:
            exchange, reason = check_cassette(self.cassettes, name, model=given)
            if exchange is not None:
                self.exchanges[name] = exchange
            if reason is not None:
                self.stale[name] = reason
        print(
            f"Scoring {len(cases)} case(s) by replaying {options.cassettes}"
            f"{describe_origins(self.exchanges.values())}; {self._checked(given)}.",
            file=out,
        )
        fresh = {name: exchange for name, exchange in self.exchanges.items() if name not in self.stale}
        return {name: partial(self.cassettes.replay, name, exchange) for name, exchange in fresh.items()}

    @contextmanager
    def stopping_on_interrupt(self) -> Iterator[None]:
        """Ctrl-C stops the back-off first, so every pause in flight ends at once, then interrupts as before.

        The harness runs each case in a thread that the interpreter waits for before it exits: a
        case sleeping out a 60 s pause would hold Ctrl-C up that long. Off the main thread, or
        in a replay (which never pauses), nothing changes.
        """
        on_main = threading.current_thread() is threading.main_thread()
        previous = signal.getsignal(signal.SIGINT) if on_main else None
        if self.backoff is None or not callable(previous):  # off the main thread, ignored, or not set from Python
            yield
            return
        backoff, interrupt = self.backoff, previous

        def pressed(signum: int, frame: Any) -> None:
            backoff.stop()
            interrupt(signum, frame)

        signal.signal(signal.SIGINT, pressed)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _checked(self, given: Any) -> str:
        """What the replay checked each cassette's model against, counting the cassettes that name no model."""
        from fieldeval.exchanges.stale import records_a_model

        if given is None:
            return "model settings not checked (pass --model to check them)"
        loaded = list(self.exchanges.values())
        unchecked = sum(not records_a_model(exchange) for exchange in loaded)
        against = f"--model {self.options.model}"
        if not unchecked:
            return f"each cassette's model and settings checked against {against}"
        if unchecked == len(loaded):
            return f"model settings not checked: none of the {unchecked} cassette(s) names a model (hand-authored)"
        return (
            f"model and settings checked against {against} for {len(loaded) - unchecked} of {len(loaded)} "
            f"cassette(s); {unchecked} name no model (hand-authored) and were not checked"
        )

    def finish(self, out: TextIO) -> None:
        self.progress.close()
        if self.backoff is not None and self.backoff.summary():
            print(self.backoff.summary(), file=out)
        for name, problem in list(self.problems.items()):
            if problem.stale:
                self.stale[name] = problem.reason
                del self.problems[name]

    def interrupted(self) -> str:
        """What Ctrl-C stopped: the cases run, abandoned and not started, their cost, and that nothing was written."""
        nothing = "nothing was written (--out and --results are written only when every case has run)"
        if self.mode != "live":  # a replay makes no calls: nothing was spent
            return f"Interrupted: {nothing}."
        from fieldeval.exchanges.usage import total

        self.progress.close()
        done, failed, in_flight = self.progress.done, self.progress.failed, self.progress.in_flight
        waiting = len(self.names) - done - failed - in_flight
        return (
            f"Interrupted: {done} of {len(self.names)} case(s) ran live, {failed} failed, {in_flight} in flight were "
            f"abandoned and {waiting} not started; the calls made cost {total(self.usages().values()).describe()}; "
            f"{nothing}."
        )

    def incomplete(self) -> str | None:
        """Every stale case (grouped by reason) and every task problem, as one message; None if the run completed."""
        from fieldeval.exchanges.stale import grouped
        from fieldeval.harness.tasks import said_once

        if not self.stale and not self.problems:
            return None
        lines = [f"The {self.mode} run did not complete."]
        problems = self.problems
        if self.backoff is not None and self.backoff.given_up():  # one line for every case it stopped
            lines.append(
                f"It gave up: {self.backoff.gave_up_reason()}; {len(self.gave_up)} case(s) were stopped. Run it "
                "again later, lower --concurrency, ask the provider for a higher quota, or raise --give-up-after."
            )
            problems = {name: problem for name, problem in problems.items() if name not in self.gave_up}
        if self.stale:
            lines.append(f"{len(self.stale)} of {len(self.names)} case(s) would be refused by their cassettes:")
            lines += [f"  {line}" for line in grouped(self.stale, self.names)]
            lines += self._fix_lines()
        if problems:
            lines.append(said_once(problems, self.names))
        return "\n".join(lines)

    def _fix_lines(self) -> list[str]:
        """The `record --record-mode stale` command(s) that re-record exactly the stale cases, with their options.

        Each carries the options its cassettes were recorded with, except the model: a replay given
        `--model` checked the cassettes against that model, so only recording from it makes the
        replay pass (the recorded one would find every cassette up to date and record nothing).
        """
        from fieldeval.exchanges.record_options import RecordOptions, record_command

        given = self.options.model

        def options_of(exchange: Any) -> RecordOptions:
            recorded = RecordOptions.of(exchange)  # its matching and call limit, and its model unless one was given
            return recorded if given is None else replace(recorded, model=given)

        known = [options_of(exchange) for exchange in self.exchanges.values()]
        fallback = known[0] if known else RecordOptions(model=given)
        groups: dict[RecordOptions, list[str]] = {}
        for name in self.stale:
            exchange = self.exchanges.get(name)
            groups.setdefault(options_of(exchange) if exchange else fallback, []).append(name)
        lines = ["Re-record exactly those with:"]
        options = self.options
        for recorded, names in groups.items():
            folder = options.cassettes or "CASSETTES"  # stale cases come from a replay, which has its folder
            command = record_command(options.schema, options.cases, options.task, folder, recorded, record_mode="stale")
            lines.append(
                f"  {command}" + (" --only " + " ".join(shlex.quote(n) for n in names) if len(groups) > 1 else "")
            )
        return lines

    def usages(self) -> dict[str, Any]:
        """What each case's model calls cost: read from its cassette in a replay, measured live otherwise."""
        from fieldeval.exchanges.usage import Usage, events_usage, exchange_usage

        if self.mode == "live":
            return {
                name: events_usage(call["events"] for call in recorder.calls) + Usage(seconds=recorder.seconds)
                for name, recorder in self.recorders.items()
            }
        return {name: exchange_usage(exchange) for name, exchange in self.exchanges.items()}

    def sources(self) -> dict[str, dict[str, Any]]:
        """Where each case's output came from, for the saved run."""
        from fieldeval.exchanges.provenance import exchange_source, live_source

        if self.mode == "live":
            usages = self.usages()
            return {name: live_source(recorder.inner, usages[name]) for name, recorder in self.recorders.items()}
        return {name: exchange_source(exchange) for name, exchange in self.exchanges.items()}


def _in_chain(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc` or anything in its cause chain is a `kind`."""
    link: BaseException | None = exc
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        if isinstance(link, kind):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False
