"""The atomic writer and the switch journal against kills and failures at every step, property style.

For fixed seeds, a random set of files (one or two folders, old files replaced, new ones created,
some removed, a bystander file in each folder) is switched, and the writer is stopped at a
random step: each call it makes to `os.open`, `write`, `fsync`, `replace`, `link`, `unlink`,
`fchmod` or `close` is a step. A kill is real (a forked copy of this process ends with
`os._exit` at that step, its locks released by the kernel); recovery is what the next writer or
reader runs (`clean_leftovers`, `settle`). A failure is an `OSError` raised at that step, which
the writer itself must undo. Either way the folders must then hold the old set or the new set,
byte for byte, and nothing else.
"""

import os
import random
import warnings
from functools import partial
from pathlib import Path

import pytest

from fieldeval import files
from fieldeval.files import clean_leftovers, settle, switch_files, write_bytes_atomically

SEEDS = range(6)
KILLS_PER_SEED = 3
STEPS = ("open", "write", "fsync", "replace", "link", "unlink", "fchmod", "close")


class Stop(Exception):
    """What a step raises (failure runs) or the point where the child dies (kill runs)."""


def count_steps(monkeypatch, at: int, action) -> list[int]:
    """Patch each step so that the `at`-th one calls `action()`; returns the running count."""
    count = [0]
    for name in STEPS:
        real = getattr(os, name)

        def step(*args, _real=real, **kwargs):
            count[0] += 1
            if count[0] == at:
                action()
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, step)
    return count


def scenario(rng: random.Random, root: Path):
    """Folders with old files; returns (writes, removes, the old state, the new state)."""
    folders = [root / "a", root / "b"][: rng.randint(1, 2)]
    state: dict[Path, bytes] = {}
    for folder in folders:
        folder.mkdir()
        (folder / "bystander.txt").write_bytes(b"not part of the switch")
        for index in range(rng.randint(0, 3)):
            path = folder / f"old-{index}.json"
            path.write_bytes(f"old {folder.name} {index} ".encode() * rng.randint(1, 50))
            state[path] = path.read_bytes()
    old = dict(state)
    existing = sorted(old)
    writes = {
        path: f"new {path.name}".encode() * rng.randint(1, 50) for path in rng.sample(existing, len(existing) // 2)
    }
    for index in range(rng.randint(1, 3)):
        writes[rng.choice(folders) / f"new-{index}.json"] = f"created {index}".encode()
    removes = [path for path in existing if path not in writes and rng.random() < 0.5]
    new = {path: data for path, data in old.items() if path not in removes} | writes
    return folders, writes, removes, old, new


def state_of(folders) -> dict[Path, bytes]:
    found = {}
    for folder in folders:
        for path in folder.iterdir():
            if path.name != "bystander.txt" and not path.name.startswith("."):
                found[path] = path.read_bytes()
        assert (folder / "bystander.txt").read_bytes() == b"not part of the switch"
    return found


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


def steps_of(work, monkeypatch) -> int:
    """How many steps `work()` takes when nothing stops it."""
    with monkeypatch.context() as patch:
        count = count_steps(patch, 0, lambda: None)
        work()
        return count[0]


def rehearse(tmp_path: Path, monkeypatch, seed: int) -> int:
    """How many steps the switch of this seed's scenario takes, run once to the end."""
    rehearsal = tmp_path / "rehearsal"
    rehearsal.mkdir()
    _, writes, removes, _, _ = scenario(random.Random(seed), rehearsal)
    return steps_of(lambda: switch_files(writes, removes), monkeypatch)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_switch_killed_at_any_step_recovers_to_all_old_or_all_new(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    total = rehearse(tmp_path, monkeypatch, seed)
    # The first steps (a journal being created) and random ones after them.
    steps = [1, 2, 3, *rng.sample(range(4, total + 1), min(KILLS_PER_SEED, total - 3))]
    for attempt, step in enumerate(steps):
        root = tmp_path / f"kill-{attempt}"
        root.mkdir()
        folders, writes, removes, old, new = scenario(random.Random(seed), root)
        assert killed_at(step, partial(switch_files, writes, removes)) in (0, 9)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a journal of ours is never reported as foreign
            for folder in rng.sample(folders, len(folders)):  # any folder of the set may be read first
                (settle if rng.random() < 0.5 else clean_leftovers)(folder)
        after = state_of(folders)
        assert after in (old, new), f"seed {seed}, killed at step {step} of {total}"
        assert not [p for folder in folders for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_switch_failing_at_any_step_leaves_all_old_and_nothing_else(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    total = rehearse(tmp_path, monkeypatch, seed)
    for attempt, step in enumerate(sorted(rng.sample(range(1, total + 1), min(KILLS_PER_SEED, total)))):
        root = tmp_path / f"fail-{attempt}"
        root.mkdir()
        folders, writes, removes, old, new = scenario(random.Random(seed), root)

        def fail():
            raise OSError(5, "Input/output error")

        with monkeypatch.context() as patch:
            count_steps(patch, step, fail)
            try:
                switch_files(writes, removes)
                finished = True
            except OSError:
                finished = False
        assert state_of(folders) == (new if finished else old), f"seed {seed}, failed at step {step} of {total}"
        for folder in folders:  # what a failed cleanup after the commit left, the next writer removes
            clean_leftovers(folder)
        assert not [p for folder in folders for p in folder.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("seed", SEEDS[:4])
def test_one_file_killed_at_any_step_is_old_or_new_after_the_next_write(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    target = tmp_path / "target.json"
    old, new = b"old " * rng.randint(1, 99), b"new " * rng.randint(1, 99)
    total = steps_of(lambda: write_bytes_atomically(tmp_path / "rehearsal.json", new), monkeypatch)
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
    assert steps_of(lambda: write_bytes_atomically(tmp_path / "x.json", b"x"), monkeypatch) >= 5
