"""`make lab` (scripts/lab.py): a lab session cannot change the committed notebooks.

Starts the real server `make lab` starts, on 127.0.0.1 with a token, over a working copy made
in a temporary folder, and saves notebooks through its contents API the way an autosave does.
"""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from fieldeval.mode import ENV_VAR
from scripts import lab

TOKEN = "lab-test-token"
OPENED = "Strands_Evals_Evaluator.ipynb"
EDITED = "Strands_Evals_FuzzyEquals.ipynb"


def digest(folder: Path) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(folder.glob("*.ipynb"))}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Lab:
    """The running server: JSON requests with the token, bounded in time."""

    def __init__(self, port: int, process: subprocess.Popen, runtime: Path):
        self.base, self.process, self.runtime = f"http://127.0.0.1:{port}", process, runtime

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"token {TOKEN}")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read() or b"{}")

    def wait_ready(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the lab server exited at start"
            try:
                self.call("GET", "/api/status")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise AssertionError(f"the lab server did not answer within {seconds} s")


@pytest.fixture(scope="module")
def session(tmp_path_factory, network_guard):
    """A working copy made as `make lab` makes it, served by the command `make lab` runs.

    The module's tests talk to that server on 127.0.0.1, so the network guard allows loopback while it runs.
    """
    checkout = tmp_path_factory.mktemp("checkout")
    committed = shutil.copytree(lab.COMMITTED, checkout / "examples" / "notebooks")  # a still copy of what is committed
    working = checkout / ".lab"
    lab.refresh(committed, working)
    port = free_port()
    home = tmp_path_factory.mktemp("home")  # the server's own runtime and settings files go here
    environ = {**os.environ, ENV_VAR: "auto", "HOME": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    command = lab.server_command(f"--port={port}", f"--IdentityProvider.token={TOKEN}", lab=working)
    process = subprocess.Popen(
        command, env=lab.lab_environment(environ), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    server = Lab(port, process, home / "runtime")
    try:
        with network_guard.allowing_loopback():
            server.wait_ready()
            yield committed, working, server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def test_stored_notebooks_open_trusted(session):
    committed, _, server = session
    for name in digest(committed):
        model = server.call("GET", f"/api/contents/{name}?content=1")
        code = [cell for cell in model["content"]["cells"] if cell["cell_type"] == "code"]
        assert code and all(cell["metadata"].get("trusted") is True for cell in code), name


def save(server: Lab, name: str, change) -> None:
    """Read a notebook through the lab, change its content, save it back: what an autosave does."""
    model = server.call("GET", f"/api/contents/{name}?content=1")
    change(model["content"])
    server.call("PUT", f"/api/contents/{name}", {"type": "notebook", "format": "json", "content": model["content"]})


def clear_outputs_and_touch_metadata(content: dict) -> None:
    """What the reported autosaves did: a metadata change on opening, every output cleared mid-restart."""
    content["metadata"]["widgets"] = {"state": {}}
    for cell in content["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None


def test_an_autosave_changes_the_working_copy_and_never_the_committed_notebook(session):
    committed, working, server = session
    committed_before = digest(committed)
    save(server, OPENED, clear_outputs_and_touch_metadata)
    assert digest(committed) == committed_before
    saved = nbformat.read(working / OPENED, as_version=4)
    assert all(not cell.outputs for cell in saved.cells if cell.cell_type == "code")


def test_the_next_refresh_restores_what_you_only_ran_and_keeps_what_you_edited(session):
    committed, working, server = session
    save(server, OPENED, clear_outputs_and_touch_metadata)
    save(server, EDITED, lambda content: content["cells"].append(nbformat.v4.new_markdown_cell("my own note")))
    lines = lab.refresh(committed, working)
    assert lines == [
        f"copied {OPENED}",
        f"kept {working / EDITED}: you edited it (the committed version is {committed / EDITED})",
    ]
    assert (working / OPENED).read_bytes() == (committed / OPENED).read_bytes()  # outputs back, as committed
    assert nbformat.read(working / EDITED, as_version=4).cells[-1].source == "my own note"


def test_read_first_sorts_first_in_the_file_browser(session):
    committed, _, server = session
    listing = server.call("GET", "/api/contents/")["content"]
    names = sorted((entry["name"] for entry in listing), key=str.lower)  # hidden files are not listed
    assert names[0] == "READ_FIRST.md" and set(digest(committed)) <= set(names)
    text = server.call("GET", "/api/contents/READ_FIRST.md?content=1")["content"]
    assert f"Start with **{lab.FIRST}**" in text and "What happens to your edits" in text


def test_kernels_get_the_quiet_environment_but_keep_the_users_mode(session, tmp_path):
    committed, _, server = session
    kernel = server.call("POST", "/api/kernels", {"name": "python3"})
    client = BlockingKernelClient(connection_file=str(server.runtime / f"kernel-{kernel['id']}.json"))
    client.load_connection_file()
    client.start_channels()
    client.hb_channel.time_to_dead = 30.0  # one missed 1 s heartbeat on a busy machine is not a dead kernel
    printed = []
    try:
        client.wait_for_ready(timeout=60)
        names = ("PYTHONWARNINGS", "JUPYTER_COLUMNS", ENV_VAR)
        code = f"import os; print([os.environ.get(name) for name in {names!r}])"
        client.execute_interactive(code, timeout=60, output_hook=lambda msg: printed.append(msg["content"].get("text")))
    finally:
        client.stop_channels()
        server.call("DELETE", f"/api/kernels/{kernel['id']}")
    assert "['ignore', '115', 'auto']\n" in printed  # silenced, pinned width, and the user's mode, not replay
