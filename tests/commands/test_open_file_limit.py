"""`--concurrency` far above what the open-file limit holds: the run keeps fewer cases in flight and says so.

Each run is a program of its own whose soft limit on open files is lowered before it starts (as
`ulimit -n 64` would), recording or scoring live many copies of the purchase-order sample through
Strands' real `OpenAIModel` against the local OpenAI-compatible server. Asking for a thousand cases
in flight used to open sockets and event loops until "Too many open files" failed cases in
whichever thread asked next.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.openai import OpenAIServer, factory_module
from tests.servers.orders import FOLDER, OrderAnswers, copies, write_cases

CASES = 40
LIMIT = 96  # open files: what the programs below may hold
FACTORY = factory_module(timeout=10)


@pytest.fixture(autouse=True)
def openai_client():
    pytest.importorskip("openai")


@pytest.fixture
def project(tmp_path) -> Path:
    for name in ("purchase_order.py", "extract.py"):
        shutil.copy(FOLDER / name, tmp_path / name)
    (tmp_path / "models.py").write_text(FACTORY, encoding="utf-8")
    write_cases(tmp_path / "cases.jsonl", copies(CASES))
    return tmp_path


def lowered_limit() -> None:
    """Run in the child before it starts: the soft limit on open files lowered, the hard one kept."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, hard))


@pytest.mark.local_servers
@pytest.mark.parametrize(
    ("command", "argv", "done"),
    [
        ("record", ["--cassettes", "cassettes"], f"Recorded {CASES} of {CASES} case(s) into cassettes."),
        ("score", ["--mode", "live", "--out", "live.json"], f"{CASES} of {CASES} case(s) pass."),
    ],
)
def test_a_thousand_in_flight_under_96_open_files_runs_every_case_and_says_it_ran_fewer(project, command, argv, done):
    answers = OrderAnswers(copies(CASES), lookups=False)
    with OpenAIServer(answer=answers.openai_answer, delay=0.05) as server:
        env = dict(os.environ, LOCAL_OPENAI_URL=server.url + "/v1")
        env.pop("EVAL_NOTEBOOKS_MODE", None)
        base = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
        finished = subprocess.run(
            [sys.executable, "-m", f"fieldeval.commands.{command}", *base, "--model", "models:local", *argv]
            + ["--concurrency", "1000"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=lowered_limit,
        )
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "Traceback" not in finished.stderr and "Too many open files" not in finished.stderr
    assert done in finished.stdout
    (said,) = [line for line in finished.stderr.splitlines() if line.startswith("--concurrency 1000:")]
    assert f"this process may open {LIMIT} files (`ulimit -n`)" in said and "run at a time" in said
