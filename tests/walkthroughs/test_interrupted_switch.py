"""`record_fcc` killed in the middle of its switch: the next reader or run finds the old set, whole.

The kill is real: a forked copy of this process runs `record_fcc.main` against the local rows
server and a stand-in model, and ends with `os._exit` between two renames of the switch (the
new snapshot and case file in, the old exchanges still there). Then the readers a user runs
(`score`, the notebook's snapshot loader) and a failing rerun must each see the old files, with
no journal, backup or staging folder left.
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


def record_and_die_mid_switch(url: str, snapshot: Path, cases: Path, exchanges: Path) -> int:
    """Fork, run record_fcc in the child, kill it after the snapshot and case file are renamed in."""
    child = os.fork()
    if child == 0:  # the child: never returns to pytest
        try:
            real_replace, renamed = os.replace, []

            def replace_then_die(src, dst):
                if Path(dst).parent in (snapshot.parent, exchanges) and not str(dst).endswith(".switch.json"):
                    renamed.append(dst)
                    if len(renamed) == 3:
                        os._exit(9)  # killed: two files of the set switched, the rest not
                real_replace(src, dst)

            os.replace = replace_then_die
            factory = fake([tool_turn(n) for n in range(5)])
            record_fcc.main(argv(url, snapshot, cases, exchanges), model_factory=factory, out=sys.stderr)
        finally:
            os._exit(1)  # the kill point was never reached
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


@pytest.fixture
def killed(server, tmp_path, monkeypatch):
    """The FCC targets after a killed switch, the files as they were before it, and the server's URL."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where record_fcc stages
    (tmp_path / "tmp").mkdir()
    snapshot, cases, exchanges = copy_committed_fcc(tmp_path / "data")
    before = every_file(snapshot.parent, exchanges)
    assert record_and_die_mid_switch(server.url, snapshot, cases, exchanges) == 9
    after = every_file(snapshot.parent, exchanges)
    assert after["fcc/snapshot.json"] != before["fcc/snapshot.json"]  # the mix the kill left
    assert {name: after[name] for name in before if name.startswith("exchanges/")} == {
        name: data for name, data in before.items() if name.startswith("exchanges/")
    }
    assert list((tmp_path / "tmp").iterdir())  # and its staging folder
    return snapshot, cases, exchanges, before, server.url, tmp_path / "tmp"


@pytest.fixture(autouse=True)
def _data_dir(tmp_path):
    (tmp_path / "data").mkdir()


def test_score_reads_the_old_set_after_a_killed_switch(killed):
    snapshot, cases, exchanges, before, _, _ = killed
    out = io.StringIO()
    code = score.main(
        ["--schema", "walkthroughs.fcc.schema:FccInvoice", "--cases", str(cases)]
        + ["--task", "walkthroughs.fcc.task:extract", "--cassettes", str(exchanges)]
        + ["--out", str(snapshot.parent.parent / "run.json")],
        out=out,
    )
    assert code == 0, out.getvalue()
    assert "5 of them hand-authored" in out.getvalue()  # the committed, hand-authored set: not the mix
    assert every_file(snapshot.parent, exchanges) == before


def test_the_notebook_loader_reads_the_old_set_after_a_killed_switch(killed):
    snapshot, _, exchanges, before, _, _ = killed
    source = from_snapshot(snapshot)
    assert source.provenance["hand_authored"] is True
    assert every_file(snapshot.parent, exchanges) == before


def test_a_failing_rerun_says_it_rolled_back_and_cleans_the_staging_folder(killed, serve):
    snapshot, cases, exchanges, before, _, staging = killed
    broken = serve(lambda path, query: (503, {}, b'{"error": "Internal error"}'))
    code, printed, errors = streams(
        record_fcc.main, argv(broken.url, snapshot, cases, exchanges), model_factory=fake([])
    )
    assert code == record_fcc.EXIT_AGENT_FAILED, errors
    assert f"Rolled back the switch a killed run left: {snapshot}, {cases} restored." in printed
    assert "the staging folder of a killed run" in printed and not list(staging.iterdir())
    assert "Download failed" in errors and errors.rstrip().endswith(record_fcc.NOTHING_WRITTEN)
    assert every_file(snapshot.parent, exchanges) == before


def test_snapshot_and_cases_naming_one_file_are_refused_before_any_request(server, tmp_path):
    snapshot, _, exchanges = copy_committed_fcc(tmp_path / "data")
    before = snapshot.read_bytes()
    code, printed = outcome(record_fcc.main, argv(server.url, snapshot, snapshot, exchanges), model_factory=fake([]))
    assert code == record_fcc.EXIT_AGENT_FAILED
    assert f"--cases {snapshot} is the same file as --snapshot {snapshot}" in printed, printed
    assert server.requests == 0 and snapshot.read_bytes() == before
