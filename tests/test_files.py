"""`fieldeval.files`: one file or a set of files (`one_step`) replaced whole, with the modes users expect."""

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fieldeval.files import one_step, write_bytes_atomically, write_text_atomically


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


def test_one_step_replaces_and_creates_every_file_with_modes_kept(tmp_path, umask_022):
    (tmp_path / "cassette").mkdir()
    old = tmp_path / "cassette" / "a.json"
    old.write_text("old a")
    old.chmod(0o660)
    snapshot = tmp_path / "snapshot.json"
    with one_step():
        write_text_atomically(old, "new a")
        write_bytes_atomically(tmp_path / "cassette" / "b.json", b"new b")
        write_text_atomically(snapshot, "snap")
        assert old.read_text() == "old a" and not snapshot.exists()  # nothing renamed in before the end
    assert old.read_text() == "new a" and mode(old) == 0o660
    assert (tmp_path / "cassette" / "b.json").read_text() == "new b" and mode(snapshot) == 0o644
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "cassette") == []


def test_one_step_nested_waits_for_the_outermost_block(tmp_path):
    with pytest.raises(RuntimeError):
        with one_step():
            with one_step():
                write_text_atomically(tmp_path / "inner.json", "inner")
            assert not (tmp_path / "inner.json").exists()
            raise RuntimeError("the outer block fails after the inner one ended")
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_failure_part_way_leaves_every_file_old(tmp_path, monkeypatch):
    first, second, created = tmp_path / "1.json", tmp_path / "sub" / "2.json", tmp_path / "3.json"
    second.parent.mkdir()
    first.write_text("old 1")
    second.write_text("old 2")
    real_fsync = os.fsync
    files_synced = []

    def full_at_the_third_file(handle):
        if stat.S_ISREG(os.fstat(handle).st_mode):
            files_synced.append(handle)
            if len(files_synced) == 3:
                raise OSError(28, "No space left on device")
        real_fsync(handle)

    monkeypatch.setattr(os, "fsync", full_at_the_third_file)
    with pytest.raises(OSError, match="No space left on device"), one_step():
        write_text_atomically(first, "new 1")
        write_text_atomically(created, "new 3")
        write_text_atomically(second, "new 2")
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert first.read_text() == "old 1" and second.read_text() == "old 2"
    assert not created.exists()
    assert leftovers(tmp_path) == [] and leftovers(second.parent) == []


def test_an_exception_in_the_block_writes_nothing(tmp_path):
    (tmp_path / "page.html").write_text("old page")
    with pytest.raises(KeyError), one_step():
        write_text_atomically(tmp_path / "page.html", "new page")
        write_text_atomically(tmp_path / "summary.md", "new summary")
        raise KeyError("the caller fails after both were staged")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["page.html"]
    assert (tmp_path / "page.html").read_text() == "old page"


KILLED_BEFORE_THE_RENAMES = """
import os, sys
from pathlib import Path
from fieldeval.files import one_step, write_text_atomically

folder = Path(sys.argv[1])

def die(src, dst):
    os._exit(9)  # killed with every file staged whole, before the first rename

os.replace = die
with one_step():
    write_text_atomically(folder / "a" / "1.json", "new 1")
    write_text_atomically(folder / "b" / "2.json", "new 2")
    write_text_atomically(folder / "a" / "3.json", "new 3")
"""


def test_a_one_step_killed_before_its_renames_leaves_the_old_files_and_the_next_write_cleans(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "1.json").write_text("old 1")
    (tmp_path / "b" / "2.json").write_text("old 2")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_BEFORE_THE_RENAMES), str(tmp_path)], timeout=60)
    assert done.returncode == 9
    assert (tmp_path / "a" / "1.json").read_text() == "old 1"  # no reader needs to undo anything
    assert (tmp_path / "b" / "2.json").read_text() == "old 2"
    assert not (tmp_path / "a" / "3.json").exists()
    assert len(leftovers(tmp_path / "a")) == 2 and len(leftovers(tmp_path / "b")) == 1  # the staged files

    write_text_atomically(tmp_path / "a" / "1.json", "again")  # the next write into a folder cleans it
    assert (tmp_path / "a" / "1.json").read_text() == "again"
    assert leftovers(tmp_path / "a") == [] and leftovers(tmp_path / "b")  # and only that folder


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
    dead = [f".x.json.{pid}-0123abcd.tmp", f".x.json.{os.getpid()}-0123abcd.tmp"]
    # A writer in another PID namespace (a second container on the volume): its pid means nothing here.
    elsewhere = f".y.json.{pid}-4567abcd.tmp"
    # Not staged files: other names, and what older versions left (a backup, a journal) is no longer touched.
    not_ours = [
        ".notes.tmp",
        ".x.json.backup.bak",
        "draft.tmp",
        f".x.json.{pid}-0123abcd.bak",
        f".{pid}-0123abcd.switch.json",
    ]
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
    names = ["data/exchanges/.a.json.1-0123abcd.tmp", "data/.a.json.1-0123abcd.tmp"]
    done = subprocess.run(["git", "check-ignore", *names], cwd=repo, capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == names
