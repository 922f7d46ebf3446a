"""Scale-out stays bounded: workers capped, a dead or hung worker fails only its batch, workers end with
their driver, a killed run's leftovers are cleaned, cluster addresses checked, every scheduler wait bounded.

All through `python -m helpers.commands.score` as a user runs it. The schema's validator dies or hangs on a
marked document, but only inside a worker process (the driver validates the same values when it
reads the files, and must live).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers.commands.score import main
from tests.commands.streams import streams

SCHEMA = """
import multiprocessing, os, time
from pydantic import BaseModel, field_validator

class Line(BaseModel):
    sku: str

    @field_validator("sku")
    @classmethod
    def misbehave_in_a_worker(cls, value):
        if multiprocessing.parent_process() is not None:  # a worker, never the driver
            if value == "DIE":
                os._exit(3)
            if value == "HANG":
                time.sleep(3600)
        return value

class Order(BaseModel):
    order_id: str
    lines: list[Line]
"""


def project(folder: Path, marked: dict[int, str] | None = None, count: int = 8) -> Path:
    """A user's folder: the schema module, cases and predictions; `marked` puts DIE or HANG in a document."""
    (folder / "hostile_schema.py").write_text(textwrap.dedent(SCHEMA))
    cases, predictions = [], []
    for index in range(count):
        sku = (marked or {}).get(index, f"S{index}")
        truth = {"order_id": f"O-{index}", "lines": [{"sku": sku}]}
        cases.append({"name": f"o{index}", "input": "x", "expected_output": truth})
        predictions.append({"name": f"o{index}", "output": truth})
    (folder / "cases.jsonl").write_text("".join(json.dumps(line) + "\n" for line in cases))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(line) + "\n" for line in predictions))
    return folder


ARGS = ["--schema", "hostile_schema:Order", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]


def run_score(folder: Path, monkeypatch, *extra: str) -> tuple[int, str, str]:
    """Exit code, standard output and standard error of one score run in `folder`."""
    monkeypatch.chdir(folder)
    monkeypatch.delitem(sys.modules, "hostile_schema", raising=False)
    return streams(main, [*ARGS, *extra])


def score(folder: Path, monkeypatch, *extra: str) -> tuple[int, str, float]:
    """Exit code, all the user reads (results, then warnings and errors), and the seconds it took."""
    started = time.monotonic()
    code, out, err = run_score(folder, monkeypatch, *extra)
    return code, out + err, time.monotonic() - started


def test_more_workers_than_cores_are_capped_unless_asked(tmp_path, monkeypatch):
    from helpers.scale.engine import cores

    project(tmp_path)
    code, out, err = run_score(tmp_path, monkeypatch, "--out", "r.json", "--workers", "10000")
    assert code == 0, err
    assert f"--workers 10000: this machine has {cores()} CPU core(s); using {cores()}" in err  # a warning
    assert "CPU core(s)" not in out
    code, printed, _ = score(tmp_path, monkeypatch, "--out", "r.json", "--workers", "10000", "--beyond-cores")
    assert code == 0 and "CPU core(s)" not in printed


def test_a_small_run_is_scored_in_one_process_and_says_why(tmp_path, monkeypatch):
    project(tmp_path)
    code, printed, _ = score(tmp_path, monkeypatch, "--out", "r.json", "--workers", "2")
    assert code == 0, printed
    assert "scored 8 documents on 1 process (too small a run for 2 workers to gain); none failed" in printed


def test_a_dead_and_a_hung_worker_fail_only_their_batches_and_the_run_goes_on(tmp_path, monkeypatch):
    project(tmp_path, {2: "DIE", 5: "HANG"})
    extra = ("--out", "r.json", "--workers", "2", "--fan-out", "always", "--batch-size", "2", "--batch-timeout", "1")
    code, printed, seconds = score(tmp_path, monkeypatch, *extra)
    assert code == 0, printed
    assert "Traceback" not in printed and "BrokenProcessPool" not in printed
    died = "batch 1 (o2 .. o3, 2 cases) failed in its worker: WorkerLost: its worker process died (exit code 3)"
    hung = "batch 2 (o4 .. o5, 2 cases) failed in its worker: WorkerLost: it ran past the 1 s batch deadline"
    for names, reason in ((("o2", "o3"), died), (("o4", "o5"), hung)):
        for name in names:
            assert (
                f"could not be scored, scored 0: case {name!r}: An error occurred: could not be scored ({reason}"
                in (printed)
            )
    assert "scored 8 documents on 2 local processes; 4 could not be scored" in printed
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["scores"] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert seconds < 60  # the bound: the batch deadline, plus starting a replacement worker


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


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_workers_end_with_a_killed_driver_and_the_next_run_cleans_its_file(tmp_path):
    project(tmp_path, {7: "HANG"})
    command = [sys.executable, "-m", "helpers.commands.score", *ARGS, "--results", "run.jsonl", "--workers", "2"]
    command += ["--fan-out", "always", "--batch-size", "1"]
    driver = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".run.jsonl.*.tmp")) or len(_children(driver.pid)) < 2:
            assert time.monotonic() < deadline and driver.poll() is None, "the run never started its workers"
            time.sleep(0.2)
        time.sleep(1.0)  # the workers have taken batches; one hangs on document 7
        workers = _children(driver.pid)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its driver"
    assert list(tmp_path.glob(".run.jsonl.*.tmp")), "the killed run should have left its staged file"
    project(tmp_path)  # nothing hangs this time
    finished = subprocess.run(
        [*command[:-4], "--fan-out", "always"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == []


@pytest.mark.parametrize(
    "address, message",
    [
        ("nonsense", "--cluster 'nonsense' is not a scheduler address; give a scheduler address such as tcp://"),
        ("http://10.0.0.5:8787", "--cluster http://10.0.0.5:8787: that is a web (dashboard) address"),
        ("local ", "--cluster 'local ': remove the spaces around `local`."),
        ("tcp://10.0.0.5:99999", "port 99999 is outside 1-65535"),
    ],
)
def test_a_bad_cluster_address_is_exit_2_before_anything_starts(tmp_path, monkeypatch, address, message):
    project(tmp_path)
    code, printed, seconds = score(tmp_path, monkeypatch, "--out", "r.json", "--cluster", address)
    assert code == 2
    assert message in printed and "Nothing was written." in printed
    assert not (tmp_path / "r.json").exists()


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
    from helpers.scale import engine

    monkeypatch.setattr(engine, "CONNECT_SECONDS", 1.0)
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
    distributed = pytest.importorskip("distributed")
    from helpers.scale import engine

    monkeypatch.setattr(engine, "SCHEDULER_LOST_SECONDS", 1.0)
    project(tmp_path, {1: "HANG"}, count=4)
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0")
    with cluster, ended_at_once(cluster):
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
