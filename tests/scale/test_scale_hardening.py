"""Scale-out on local workers stays bounded: workers capped, a dead or hung worker fails only its batch,
workers end with their driver, a killed run's leftovers are cleaned, cluster addresses checked before
anything starts.

Through the score command as a user runs it, on a folder whose schema's validator dies or hangs on a
marked document inside a worker (`hostile.py`). The same on Dask is in `test_scale_with_dask.py`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scale.hostile import ARGS, project, run_score, score


def test_more_workers_than_cores_are_capped_unless_asked(tmp_path, monkeypatch):
    from fieldeval.scale.engine import cores

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


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    """Whether any thread of `pid` still runs: a killed process's first thread turns zombie while its other
    threads are still exiting, and its files (the lock on the staged file it inherited) close with the last."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return False
    for task in tasks:
        try:
            if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                return True
        except FileNotFoundError:  # that thread has just gone
            continue
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")
def test_workers_end_with_a_killed_driver_and_the_next_run_cleans_its_file(tmp_path, monkeypatch):
    """The driver runs as a program, killed as `kill -9` or the OOM killer would; the next run (here, in this
    process) finds the staged file it left and removes it."""
    project(tmp_path, {7: "HANG"})
    options = ["--results", "run.jsonl", "--workers", "2", "--fan-out", "always"]
    command = [sys.executable, "-m", "fieldeval.commands.score", *ARGS, *options, "--batch-size", "1"]
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
    code, out, err = run_score(tmp_path, monkeypatch, *options)
    assert code == 0, out + err
    assert sorted(path.name for path in tmp_path.iterdir() if path.name.startswith(".")) == []


# A driver whose two workers start from the forkserver, as in a notebook kernel, each busy for an hour.
FORKSERVER_DRIVER = """
import time
from fieldeval.scale import pool
pool.start_method = lambda: "forkserver"
workers = pool.WorkerPool(2, batch_timeout=3600)
busy = [workers.submit(time.sleep, 3600) for _ in range(2)]
while not all(worker.job for worker in workers._workers):
    time.sleep(0.05)
print(*(worker.process.pid for worker in workers._workers), flush=True)
time.sleep(3600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to see the workers end")
def test_workers_from_the_forkserver_end_with_a_killed_driver():
    """Their parent is the forkserver, not the driver: they end when it does, and it ends with the driver."""
    driver = subprocess.Popen([sys.executable, "-c", FORKSERVER_DRIVER], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in driver.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers), "the workers never took their batches"
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(10)
        driver.stdout.close()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers), "a worker outlived its driver"


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
