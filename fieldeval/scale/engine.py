"""Where batches run: this process, N local processes, or a Dask cluster, all as one `Executor`.

Every engine is handed back as a `concurrent.futures.Executor`, so the fan-out code has one
path and no scheduler of its own: `InlineExecutor` for one process (each batch is scored as it
is submitted, in the caller's thread: the scoring needs no event loop, see
`fieldeval.harness.scoring.score_stored`), `fieldeval.scale.pool.WorkerPool` for `--workers N`
(a dead or hung worker fails only its batch), and Dask's `Client.get_executor()` for `--cluster`.

Dask rather than Ray: the work is pure-Python, CPU-bound scoring of independent documents and
a merge of small count tables, driven from a notebook or a command. Dask's `LocalCluster` is
pure Python, starts in a few seconds on two cores and runs inside a notebook; its client speaks
`concurrent.futures`. Ray brings a compiled runtime, an object store and a much larger install
for features (actors, shared memory for large arrays) this workload does not use.

Local worker processes are forked from this process only while it runs one thread (on Linux),
and otherwise from its forkserver, a fresh process of one thread: a fork of a process that runs
threads (a notebook kernel, Dask's client) can inherit a held lock and hang
(`fieldeval.scale.pool.start_method`). A local Dask cluster's workers come from the same
forkserver (`local_cluster`).

Every wait on a Dask scheduler is bounded: the connection by `CONNECT_SECONDS` (also when a
port accepts TCP and never answers), each request to the scheduler by `REQUEST_SECONDS`, and a
scheduler that stops answering while batches run ends the run after `SCHEDULER_LOST_SECONDS`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Dask is optional: imported at run time only where a cluster is asked for
    from distributed import Client

from fieldeval.errors import EvalError

INSTALL_HINT = "pip install '.[cluster]' (or pip install 'dask[distributed]')"
CONNECT_SECONDS = 10.0
REQUEST_SECONDS = 10.0
SCHEDULER_LOST_SECONDS = 10.0
BATCH_TIMEOUT = 300.0  # seconds one batch may take before its worker is stopped (--batch-timeout)


class EngineError(EvalError, RuntimeError):
    """An engine cannot be started or reached; the message says which and what to do.

    `missing` is True when the engine's library is not installed (the command's exit 1), False
    when it is installed but cannot be used as asked (exit 2).
    """

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class Engine:
    """An open executor, how many batches it runs at once, and a name for messages."""

    executor: Executor
    slots: int
    name: str
    address: str | None = None  # the Dask scheduler's, for other clients to connect to
    problem: Callable[[], str | None] = lambda: None  # why the engine can no longer run batches, if it cannot
    bounds_batches: bool = False  # whether the executor itself ends a batch past its deadline


class InlineExecutor(Executor):
    """Runs each submitted call at once, in the caller's thread: one process, no thread, no loop."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS says, else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def local_workers(requested: int | None, beyond_cores: bool = False) -> int:
    """The worker count to use: as asked up to the cores (past them with `beyond_cores`), or one per core."""
    if requested is None:
        return cores()
    if requested < 1:
        raise EngineError(f"--workers {requested}: give a whole number of at least 1")
    return requested if beyond_cores else min(requested, cores())


@contextmanager
def open_engine(workers: int = 1, cluster: str | None = None, batch_timeout: float = BATCH_TIMEOUT) -> Iterator[Engine]:
    """Open the engine, yield it, and shut it down (cancelling what has not started) on the way out.

    Args:
        workers: Local processes (`1` runs in this process). With `cluster="local"`, the number of
            Dask workers to start.
        cluster: `None` for local processes, `"local"` to start a `distributed.LocalCluster`, or a
            scheduler address (`tcp://host:8786`) to use a running cluster.
        batch_timeout: Seconds a batch may run on a local worker before the worker is stopped and
            the batch fails (Dask's own workers cannot be stopped; see `fieldeval.scale.run`).

    Raises:
        EngineError: If Dask is not installed, or the scheduler cannot be reached.
    """
    if cluster is None:
        if workers == 1:
            yield Engine(InlineExecutor(), 1, "1 process", bounds_batches=True)  # nothing to stop it with
            return
        from fieldeval.scale.pool import WorkerPool

        pool = WorkerPool(workers, batch_timeout)
        try:
            yield Engine(pool, workers, f"{workers} local processes", bounds_batches=True)
        finally:
            pool.shutdown()
        return
    with _dask_client(workers, cluster) as (client, name):
        threads = bounded(client.nthreads, f"--cluster {cluster}: asking the scheduler for its workers")
        if not threads:
            raise EngineError(f"--cluster {cluster}: the scheduler has no workers; start one: `dask worker ADDRESS`")
        yield Engine(
            client.get_executor(pure=False),
            max(1, sum(threads.values())),
            name,
            client.scheduler.address if client.scheduler is not None else None,  # None once disconnected
            _scheduler_problem(client, cluster),
        )


def bounded(call: Callable[[], Any], what: str, seconds: float | None = None) -> Any:
    """`call()` on a thread of its own, waiting at most `seconds` (`REQUEST_SECONDS`) for it.

    Raises:
        EngineError: If it has not answered in time (the thread is left to end on its own).
    """
    seconds = REQUEST_SECONDS if seconds is None else seconds
    answer: dict[str, Any] = {}

    def run() -> None:
        try:
            answer["value"] = call()
        except BaseException as exc:  # handed to the caller below
            answer["error"] = exc

    thread = threading.Thread(target=run, name="bounded-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise EngineError(f"{what}: no answer within {seconds:g} s")
    if "error" in answer:
        raise answer["error"]
    return answer["value"]


def _scheduler_problem(client: Client, cluster: str) -> Callable[[], str | None]:
    """A check the fan-out calls while it waits: the sentence to stop with once the scheduler is lost."""
    lost_since: list[float] = []  # when the client was first seen not running

    def problem() -> str | None:
        if client.status == "running":
            lost_since.clear()
            return None
        if not lost_since:
            lost_since.append(time.monotonic())
        if time.monotonic() - lost_since[0] < SCHEDULER_LOST_SECONDS:
            return None
        return (
            f"--cluster {cluster}: the Dask scheduler stopped answering (client {client.status} for "
            f"{SCHEDULER_LOST_SECONDS:g} s); restart it, or use --cluster local"
        )

    return problem


def require_dask() -> None:
    """Refuse `--cluster` at once when Dask is not installed, whatever the run's size.

    Only looked up, not imported: importing `distributed` takes about half a second, which a run
    the size rule keeps in this process would pay for nothing.
    """
    if importlib.util.find_spec("distributed") is None:
        raise EngineError(f"--cluster needs Dask, which is not installed: {INSTALL_HINT}", missing=True)


@contextmanager
def _dask_client(workers: int, cluster: str) -> Iterator[tuple[Client, str]]:
    """A Dask client on a new local cluster or a running scheduler; Dask is imported only here."""
    require_dask()
    from distributed import Client

    if cluster == "local":
        with local_cluster(workers) as local, Client(local) as client:
            yield client, f"a local Dask cluster of {workers} workers"
        return
    hint = "start one with `dask scheduler` and `dask worker ADDRESS`, or use --cluster local"
    try:
        client = bounded(
            lambda: Client(cluster, timeout=f"{CONNECT_SECONDS}s"),
            f"--cluster {cluster}: no Dask scheduler answered; {hint}",
            CONNECT_SECONDS + 2,
        )
    except (OSError, TimeoutError) as exc:
        raise EngineError(
            f"--cluster {cluster}: no Dask scheduler answered ({type(exc).__name__}: {exc}); {hint}"
        ) from exc
    try:
        info = bounded(client.scheduler_info, f"--cluster {cluster}: asking the scheduler for its workers")
        yield client, f"the Dask cluster at {cluster} ({len(info.get('workers', {}))} workers)"
    finally:
        try:
            bounded(client.close, f"--cluster {cluster}: closing the connection")
        except EngineError:
            pass


@contextmanager
def local_cluster(workers: int) -> Iterator[Any]:
    """A `distributed.LocalCluster` of `workers` one-thread worker processes, as `--cluster local` runs it.

    Its workers are forked from this process's forkserver (`fieldeval.scale.pool.forkserver_context`)
    where the platform has one, instead of spawned as Dask does by default: a spawned worker
    imports Dask, Strands Evals and stickler again before its first batch, a few CPU seconds each,
    which on two cores is most of what a second worker gains on a thousand documents
    (`python -m bench.bench_scale` prints the start-up both ways). The forkserver imports them once
    and lives as long as this process, so a second cluster (a notebook run again) starts its
    workers in milliseconds. When Dask starts it, it has the environment Dask sets for a new worker
    (`distributed.nanny.pre-spawn-environ`); a variable changed here after the server started no
    longer reaches later workers, as Dask's documentation warns for this setting.

    A worker that dies fails its batch at once (named, scored 0) instead of being retried on the
    others (`allowed-failures: 0`); each retry would start a worker again. Dask's statistical
    profiler is off (`distributed.worker.profile.enabled`): it samples the running batch's stack
    every 10 ms, stickler's comparisons recurse deeply, and on 1,000 documents of 20 line items it
    cost about 5 of the run's 34 CPU seconds (`python -m bench.bench_scale` measures the cluster);
    its only reader is the dashboard's profile page.
    """
    import dask
    from distributed import LocalCluster
    from distributed.utils import get_mp_context

    from fieldeval.scale.pool import forkserver_context, replacement_method

    method = replacement_method()  # the forkserver, or spawn where there is none
    settings = {
        "distributed.scheduler.allowed-failures": 0,
        "distributed.worker.multiprocessing-method": method,
        "distributed.worker.profile.enabled": False,
    }
    with dask.config.set(settings):  # for the cluster's whole life: a worker that dies is restarted the same way
        if method == "forkserver":
            get_mp_context()  # Dask sets its own list of modules for the forkserver once, here; ours replaces it
            forkserver_context("distributed")
        with LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",  # the scheduler and its workers listen on this machine only
            # any free port, on loopback: never collides with another cluster, never reachable from
            # another machine (an empty host, as in ":0", binds every interface)
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        ) as cluster:
            yield cluster
