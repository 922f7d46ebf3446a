"""`fieldeval.files`: one file or a set of files replaced whole, with the modes users expect."""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fieldeval.files import SwitchError, clean_leftovers, switch_files, write_bytes_atomically, write_text_atomically


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def leftovers(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_gets_the_umask_mode_not_0600(tmp_path, umask_022):
    path = write_text_atomically(tmp_path / "sub" / "fixture.json", "{}\n")
    assert path.read_text() == "{}\n"
    assert mode(path) == 0o644


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "fixture.json"
    path.write_text("old")
    path.chmod(0o664)
    write_bytes_atomically(path, b"new")
    assert path.read_bytes() == b"new" and mode(path) == 0o664


def test_a_failed_write_leaves_the_old_file_and_no_leftover(tmp_path, monkeypatch):
    path = tmp_path / "notebook.ipynb"
    path.write_text("old and whole")

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomically(path, "new")
    assert path.read_text() == "old and whole"
    assert leftovers(tmp_path) == []


def test_data_and_rename_are_flushed_to_disk(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def spy(handle):
        synced.append(stat.S_ISDIR(os.fstat(handle).st_mode))
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", spy)
    write_text_atomically(tmp_path / "a.json", "x")
    assert synced == [False, True]  # the file before the rename, then its folder after it


def test_switch_replaces_and_creates_every_file_with_modes_kept(tmp_path, umask_022):
    (tmp_path / "cassette").mkdir()
    old = tmp_path / "cassette" / "a.json"
    old.write_text("old a")
    old.chmod(0o660)
    snapshot = tmp_path / "snapshot.json"
    written = switch_files({old: "new a", tmp_path / "cassette" / "b.json": b"new b", snapshot: "snap"})
    assert written == [old, tmp_path / "cassette" / "b.json", snapshot]
    assert old.read_text() == "new a" and mode(old) == 0o660
    assert (tmp_path / "cassette" / "b.json").read_text() == "new b" and mode(snapshot) == 0o644
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "cassette") == []


def test_switch_removes_files_as_part_of_the_same_step(tmp_path):
    stale = tmp_path / "stale.json"
    stale.write_text("stale")
    switch_files({tmp_path / "fresh.json": "fresh"}, remove=[stale, tmp_path / "never-existed.json"])
    assert not stale.exists() and (tmp_path / "fresh.json").read_text() == "fresh"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("second", ["a.json", "sub/../a.json", "A.JSON"])
def test_colliding_targets_are_refused_before_anything_is_written(tmp_path, second):
    (tmp_path / "sub").mkdir()
    with pytest.raises(SwitchError, match="same file .*give each file its own name; nothing was written"):
        switch_files({tmp_path / "a.json": "1", str(tmp_path / second): "2"})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sub"]


def test_a_failure_part_way_rolls_every_file_back(tmp_path, monkeypatch):
    first, second, created = tmp_path / "1.json", tmp_path / "2.json", tmp_path / "3.json"
    first.write_text("old 1")
    second.write_text("old 2")
    real_replace = os.replace
    calls = []

    def fail_on_third(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", fail_on_third)
    with pytest.raises(OSError, match="Input/output error"):
        switch_files({first: "new 1", created: "new 3", second: "new 2"})
    monkeypatch.setattr(os, "replace", real_replace)
    assert first.read_text() == "old 1" and second.read_text() == "old 2"
    assert not created.exists()  # it was renamed in before the failure, and is gone again
    assert leftovers(tmp_path) == []


KILLED_SWITCH = """
import os, sys
from pathlib import Path
from fieldeval.files import switch_files

folder = Path(sys.argv[1])
real_replace = os.replace
count = 0

def replace_then_die(src, dst):
    global count
    count += not str(dst).endswith(".switch.json")  # the renames of the files, not of their journals
    if count == 2:
        os._exit(9)  # killed between two renames: one new file in, one old file left
    real_replace(src, dst)

os.replace = replace_then_die
switch_files({folder / "a" / "1.json": "new 1", folder / "b" / "2.json": "new 2", folder / "a" / "3.json": "new 3"})
"""


def test_a_switch_killed_part_way_is_rolled_back_by_the_next_call(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "1.json").write_text("old 1")
    (tmp_path / "b" / "2.json").write_text("old 2")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_SWITCH), str(tmp_path)], timeout=60)
    assert done.returncode == 9
    assert (tmp_path / "a" / "1.json").read_text() == "new 1"  # the mixed state the kill left
    assert leftovers(tmp_path / "a") and leftovers(tmp_path / "b")

    assert clean_leftovers(tmp_path / "b")  # any folder of the set finds the journal
    assert (tmp_path / "a" / "1.json").read_text() == "old 1"
    assert (tmp_path / "b" / "2.json").read_text() == "old 2"
    assert not (tmp_path / "a" / "3.json").exists()
    assert leftovers(tmp_path / "a") == [] and leftovers(tmp_path / "b") == []

    switch_files({tmp_path / "a" / "1.json": "again"})
    assert (tmp_path / "a" / "1.json").read_text() == "again"


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


HOLD_LOCK = """
import fcntl, sys, time
handle = open(sys.argv[1], "a")
fcntl.flock(handle, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()  # until the test closes stdin
"""


def test_leftovers_are_judged_by_the_lock_their_writer_holds_not_by_pid(tmp_path):
    pid = dead_pid()
    dead = [f".x.json.{pid}-0123abcd.tmp", f".x.json.{pid}-0123abcd.bak", f".x.json.{os.getpid()}-0123abcd.tmp"]
    # A writer in another PID namespace (a second container on the volume): its pid means nothing here.
    elsewhere = f".y.json.{pid}-4567abcd.tmp"
    not_ours = [".notes.tmp", ".x.json.backup.bak", "draft.tmp"]
    for name in [*dead, elsewhere, *not_ours]:
        (tmp_path / name).write_text("left")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(tmp_path / elsewhere)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"locked\n"
        write_text_atomically(tmp_path / "x.json", "new")  # the next write into the folder cleans
        assert sorted(path.name for path in tmp_path.iterdir()) == sorted([elsewhere, *not_ours, "x.json"])
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    write_text_atomically(tmp_path / "x.json", "newer")  # its writer has ended: now it is a leftover
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([*not_ours, "x.json"])


def test_leftovers_are_ignored_by_git(tmp_path):
    repo = Path(__file__).resolve().parent.parent
    names = ["data/exchanges/.a.json.1-0123abcd.tmp", "data/.a.json.1-0123abcd.bak", "data/.1-0123abcd.switch.json"]
    done = subprocess.run(["git", "check-ignore", *names], cwd=repo, capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == names
