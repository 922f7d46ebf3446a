"""The atomic writer and `one_step` against kills and failures at every step, property style.

For fixed seeds, a random set of files (one or two folders, old files replaced, new ones created,
a bystander file in each folder) is written in one `one_step`, and the writer is stopped at a
random step: each call it makes to `os.open`, `write`, `fsync`, `replace`, `link`, `unlink`,
`fchmod` or `close` is a step. A kill is real (a forked copy of this process ends with
`os._exit` at that step, its locks released by the kernel); what it leaves beside the targets is
cleaned by the next write into the folder, and no reader has anything to undo. A failure is an
`OSError` raised at that step, which the writer itself must undo. Every file is always whole, old
or new; stopped before the first rename, the folders hold the old set byte for byte; after the
last, the new set. Between renames (a kill there, or a rename that fails) the set is mixed: that
window is the price of having no journal, and these tests pin it to the renames alone.
"""

import os
import random
from functools import partial
from pathlib import Path

import pytest

from fieldeval import files
from fieldeval.files import one_step, write_bytes_atomically

SEEDS = range(6)
KILLS_PER_SEED = 3
STEPS = ("open", "write", "fsync", "replace", "link", "unlink", "fchmod", "close")


class Stop(Exception):
    """What a step raises (failure runs) or the point where the child dies (kill runs)."""


def count_steps(monkeypatch, at: int, action) -> list[str]:
    """Patch each step so that the `at`-th one calls `action()`; returns the names of the steps taken."""
    taken: list[str] = []
    for name in STEPS:
        real = getattr(os, name)

        def step(*args, _real=real, _name=name, **kwargs):
            taken.append(_name)
            if len(taken) == at:
                action()
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, step)
    return taken


def scenario(rng: random.Random, root: Path):
    """Folders with old files; returns (folders, writes, the old state, the new state)."""
    folders = [root / "a", root / "b"][: rng.randint(1, 2)]
    old: dict[Path, bytes] = {}
    for folder in folders:
        folder.mkdir()
        (folder / "bystander.txt").write_bytes(b"not part of the step")
        for index in range(rng.randint(0, 3)):
            path = folder / f"old-{index}.json"
            path.write_bytes(f"old {folder.name} {index} ".encode() * rng.randint(1, 50))
            old[path] = path.read_bytes()
    existing = sorted(old)
    writes = {
        path: f"new {path.name}".encode() * rng.randint(1, 50) for path in rng.sample(existing, len(existing) // 2)
    }
    for index in range(rng.randint(1, 3)):
        writes[rng.choice(folders) / f"new-{index}.json"] = f"created {index}".encode()
    return folders, writes, old, old | writes


def write_in_one_step(writes: dict[Path, bytes]) -> None:
    with one_step():
        for path, data in writes.items():
            write_bytes_atomically(path, data)


def state_of(folders) -> dict[Path, bytes]:
    found = {}
    for folder in folders:
        for path in folder.iterdir():
            if path.name != "bystander.txt" and not path.name.startswith("."):
                found[path] = path.read_bytes()
        assert (folder / "bystander.txt").read_bytes() == b"not part of the step"
    return found


def each_whole(after: dict[Path, bytes], old: dict[Path, bytes], new: dict[Path, bytes]) -> bool:
    """Every file is its old or its new bytes (or absent, if it is new), never anything else."""
    return set(after) <= set(new) and all(data in (old.get(path), new[path]) for path, data in after.items())


def killed_at(step: int, work) -> int:
    """Run `work()` in a forked child that dies at `step`; its exit code (9 killed, 0 finished)."""
    child = os.fork()
    if child == 0:
        try:
            with pytest.MonkeyPatch.context() as patch:
                count_steps(patch, step, lambda: os._exit(9))
                work()
            os._exit(0)
        finally:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


def steps_of(work, monkeypatch) -> list[str]:
    """The steps `work()` takes when nothing stops it."""
    with monkeypatch.context() as patch:
        taken = count_steps(patch, 0, lambda: None)
        work()
        return list(taken)


def rehearse(tmp_path: Path, monkeypatch, seed: int) -> list[str]:
    """The steps the one step of this seed's scenario takes, run once to the end."""
    rehearsal = tmp_path / "rehearsal"
    rehearsal.mkdir()
    _, writes, _, _ = scenario(random.Random(seed), rehearsal)
    return steps_of(lambda: write_in_one_step(writes), monkeypatch)


def expected(taken: list[str], step: int, after, old, new) -> bool:
    """Old before the first rename, new after the last, each file whole in between."""
    renames = [number for number, name in enumerate(taken, start=1) if name == "replace"]
    if step <= renames[0]:
        return after == old
    if step > renames[-1]:
        return after == new
    return each_whole(after, old, new)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_one_step_killed_at_any_step_leaves_every_file_whole_and_old_until_the_renames(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    taken = rehearse(tmp_path, monkeypatch, seed)
    total = len(taken)
    first_rename = taken.index("replace") + 1
    # The first steps (a staged file being created), the first rename, and random ones.
    steps = [1, 2, 3, first_rename, *rng.sample(range(4, total + 1), min(KILLS_PER_SEED, total - 3))]
    for attempt, step in enumerate(steps):
        root = tmp_path / f"kill-{attempt}"
        root.mkdir()
        folders, writes, old, new = scenario(random.Random(seed), root)
        assert killed_at(step, partial(write_in_one_step, writes)) in (0, 9)
        after = state_of(folders)  # read as any reader reads: nothing to settle first
        assert expected(taken, step, after, old, new), f"seed {seed}, killed at step {step} of {total}"
        for folder in folders:  # the next write into the folder removes what the kill left
            write_bytes_atomically(folder / "bystander.txt", b"not part of the step")
        assert not [p for folder in folders for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_one_step_failing_at_any_step_leaves_every_file_whole_and_nothing_else(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    taken = rehearse(tmp_path, monkeypatch, seed)
    total = len(taken)
    first_rename = taken.index("replace") + 1
    steps = sorted({first_rename, *rng.sample(range(1, total + 1), min(KILLS_PER_SEED, total))})
    for attempt, step in enumerate(steps):
        root = tmp_path / f"fail-{attempt}"
        root.mkdir()
        folders, writes, old, new = scenario(random.Random(seed), root)

        def fail():
            raise OSError(5, "Input/output error")

        with monkeypatch.context() as patch:
            count_steps(patch, step, fail)
            try:
                write_in_one_step(writes)
                finished = True
            except OSError:
                finished = False
        after = state_of(folders)
        assert expected(taken, step, after, old, new), f"seed {seed}, failed at step {step} of {total}"
        assert not finished or after == new
        assert not [p for folder in folders for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_one_file_killed_at_any_step_is_old_or_new_after_the_next_write(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    target = tmp_path / "target.json"
    old, new = b"old " * rng.randint(1, 99), b"new " * rng.randint(1, 99)
    total = len(steps_of(lambda: write_bytes_atomically(tmp_path / "rehearsal.json", new), monkeypatch))
    (tmp_path / "rehearsal.json").unlink()
    for step in sorted(rng.sample(range(1, total + 1), min(KILLS_PER_SEED, total))):
        target.write_bytes(old)
        assert killed_at(step, partial(write_bytes_atomically, target, new)) in (0, 9)
        write_bytes_atomically(tmp_path / "other.json", b"the next write into the folder")
        assert target.read_bytes() in (old, new), f"killed at step {step} of {total}"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["other.json", "target.json"]


def test_the_steps_counted_are_the_writer_s_own(monkeypatch, tmp_path):
    """The counter sees the writer's calls (a guard that the properties above test something)."""
    assert files.os is os
    assert len(steps_of(lambda: write_bytes_atomically(tmp_path / "x.json", b"x"), monkeypatch)) >= 5
