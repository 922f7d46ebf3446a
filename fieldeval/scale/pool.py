"""Local worker processes that cannot take a run down with them.

`ProcessPoolExecutor` gives up on the whole pool when one worker dies (every batch in flight
ends in `BrokenProcessPool`), cannot stop a worker that hangs, and waits for it forever at
shutdown. Here each worker holds one batch at a time, so the driver always knows which batch a
worker had:

- a worker that dies (killed, out of memory, `os._exit` in a validator) fails only its batch,
  with its exit code, and a new worker takes its place;
- a batch that runs past `batch_timeout` seconds (counted from when a started worker took it)
  has its worker killed, fails with that reason, and a new worker takes its place;
- a worker that dies or is not ready within `START_SECONDS` while starting is replaced, and
  after `START_FAILURES` such workers in a row every waiting batch fails with the reason;
- shutdown asks every worker to stop, waits at most `SHUTDOWN_SECONDS` for all of them, then
  kills what is left;
- a worker ends with its driver: on Linux the kernel sends it SIGKILL when the driver dies
  (`prctl(PR_SET_PDEATHSIG)`), and everywhere a thread in the worker exits once its parent
  is gone (checked every `PARENT_CHECK_SECONDS`).

It is a `concurrent.futures.Executor`, so the fan-out code treats it as it treats Dask's.

How workers start (`start_method`): on Linux, while this process runs one thread only, the
first workers are forked from it, before the pool's own dispatch thread starts. A fork of a
one-thread process cannot inherit a lock another thread holds, which is what makes forking a
threaded process (a notebook kernel) unsafe, and it inherits every library, the schema and the
stickler speed-up already imported: a forked worker is ready in milliseconds. Otherwise, and
for every replacement worker (started while the dispatch thread runs), workers are forked from
this process's forkserver (`forkserver_context`), which imports the scoring path once for all of
them, where a spawned worker would spend 1.5-2.5 s importing Strands Evals and stickler again,
most of what two workers gain on a run of a thousand documents on 2 cores. Only where there is
no forkserver (Windows) are workers spawned.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Literal

SHUTDOWN_SECONDS = 5.0
PARENT_CHECK_SECONDS = 1.0
START_SECONDS = 120.0  # for a worker to start and import the libraries before it counts as failed
START_FAILURES = 3  # workers in a row that die or stall while starting: the pool gives up
_TICK = 0.2  # how often the dispatcher looks at deadlines when nothing else happens
StartMethod = Literal["fork", "forkserver", "spawn"]  # the ways a worker process can start here


class WorkerLost(RuntimeError):
    """A batch's worker died or was stopped for running past the deadline; the message says which."""


@dataclass
class _Worker:
    process: Any
    connection: Connection
    started: float = field(default_factory=time.monotonic)
    job: tuple[Future, float] | None = None  # the batch's future and its deadline
    ready: bool = False
    retired: bool = False  # dead and not replaced (the pool is closing or gave up)
    lifeline: Connection | None = None  # held open for a worker from the forkserver (see `_end_with_driver`)

    def close(self) -> None:
        self.connection.close()
        if self.lifeline is not None:
            self.lifeline.close()


class WorkerPool(Executor):
    """`workers` processes, one batch each at a time, every batch bounded by `batch_timeout` seconds."""

    def __init__(self, workers: int, batch_timeout: float) -> None:
        self._context = multiprocessing.get_context("spawn")
        self.start_method = start_method()
        self._timeout = batch_timeout
        self._lock = threading.Lock()
        self._wake_read, self._wake_write = self._context.Pipe(duplex=False)
        self._queue: deque = deque()
        self._closing = False
        self._start_failures = 0
        self._broken: str | None = None
        self._workers = [self._start(self.start_method) for _ in range(workers)]
        self._thread = threading.Thread(target=self._dispatch, name="worker-pool", daemon=True)
        self._thread.start()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        with self._lock:
            if self._closing:
                raise RuntimeError("the worker pool is shut down")
            if self._broken is not None:
                _fail(future, WorkerLost(self._broken))
                return future
            self._queue.append((future, fn, args, kwargs))
        self._wake_write.send(None)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop every worker within `SHUTDOWN_SECONDS`, killing any that do not stop; cancel what has not started."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            queued, self._queue = list(self._queue), deque()
        for future, *_ in queued:
            future.cancel()
        self._wake_write.send(None)
        self._thread.join(SHUTDOWN_SECONDS)
        for worker in self._workers:
            if worker.job is not None:  # still busy: cancelled work, or a hung worker that would not hear
                _fail(worker.job[0], WorkerLost("the run stopped before this batch finished"))
                worker.process.kill()
            try:
                worker.connection.send(None)
            except (OSError, ValueError):  # gone, or its connection already closed
                pass
        deadline = time.monotonic() + SHUTDOWN_SECONDS
        for worker in self._workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
        for worker in self._workers:
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(1.0)
            worker.close()
        if not self._thread.is_alive():
            self._wake_read.close()
            self._wake_write.close()

    def _start(self, method: StartMethod | None = None) -> _Worker:
        """A new worker, started `method`'s way (by default as a worker that replaces one is)."""
        method = method or replacement_method()
        parent, child = self._context.Pipe()
        watched, held = None, None
        # One literal per call: typeshed types get_context(str) as BaseContext, which has no Process.
        if method == "fork":
            context: Any = multiprocessing.get_context("fork")
        elif method == "forkserver":  # its parent is the forkserver: it watches a pipe from this process instead
            context = forkserver_context()
            watched, held = self._context.Pipe(duplex=False)
        else:
            context = multiprocessing.get_context("spawn")
        driver = None if watched is not None else os.getpid()
        process = context.Process(target=worker_main, args=(child, driver, watched), daemon=True)
        process.start()
        child.close()
        if watched is not None:
            watched.close()  # the worker has its own copy; this process keeps the end it never writes to
        return _Worker(process, parent, lifeline=held)

    def _dispatch(self) -> None:
        """Hand queued batches to idle workers, collect results, and fail the batches of lost workers."""
        while not self._closing:
            self._assign()
            waiting = (
                [self._wake_read] + [w.connection for w in self._workers] + [w.process.sentinel for w in self._workers]
            )
            for ready in wait(waiting, timeout=_TICK):
                if ready is self._wake_read:
                    self._wake_read.recv()
            for index, worker in enumerate(self._workers):
                if not worker.retired:
                    self._collect(index, worker)

    def _assign(self) -> None:
        with self._lock:
            for worker in self._workers:
                if not self._queue:
                    return
                if worker.ready and worker.job is None and worker.process.is_alive():
                    future, fn, args, kwargs = self._queue.popleft()
                    if not future.set_running_or_notify_cancel():
                        continue
                    try:
                        worker.connection.send((fn, args, kwargs))
                    except Exception as exc:  # could not be pickled, or the worker just died
                        _fail(future, exc)
                        continue
                    worker.job = (future, time.monotonic() + self._timeout)

    def _collect(self, index: int, worker: _Worker) -> None:
        """Take a finished result from `worker`, or replace it if it died or ran past its batch's deadline."""
        try:
            while worker.connection.poll():
                message = worker.connection.recv()
                if message == "ready":
                    worker.ready = True
                    self._start_failures = 0
                    continue
                ok, value = message
                assert worker.job is not None  # a worker replies only to the batch it was sent
                future, _ = worker.job
                worker.job = None
                future.set_result(value) if ok else _fail(future, value)
        except (EOFError, OSError):
            pass  # the worker is gone; its sentinel says so below
        if not worker.process.is_alive():
            self._replace(index, worker, f"its worker process died (exit code {worker.process.exitcode})")
        elif not worker.ready and time.monotonic() - worker.started > START_SECONDS:
            worker.process.kill()
            worker.process.join(1.0)
            self._replace(index, worker, f"a worker was not ready within {START_SECONDS:g} s")
        elif worker.job is not None and time.monotonic() > worker.job[1]:
            worker.process.kill()
            worker.process.join(1.0)
            self._replace(
                index, worker, f"it ran past the {self._timeout:g} s batch deadline and its worker was stopped"
            )

    def _replace(self, index: int, worker: _Worker, reason: str) -> None:
        """Fail the worker's batch with `reason` and start another; give up after too many failed starts."""
        if worker.job is not None:
            _fail(worker.job[0], WorkerLost(reason))
        worker.close()
        if not worker.ready:
            self._start_failures += 1
        if self._start_failures >= START_FAILURES and self._broken is None:
            self._broken = f"{START_FAILURES} worker processes in a row failed while starting ({reason})"
            with self._lock:
                queued, self._queue = list(self._queue), deque()
            for future, *_ in queued:
                _fail(future, WorkerLost(self._broken))
        if self._closing or self._broken is not None:
            worker.retired = True
            return
        self._workers[index] = self._start()


def start_method() -> StartMethod:
    """`fork` on Linux while this process runs one thread only, else as a replacement starts (module docstring)."""
    return "fork" if sys.platform.startswith("linux") and threading.active_count() == 1 else replacement_method()


def replacement_method() -> StartMethod:
    """How a worker starts where this process cannot be forked: from the forkserver, else spawned."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def forkserver_context(*also: str) -> Any:
    """The forkserver start method, set to import the scoring path (and `also`) when its server starts.

    The forkserver is a fresh process of one thread, started once per process, so forking from it
    is safe where forking a threaded process is not, and every worker forked from it has the
    imports the server did (`fieldeval.scale.worker_imports`). Only the server's first start reads
    the list: a pool and a local Dask cluster in one process share it, and a worker imports
    whatever the server did not.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["fieldeval.scale.worker_imports", *also])
    return context


def _fail(future: Future, exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class RemoteError(Exception):
    """An error raised in a worker, carried back by its type name and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def worker_main(connection: Connection, parent: int | None, lifeline: Connection | None) -> None:
    """A worker's life: end with the driver, say it is ready, then run one batch at a time until told to stop.

    Before saying ready it imports what every batch needs (`fieldeval.scale.worker_imports`).
    """
    _end_with_driver(parent, lifeline)
    import fieldeval.scale.worker_imports  # noqa: F401

    connection.send("ready")
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        fn, args, kwargs = message
        try:
            reply = (True, fn(*args, **kwargs))
        except Exception as exc:
            reply = (False, RemoteError(type(exc).__name__, str(exc)))
        connection.send(reply)


def _end_with_driver(parent: int | None, lifeline: Connection | None) -> None:
    """Make this worker end when the driver does, however it was started.

    Forked or spawned by the driver (`parent`, its pid): the kernel's parent-death signal, and a
    thread that exits once the parent is gone. Forked by the forkserver, the parent is the server,
    which cannot be watched instead: every process it forks holds the server's own pipe open, so
    the server outlives a dead driver for as long as its workers do. Such a worker gets the read
    end of a pipe only the driver holds (`lifeline`, never written to), and a thread exits once
    that pipe closes, as Dask's workers watch their nanny.
    """
    if lifeline is not None:

        def wait_for_the_driver() -> None:
            try:
                lifeline.recv_bytes()
            except (EOFError, OSError):
                pass
            os._exit(1)

        threading.Thread(target=wait_for_the_driver, name="driver-watch", daemon=True).start()
        return
    assert parent is not None
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
