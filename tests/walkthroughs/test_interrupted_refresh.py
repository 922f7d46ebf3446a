"""`record_fcc` killed while writing its files: the next reader or run finds the old set, whole.

The kill is real: a forked copy of this process runs `record_fcc.main` against the local rows
server and a stand-in model, and ends with `os._exit` at the first rename into a target folder,
when every new file (snapshot, case file, exchanges) is staged whole beside its target. Then the
readers a user runs (`score`, the notebook's snapshot loader) must see the old files with
nothing to undo first; a failing rerun removes the staging folder the kill left, and a
successful one writes the new set and removes the staged files the kill left beside it.
"""

import io
import os
import sys
import tempfile
from pathlib import Path

import pytest

from fieldeval.commands import score
from tests.commands.streams import outcome, streams
from tests.walkthroughs.test_record_fcc import copy_committed_fcc, fake, tool_turn
from walkthroughs.fcc import record as record_fcc
from walkthroughs.fcc.documents import from_snapshot

__all__ = ["serve", "server"]  # fixtures, imported for the tests below
from tests.walkthroughs.test_record_fcc import serve, server  # the local rows server fixtures


def every_file(*folders: Path) -> dict[str, bytes]:
    return {f"{folder.name}/{p.name}": p.read_bytes() for folder in folders for p in sorted(folder.iterdir())}


def argv(url: str, snapshot: Path, cases: Path, exchanges: Path) -> list[str]:
    return ["--base-url", url, "--timeout", "0.5", "--retries", "0", "--snapshot", str(snapshot)] + [
        "--cases",
        str(cases),
        "--exchanges",
        str(exchanges),
    ]


def visible(files: dict[str, bytes]) -> dict[str, bytes]:
    """The files a reader reads: not the hidden staged files a kill leaves beside them."""
    return {name: data for name, data in files.items() if not name.split("/")[-1].startswith(".")}


def record_and_die_before_the_renames(url: str, snapshot: Path, cases: Path, exchanges: Path) -> int:
    """Fork, run record_fcc in the child, kill it at its first rename into a target folder."""
    child = os.fork()
    if child == 0:  # the child: never returns to pytest
        try:
            real_replace = os.replace

            def replace_then_die(src, dst):
                if Path(dst).parent in (snapshot.parent, exchanges):
                    os._exit(9)  # killed: every file of the set staged whole, none renamed in
                real_replace(src, dst)

            os.replace = replace_then_die
            factory = fake([tool_turn(n) for n in range(5)])
            record_fcc.main(argv(url, snapshot, cases, exchanges), model_factory=factory, out=sys.stderr)
        finally:
            os._exit(1)  # the kill point was never reached
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


@pytest.fixture
def killed(server, tmp_path, monkeypatch):
    """The FCC targets after a killed refresh, the files as they were before it, and the server's URL."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where record_fcc stages
    (tmp_path / "tmp").mkdir()
    snapshot, cases, exchanges = copy_committed_fcc(tmp_path / "data")
    before = every_file(snapshot.parent, exchanges)
    assert record_and_die_before_the_renames(server.url, snapshot, cases, exchanges) == 9
    after = every_file(snapshot.parent, exchanges)
    assert visible(after) == before  # no reader has anything to undo
    staged = set(after) - set(before)  # what the kill left beside the targets: the new set, staged whole
    assert {name.split("/")[0] for name in staged} == {"fcc", "exchanges"}
    assert all(name.split("/")[-1].startswith(".") and name.endswith(".tmp") for name in staged)
    assert list((tmp_path / "tmp").iterdir())  # and its staging folder
    return snapshot, cases, exchanges, before, server.url, tmp_path / "tmp"


@pytest.fixture(autouse=True)
def _data_dir(tmp_path):
    (tmp_path / "data").mkdir()


def test_score_reads_the_old_set_after_a_killed_refresh(killed):
    snapshot, cases, exchanges, before, _, _ = killed
    out = io.StringIO()
    code = score.main(
        ["--schema", "walkthroughs.fcc.schema:FccInvoice", "--cases", str(cases)]
        + ["--task", "walkthroughs.fcc.task:extract", "--cassettes", str(exchanges)]
        + ["--out", str(snapshot.parent.parent / "run.json")],
        out=out,
    )
    assert code == 0, out.getvalue()
    assert "5 of them hand-authored" in out.getvalue()  # the committed, hand-authored set
    assert visible(every_file(snapshot.parent, exchanges)) == before


def test_the_notebook_loader_reads_the_old_set_after_a_killed_refresh(killed):
    snapshot, _, exchanges, before, _, _ = killed
    source = from_snapshot(snapshot)
    assert source.provenance["hand_authored"] is True
    assert visible(every_file(snapshot.parent, exchanges)) == before


def test_a_failing_rerun_cleans_the_staging_folder_and_writes_nothing(killed, serve):
    snapshot, cases, exchanges, before, _, staging = killed
    broken = serve(lambda path, query: (503, {}, b'{"error": "Internal error"}'))
    code, printed, errors = streams(
        record_fcc.main, argv(broken.url, snapshot, cases, exchanges), model_factory=fake([])
    )
    assert code == record_fcc.EXIT_AGENT_FAILED, errors
    assert "the staging folder of a killed run" in printed and not list(staging.iterdir())
    assert "Download failed" in errors and errors.rstrip().endswith(record_fcc.NOTHING_WRITTEN)
    assert visible(every_file(snapshot.parent, exchanges)) == before


def test_a_successful_rerun_writes_the_new_set_and_removes_what_the_kill_left(killed):
    snapshot, cases, exchanges, before, url, staging = killed
    factory = fake([tool_turn(n) for n in range(5)])
    code, printed, errors = streams(record_fcc.main, argv(url, snapshot, cases, exchanges), model_factory=factory)
    assert code == record_fcc.EXIT_OK, errors
    after = every_file(snapshot.parent, exchanges)
    assert after == visible(after)  # no staged file of the killed run is left beside the targets
    assert set(after) == set(before) and after["fcc/snapshot.json"] != before["fcc/snapshot.json"]
    assert not list(staging.iterdir())


def test_snapshot_and_cases_naming_one_file_are_refused_before_any_request(server, tmp_path):
    snapshot, _, exchanges = copy_committed_fcc(tmp_path / "data")
    before = snapshot.read_bytes()
    code, printed = outcome(record_fcc.main, argv(server.url, snapshot, snapshot, exchanges), model_factory=fake([]))
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert f"--cases {snapshot} is the same file as --snapshot {snapshot}" in printed, printed
    assert server.requests == 0 and snapshot.read_bytes() == before
