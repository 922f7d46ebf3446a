"""Scoring at scale on Dask: rollups equal to one process on a local cluster's workers and through a scheduler's
address; a batch that fails in its worker named case by case; a dead worker fails its batch without a stall;
every scheduler wait bounded.

One local cluster of 2 workers serves the module wherever a test is not about starting one.
`--cluster local` through the command starts its own, in the dead-worker test; every cluster's workers
fork from this process's one forkserver, which imported distributed and the scoring libraries once. The
Dask client leaves a thread behind in this process, after which local workers start from the forkserver
instead of forking this process; this file is collected after the local-worker files (`test_parallel.py`,
`test_scale_hardening.py`) so theirs still fork.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import textwrap
import threading
import time
from contextlib import contextmanager

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.formats.results import iter_results
from fieldeval.harness.schema import load_schema
from fieldeval.harness.scoring import score_outputs_sync, score_stored
from fieldeval.scale import engine as engine_module
from fieldeval.scale.batches import Scorer
from fieldeval.scale.engine import Engine, EngineError, open_engine
from fieldeval.scale.progress import FinalLine
from fieldeval.scale.run import score_at_scale
from tests.scale.hostile import project, score
from tests.scale.same_report import assert_same_rollups, assert_same_summary, score_command
from walkthroughs.invoices import Invoice
from walkthroughs.simulated_large import SCHEMA


@pytest.fixture(scope="module")
def local_cluster(network_guard):
    """One local Dask cluster of 2 worker processes for the module, started as `--cluster local` starts it.

    It talks to its workers on 127.0.0.1, so the network guard allows loopback while it runs.
    """
    pytest.importorskip("distributed")
    with network_guard.allowing_loopback(), open_engine(2, "local") as engine:
        yield engine


def test_local_dask_cluster_builds_the_one_process_report(run_pairs, single, local_cluster):
    run = score_at_scale(run_pairs, Scorer(SCHEMA), engine=local_cluster, batch_size=3)
    assert run.engine == "a local Dask cluster of 2 workers"
    assert_same_rollups(run.report, single)
    assert_same_summary(run.summary, single)


def test_compact_run_keeps_no_report_and_streams_the_same_rollups(run_pairs, single, local_cluster, tmp_path):
    run = score_at_scale(
        iter(run_pairs), Scorer(SCHEMA), engine=local_cluster, batch_size=5, keep_report=False, results=tmp_path / "r"
    )
    assert run.report is None
    assert_same_summary(run.summary, single)
    assert [row.name for row in iter_results(tmp_path / "r")] == [case.name for case, _ in run_pairs]


def test_the_local_cluster_listens_on_loopback_alone(local_cluster):
    """Scheduler, dashboard and workers accept connections from this machine only (an empty host binds all)."""
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    listening = [
        conn.laddr.ip
        for process in [me, *me.children(recursive=True)]
        for conn in process.net_connections(kind="inet")
        if conn.status == psutil.CONN_LISTEN
    ]
    assert local_cluster.address.startswith("tcp://127.0.0.1:")
    assert len(listening) >= 4  # the scheduler, its dashboard and at least one listener per worker
    assert set(listening) == {"127.0.0.1"}, listening


def test_a_running_scheduler_is_reached_by_its_address(run_pairs, local_cluster):
    pairs = run_pairs[-6:]
    cases = [case for case, _ in pairs]
    alone = score_outputs_sync(cases, dict((c.name, o) for c, o in pairs), StructuredOutputSimilarity(Invoice))
    run = score_at_scale(pairs, Scorer(SCHEMA), cluster=local_cluster.address, batch_size=2)
    assert run.engine == f"the Dask cluster at {local_cluster.address} (2 workers)"
    assert_same_rollups(run.report, alone)


@pytest.mark.local_servers
def test_score_on_a_running_cluster_writes_the_one_process_report(order_project, local_cluster, monkeypatch):
    """`score --cluster ADDRESS` writes the report file one process writes, byte for byte."""
    monkeypatch.chdir(order_project)
    monkeypatch.delitem(sys.modules, "order_schema", raising=False)
    assert score_command(order_project, "--out", "one.json")[0] == 0
    address = local_cluster.address
    code, printed = score_command(order_project, "--out", "dask.json", "--cluster", address, "--fan-out", "always")
    assert code == 0, printed
    assert f"scored 30 documents on the Dask cluster at {address} (2 workers); none failed" in printed
    assert (order_project / "dask.json").read_text() == (order_project / "one.json").read_text()


FRAGILE = """
from pydantic import BaseModel, field_validator

class Part(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def no_question_marks(cls, value):
        if "?" in value:
            raise ValueError("illegible code")
        return value

class Order(BaseModel):
    order_id: str
    parts: list[Part]
"""


@pytest.mark.parametrize("where", ["inline executor", "dask"])
def test_a_batch_that_fails_in_its_worker_is_named_case_by_case(tmp_path, monkeypatch, where, request):
    """A batch that cannot be rebuilt where it runs fails case by case; in one process nothing is rebuilt."""
    (tmp_path / "fragile_schema.py").write_text(textwrap.dedent(FRAGILE))
    monkeypatch.delitem(sys.modules, "fragile_schema", raising=False)
    order = load_schema("fragile_schema:Order", directory=tmp_path)
    part = order.model_fields["parts"].annotation.__args__[0]
    good = order(order_id="A", parts=[part(code="X1")])
    # Built without validation, so it cannot be rebuilt from its JSON in the worker.
    broken = order.model_construct(order_id="B", parts=[part.model_construct(code="X?")])
    pairs = [(Case(name=f"o{i}", input="", expected_output=good), good) for i in range(4)]
    pairs[2] = (Case(name="o2", input="", expected_output=broken), good)
    lines = FinalLine()
    inline = Engine(engine_module.InlineExecutor(), 1, "1 process")
    engine = request.getfixturevalue("local_cluster") if where == "dask" else inline
    scorer = Scorer("fragile_schema:Order", directory=str(tmp_path))
    here = score_at_scale(pairs, scorer, batch_size=2, progress=FinalLine())
    cases = [case for case, _ in pairs]
    assert here.report == score_stored(cases, {case.name: output for case, output in pairs}, scorer.evaluator())
    run = score_at_scale(pairs, scorer, engine=engine, batch_size=2, progress=lines)
    assert run.summary.failed == ["o2", "o3"]
    assert run.report.scores == [1.0, 1.0, 0.0, 0.0]
    assert run.report.test_passes == [True, True, False, False]
    reason = run.summary.reasons["o2"]
    assert "batch 1 (o2 .. o3, 2 cases) failed in its worker: ValidationError" in reason
    assert "Traceback" not in reason
    assert [case["name"] for case in run.report.cases] == ["o0", "o1", "o2", "o3"]
    assert lines.line() == f"scored 4 documents on {run.engine}; 2 could not be scored"


@pytest.mark.local_servers
def test_unreachable_scheduler_says_how_to_start_one(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(engine_module, "CONNECT_SECONDS", 1.0)
    with pytest.raises(EngineError, match=r"--cluster tcp://127.0.0.1:9: no Dask scheduler answered.*dask scheduler"):
        with open_engine(2, "tcp://127.0.0.1:9"):
            pass


# --- hardening: the schema's validator dies or hangs on a marked document inside a worker (hostile.py) -----


@pytest.mark.local_servers
def test_a_dead_worker_of_a_local_cluster_fails_its_batch_without_a_stall(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    project(tmp_path, {5: "DIE"})
    extra = ("--out", "r.json", "--cluster", "local", "--workers", "2", "--fan-out", "always", "--batch-size", "2")
    code, printed, seconds = score(tmp_path, monkeypatch, *extra)
    assert code == 0, printed
    assert "could not be scored, scored 0: case 'o4'" in printed and "KilledWorker" in printed
    # Dask hands each worker up to two batches; its death fails the one that killed it and may
    # fail the one queued behind it, never a batch of the other worker.
    lost = re.search(r"scored 8 documents on a local Dask cluster of 2 workers; (\d) could not be scored", printed)
    assert lost is not None and lost.group(1) in {"2", "4"}, printed
    assert json.loads((tmp_path / "r.json").read_text())["scores"].count(1.0) >= 4
    assert seconds < 60  # was a 300 s stall


@pytest.fixture
def silent_port(local_servers):
    """A port on 127.0.0.1 that accepts TCP connections and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    for connection in held:
        connection.close()
    server.close()


def test_a_scheduler_port_that_never_answers_is_exit_2_within_the_bound(tmp_path, monkeypatch, silent_port):
    pytest.importorskip("distributed")
    monkeypatch.setattr(engine_module, "CONNECT_SECONDS", 1.0)
    project(tmp_path)
    code, printed, seconds = score(
        tmp_path, monkeypatch, "--out", "r.json", "--cluster", f"tcp://127.0.0.1:{silent_port}"
    )
    assert code == 2, printed
    assert f"--cluster tcp://127.0.0.1:{silent_port}: no Dask scheduler answered" in printed
    assert seconds < 10
    assert not (tmp_path / "r.json").exists()


@contextmanager
def ended_at_once(cluster):
    """On leaving, kill the cluster's worker processes, then close it with 0.5 s for each call to its scheduler.

    Its batch hangs for an hour and its scheduler is gone: a polite close would wait 4 s for the worker
    and 30 s (Dask's connect timeout) to tell the stopped scheduler, neither of which the test is about.
    """
    import dask  # installed with distributed, which the test needs

    try:
        yield
    finally:
        for nanny in list(cluster.workers.values()):
            if nanny.pid:
                os.kill(nanny.pid, signal.SIGKILL)
        with dask.config.set({"distributed.comm.timeouts.connect": "0.5s"}):
            cluster.close()


@pytest.mark.local_servers
def test_a_lost_scheduler_ends_the_run_within_the_bound(tmp_path, monkeypatch):
    """The scheduler is shut down while a batch hangs on its worker: the run stops, exit 2, nothing written."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(engine_module, "SCHEDULER_LOST_SECONDS", 1.0)
    project(tmp_path, {1: "HANG"}, count=4)
    with engine_module.local_cluster(1) as cluster, ended_at_once(cluster):
        address = cluster.scheduler_address
        stop = threading.Event()

        def close_once_the_batches_run() -> None:
            while not stop.is_set() and not cluster.scheduler.tasks:
                time.sleep(0.1)
            if not stop.wait(1.0):
                cluster.sync(cluster.scheduler.close)

        closer = threading.Thread(target=close_once_the_batches_run, daemon=True)
        closer.start()
        try:
            extra = ("--out", "r.json", "--cluster", address, "--batch-size", "1")
            code, printed, seconds = score(tmp_path, monkeypatch, *extra)
        finally:
            stop.set()
            closer.join(5)
    assert code == 2, printed
    assert f"--cluster {address}: the Dask scheduler stopped answering" in printed and "Nothing was written." in printed
    assert seconds < 60
    assert not (tmp_path / "r.json").exists()
