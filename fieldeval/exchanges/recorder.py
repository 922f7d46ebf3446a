"""The general recorder: run a task live on the cases that need it and write their cassettes.

`record_cases` is what `python -m fieldeval.commands.record` runs once its arguments, files and
model are checked, and what an example's own refresh command (`walkthroughs.fcc.record`) runs on
its staged cases. Which cases it records is the record mode: `all` (every case, as vcrpy's `all`
re-records), `missing` (no cassette yet, as vcrpy's `once` records only where there is no
cassette) or `stale` (no cassette, or one a replay would refuse: `fieldeval.exchanges.stale`; vcrpy
has no such mode). Up to `concurrency` cases are in flight at once (fewer when the process's
open-file limit would not hold them: `fieldeval.exchanges.open_files`), each in a thread of its own,
its calls in order; a throttled provider pauses them all, and a provider that throttles every call
for `give_up_after` seconds stops the run (`fieldeval.exchanges.throttle`; the provider's own client
retries nothing: `fieldeval.exchanges.client_retries`). Only this thread writes: each cassette as its
case succeeds, atomically, so Ctrl-C, giving up or a failure later on keeps what already succeeded
and leaves nothing half-written.

It knows no exit code: a run that did not record every case ends with an error the command maps
to its code (`RecordRefused`, `fieldeval.errors.RecordingFailed` or its `NoStructuredOutput`, or
`KeyboardInterrupt` saying what Ctrl-C stopped), its message the one the user reads.
"""

from __future__ import annotations

import contextlib
import io
import queue
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from fieldeval.errors import EvalError, NoStructuredOutput, RecordingFailed
from fieldeval.exchanges.cassettes import CassetteError, Cassettes, cassette_paths
from fieldeval.exchanges.client_retries import send_once
from fieldeval.exchanges.open_files import cases_in_flight
from fieldeval.exchanges.provenance import provider_name
from fieldeval.exchanges.record_options import DEFAULT_MAX_CALLS, RecordOptions, record_command
from fieldeval.exchanges.recording import RecordingModel, capture_task, commit_fixture
from fieldeval.exchanges.stale import grouped, stale_cases
from fieldeval.exchanges.throttle import GIVE_UP_AFTER, SharedBackoff
from fieldeval.exchanges.usage import Usage, data_usage
from fieldeval.formats.exchange import DEFAULT_MATCH_ON
from fieldeval.scale.progress import CaseProgress

__all__ = ["RECORD_MODES", "DEFAULT_CONCURRENCY", "RecordRefused", "record_cases", "record_command"]

RECORD_MODES = ("all", "missing", "stale")
# Cases in flight by default: enough to hide a few seconds of latency per call, and few enough to stay
# inside the default request quotas of the usual providers (a throttled run slows down; it does not fail).
DEFAULT_CONCURRENCY = 4


class RecordRefused(EvalError, ValueError):
    """The run refused before any call (cassette names that collide, an `--only` name no case has); nothing written."""


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
    model_option: str | None = None,
    record_mode: str = "all",
    concurrency: int = 1,
    give_up_after: float = GIVE_UP_AFTER,
) -> None:
    """Record the cases the mode selects (of each `only` case, or all) through `model`.

    Each case is captured, then written atomically as it succeeds, so a failure later on keeps
    what already succeeded; a failed case leaves its cassette byte for byte. Paths that would
    collide are refused before anything runs.

    Args:
        schema: The pydantic output model.
        cases: The Strands Evals cases (`fieldeval.harness.cases.load_cases`).
        task: `task(case, model)`, returning the structured output.
        model: The provider to record (any Strands Model).
        record_command: Named in each cassette's provenance note and in replay errors.
        match_on: The request parts a replay of these cassettes must match.
        max_calls: The model calls one case may make.
        model_option: The `--model` factory that built `model` (None: the default Bedrock model), kept
            in each cassette so that a fix line re-records from the same provider.
        record_mode: `all`, `missing` or `stale` (`RECORD_MODES`).
        concurrency: Cases in flight at once (fewer if the open-file limit would not hold them, said on `err`).
        give_up_after: Seconds of throttling with no successful call after which the run stops.
        out: Where progress and each recording's review are printed (standard output).
        err: Where each failed case is printed (standard error).

    Raises:
        RecordRefused: before any call; nothing was written.
        RecordingFailed: a case failed (`NoStructuredOutput` if the first failed case, in case order,
            never produced the structured output), or the run gave up; every cassette recorded is kept.
        KeyboardInterrupt: Ctrl-C; the message says what was recorded, abandoned and not started.
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        paths = cassette_paths(cassettes, [case.name for case in cases])
    except CassetteError as exc:
        raise RecordRefused(f"{exc}. Nothing was written.") from exc
    unknown = [name for name in only or [] if name not in paths]
    if unknown:
        raise RecordRefused(
            f"--only {', '.join(map(repr, unknown))}: no such case in the case file; "
            f"the cases are {', '.join(map(repr, paths))}. Nothing was written."
        )
    selected = [case for case in cases if not only or case.name in only]
    chosen = _chosen(record_mode, selected, schema, task, cassettes, record_command, model, match_on, out, err)
    if not chosen:
        print(
            f"Nothing to record: every selected cassette in {cassettes} is up to date ({record_mode} mode).", file=out
        )
        return
    said = send_once(model)  # the run's back-off is the only layer of retries
    if said is not None:
        print(said, file=out)
    concurrency, lowered = cases_in_flight(concurrency, len(chosen))
    if lowered is not None:
        print(lowered, file=err)
    run = _Run(schema, task, model, model_id, record_command, match_on, max_calls, model_option, err, give_up_after)
    run.record(chosen, paths, cassettes, concurrency, out)


def _chosen(
    record_mode: str,
    selected: list[Any],
    schema: Any,
    task: Callable[[Any, Any], Any],
    cassettes: Path | str,
    command: str,
    model: Any,
    match_on: Sequence[str],
    out: TextIO,
    err: TextIO,
) -> list[Any]:
    """The cases the mode records, in case order; a stale search prints what it found and why."""
    if record_mode == "all":
        return selected
    folder = Cassettes(cassettes, [case.name for case in selected], tool_name=schema.__name__, record_command=command)
    if record_mode == "missing":
        return [case for case in selected if not folder.paths[case.name].is_file()]
    found = stale_cases(task, schema, selected, folder, model=model, match_on=match_on)
    stale, order = found.stale, [case.name for case in selected]
    fresh = len(selected) - len(stale) - len(found.broken)
    print(f"Replayed {len(selected)} cassette(s) offline: {fresh} up to date, {len(stale)} stale.", file=out)
    for line in grouped(stale, order):
        print(f"  stale: {line}", file=out)
    unchecked = [name for name in found.unchecked if name not in stale]
    if unchecked:
        only = " ".join(shlex.quote(name) for name in unchecked)
        why = f"no model named (hand-authored), so none was checked; `--record-mode all --only {only}` re-records"
        for line in grouped(dict.fromkeys(unchecked, f"{why} from this one"), order):
            print(f"  not checked: {line}", file=out)
    for line in grouped(found.broken, order):
        print(f"  not re-recorded, the task itself fails on its replay: {line}", file=err)
    return [case for case in selected if case.name in stale]


WORKER_NAME = "record-worker"  # each worker thread's name: what a caller that must outlive them can wait for


class _Run:
    """One recording run: the cases go out to worker threads, and come back here to be written."""

    def __init__(
        self,
        schema: Any,
        task: Callable[[Any, Any], Any],
        model: Any,
        model_id: str,
        command: str,
        match_on: Sequence[str],
        max_calls: int,
        model_option: str | None,
        err: TextIO,
        give_up_after: float = GIVE_UP_AFTER,
    ) -> None:
        self.schema, self.task, self.model, self.model_id = schema, task, model, model_id
        self.match_on, self.max_calls, self.err = match_on, max_calls, err
        self.options = RecordOptions(model=model_option, match_on=tuple(match_on), max_calls=max_calls)
        self.note = (
            f"Recorded from {model_id} by `{command}`: the requests are what the agent sent and the events "
            "exactly what the provider streamed."
        )
        self.stop = threading.Event()  # Ctrl-C, or the back-off giving up: no further case starts
        self.backoff = SharedBackoff(give_up_after=give_up_after, provider=provider_name(model), stop=self.stop)

    def record(
        self, chosen: list[Any], paths: dict[str, Path], cassettes: Path | str, concurrency: int, out: TextIO
    ) -> None:
        jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        for case in chosen:
            jobs.put(case)
        results: queue.SimpleQueue[tuple[Any, Any, str, RecordingModel]] = queue.SimpleQueue()
        progress = CaseProgress(len(chosen), self.err)
        for _ in range(min(max(concurrency, 1), len(chosen))):  # daemon threads: Ctrl-C need not wait for them
            worker = threading.Thread(target=self._work, args=(jobs, results, paths, progress), daemon=True)
            worker.name = WORKER_NAME
            worker.start()
        failures: list[tuple[str, RecordingFailed]] = []
        usage = Usage()
        try:
            with _interrupt_between_cases(self.stop):
                for _ in chosen:
                    finished = _next(results, self.stop, self.backoff)
                    if finished is None and self.backoff.given_up():
                        break
                    if finished is None:
                        raise KeyboardInterrupt
                    case, captured, said, recorder = finished
                    progress.close()
                    self.err.write(said)
                    failure = self._commit(case, captured, paths[case.name], out)
                    progress.end(failure is None)
                    if failure is not None:
                        failures.append((case.name, failure))
                    else:
                        usage += data_usage(captured, recorder.seconds)
        except KeyboardInterrupt as exc:
            self.stop.set()
            progress.close()
            waiting = len(chosen) - progress.done - progress.failed - progress.in_flight
            raise KeyboardInterrupt(
                f"Interrupted: recorded {progress.done} of {len(chosen)} case(s) into {cassettes}; "
                f"{progress.in_flight} in flight were abandoned and {waiting} not started, their cassettes unchanged."
            ) from exc
        progress.close()
        if self.backoff.given_up():
            raise RecordingFailed(self._gave_up(len(chosen), progress, usage, cassettes, out))
        recorded = len(chosen) - len(failures)
        print(f"Recorded {recorded} of {len(chosen)} case(s) into {cassettes}.", file=out)
        if recorded:
            print(f"They cost {usage.describe()}.", file=out)
        if self.backoff.summary():
            print(self.backoff.summary(), file=out)
        if failures:  # in case order, so the list and the exit code do not depend on which case finished first
            order = {case.name: number for number, case in enumerate(chosen)}
            failures.sort(key=lambda failure: order[failure[0]])
            kind = NoStructuredOutput if isinstance(failures[0][1], NoStructuredOutput) else RecordingFailed
            raise kind(f"Failed: {', '.join(name for name, _ in failures)} (their cassettes are unchanged).")

    def _gave_up(self, chosen: int, progress: CaseProgress, usage: Usage, cassettes: Path | str, out: TextIO) -> str:
        """Say what the run kept, every cassette written so far; return why it stopped, on whom, and what to do."""
        print(f"Recorded {progress.done} of {chosen} case(s) into {cassettes}.", file=out)
        if progress.done:
            print(f"They cost {usage.describe()}.", file=out)
        print(self.backoff.summary(), file=out)
        waiting = chosen - progress.done - progress.failed - progress.in_flight
        return (
            f"Gave up: {self.backoff.gave_up_reason()}. The {progress.done} cassette(s) recorded before are kept; "
            f"{progress.failed} case(s) failed, {progress.in_flight} in flight were abandoned and {waiting} not "
            "started, their cassettes unchanged. Run it again later (--record-mode missing records only the cases "
            "still without a cassette), lower --concurrency, ask the provider for a higher quota, or raise "
            "--give-up-after."
        )

    def _work(self, jobs: Any, results: Any, paths: dict[str, Path], progress: CaseProgress) -> None:
        while not self.stop.is_set():
            try:
                case = jobs.get_nowait()
            except queue.Empty:
                return
            progress.start()
            said = io.StringIO()  # printed by the writing thread, so two cases' lines never interleave
            recorder = RecordingModel(self.model, max_calls=self.max_calls, backoff=self.backoff)
            try:
                captured: Any = capture_task(
                    self.task,
                    case,
                    self.model,
                    self.schema,
                    source=str(paths[case.name]),
                    model_id=self.model_id,
                    note=self.note,
                    label=case.name,
                    match_on=self.match_on,
                    max_calls=self.max_calls,
                    record_options=self.options,
                    recorder=recorder,
                )
            except RecordingFailed as exc:
                print(exc, file=said)
                captured = exc
            except BaseException as exc:  # anything capture_task did not turn into its error still ends this case only
                captured = RecordingFailed(f"{case.name}: recording failed: {type(exc).__name__}: {exc}")
                print(captured, file=said)
            results.put((case, captured, said.getvalue(), recorder))

    def _commit(self, case: Any, captured: Any, path: Path, out: TextIO) -> RecordingFailed | None:
        """Write a captured case; a failed one (its error, already printed) only says its cassette is unchanged."""
        if isinstance(captured, RecordingFailed):
            print(f"{case.name}: {path} was left unchanged.", file=self.err)
            return captured
        try:
            commit_fixture(captured, path, out, label=case.name)
        except OSError as exc:  # a WriteError (a full disk, a read-only folder): the old file is whole
            print(f"{case.name}: {exc}.", file=self.err)
            print(f"{case.name}: {path} was left unchanged.", file=self.err)
            return RecordingFailed(f"{case.name}: {exc}.")
        return None


def _next(results: Any, stop: threading.Event, backoff: SharedBackoff) -> Any:
    """The next finished case, waiting in short steps so that Ctrl-C or giving up is seen at once; else None."""
    while not stop.is_set() and not backoff.given_up():  # giving up sets `stop` too
        try:
            return results.get(timeout=0.1)
        except queue.Empty:
            continue
    return None


@contextlib.contextmanager
def _interrupt_between_cases(stop: threading.Event) -> Iterator[None]:
    """The first Ctrl-C sets `stop` instead of raising, so the cassette being written is finished and counted.

    A KeyboardInterrupt raised mid-commit would leave a cassette written but not counted in the
    summary (or its review half printed). The run stops at the next case instead; a second Ctrl-C
    raises at once, as usual. Off the main thread, where no signal handler can be set, nothing changes.
    """
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if previous is None:  # off the main thread, or a handler not set from Python
        yield
        return

    def pressed(signum: int, frame: Any) -> None:
        stop.set()
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, pressed)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
