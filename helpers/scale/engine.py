"""Where batches run: one thread, N local processes, or a Dask cluster, all as one `Executor`.

Every engine is handed back as a `concurrent.futures.Executor`, so the fan-out code has one
path and no scheduler of its own: `ThreadPoolExecutor(1)` for one process (a thread, so the
harness's `asyncio.run` works under a notebook's running loop), `ProcessPoolExecutor` for
`--workers N`, and Dask's `Client.get_executor()` for `--cluster`.

Dask rather than Ray: the work is pure-Python, CPU-bound scoring of independent documents and
a merge of small count tables, driven from a notebook or a command. Dask's `LocalCluster` is
pure Python, starts in a few seconds on two cores and runs inside a notebook; its client speaks
`concurrent.futures`. Ray brings a compiled runtime, an object store and a much larger install
for features (actors, shared memory for large arrays) this workload does not use.

Processes are started with `spawn`: a fork of a process that runs threads (a notebook kernel,
the harness's thread pool) can inherit a held lock and hang, and `spawn` behaves the same on
Linux, macOS and Windows.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

INSTALL_HINT = "pip install '.[cluster]' (or pip install 'dask[distributed]')"
CONNECT_TIMEOUT = "30s"


class EngineError(RuntimeError):
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


def local_workers(requested: int | None) -> int:
    """The worker count to use: as asked, or one per CPU core when not given."""
    if requested is None:
        return max(1, os.cpu_count() or 1)
    if requested < 1:
        raise EngineError(f"--workers {requested}: give a whole number of at least 1")
    return requested


@contextmanager
def open_engine(workers: int = 1, cluster: str | None = None) -> Iterator[Engine]:
    """Open the engine, yield it, and shut it down (cancelling what has not started) on the way out.

    Args:
        workers: Local processes (`1` runs in this process, on one thread). With `cluster="local"`,
            the number of Dask workers to start.
        cluster: `None` for local processes, `"local"` to start a `distributed.LocalCluster`, or a
            scheduler address (`tcp://host:8786`) to use a running cluster.

    Raises:
        EngineError: If Dask is not installed, or the scheduler cannot be reached.
    """
    if cluster is None:
        if workers == 1:
            from helpers.scale.batches import close_runner

            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="score") as executor:
                try:
                    yield Engine(executor, 1, "1 process")
                finally:
                    executor.submit(close_runner).result()  # the scoring thread's event loop
            return
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        try:
            yield Engine(executor, workers, f"{workers} local processes")
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        return
    with _dask_client(workers, cluster) as (client, name):
        slots = max(1, sum(client.nthreads().values()))
        if not client.nthreads():
            raise EngineError(f"--cluster {cluster}: the scheduler has no workers; start one: `dask worker ADDRESS`")
        yield Engine(client.get_executor(pure=False), slots, name, client.scheduler.address)


@contextmanager
def _dask_client(workers: int, cluster: str) -> Iterator[tuple[object, str]]:
    """A Dask client on a new local cluster or a running scheduler; Dask is imported only here."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise EngineError(f"--cluster needs Dask, which is not installed: {INSTALL_HINT}", missing=True) from exc
    if cluster == "local":
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # any free port: its HTTP endpoints never collide with another cluster
                silence_logs=logging.ERROR,
            ) as local,
            Client(local) as client,
        ):
            yield client, f"a local Dask cluster of {workers} workers"
        return
    try:
        client = Client(cluster, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise EngineError(
            f"--cluster {cluster}: no Dask scheduler answered ({type(exc).__name__}: {exc}); start one with "
            "`dask scheduler` and `dask worker ADDRESS`, or use --cluster local"
        ) from exc
    with client:
        workers_seen = len(client.scheduler_info().get("workers", {}))
        yield client, f"the Dask cluster at {cluster} ({workers_seen} workers)"
