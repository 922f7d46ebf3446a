"""Atomic file replacement: a reader sees the old file or the new one, never half of either.

Every write stages the new bytes beside its target, flushes them to disk and renames them over
the target, so a full disk, a kill or an exception part way leaves what was there before:

- `write_text_atomically` / `write_bytes_atomically` replace one file;
- `StagedFile` writes one file in pieces (a results file, row by row) and renames it at the end;
- `one_step` holds back the renames of every write in a block until its end, so a command with
  several outputs (a report and its summary; a cassette folder and its snapshot) writes all or,
  when any write fails, none.

There is no journal: a reader needs nothing but `open()`. That is enough because everything that
can fail for want of space or rights (creating, writing, flushing) happens before the first
rename, and renames within a folder need neither. Only a process killed in the short window of
the renames themselves can leave some targets new and others old.

The new file keeps the mode of the file it replaces (a new file gets the umask's mode, as
`open()` would give it). A failure to write is a `WriteError`: an `OSError` whose message is one
line, raised only after the old file is back whole and no temporary file is left.

A staged file is named `.<target>.<token>.tmp` (git ignores it). One a killed writer left is
deleted by the next write into the same folder. A writer is judged alive by the `flock` it holds
on its staged file, not by its process id, which another PID namespace (a second container on the
same volume) may reuse or not see at all.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from fieldeval.errors import EvalError

try:
    import fcntl
except ImportError:  # Windows: no flock, so no leftover is ever judged dead and removed
    fcntl = None  # type: ignore[assignment]

# The checkout the bundled examples and their data live in (`data/` beside `fieldeval/`).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"

STAGED = ".tmp"  # `.<target>.<token>.tmp`: a staged file, renamed over its target when written whole
_STAGED_NAME = re.compile(r"\..+\.[0-9]+-[0-9a-f]{8}\.tmp")
_STAGING_LOCK = ".staging.lock"


class WriteError(EvalError, OSError):
    """A file could not be written; what was at its path is as it was, and no temporary file is left."""

    def __init__(self, path: Path | str, exc: OSError):
        super().__init__(exc.errno, f"cannot write {path}: {exc.strerror or exc}")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


def write_text_atomically(path: Path | str, text: str) -> Path:
    """Write `text` (UTF-8) beside `path`, then rename it over `path`.

    A crash, a full disk or an exception mid-write leaves whatever was at `path` exactly as
    it was, which is what keeps a good fixture safe from a failed recording.

    Raises:
        WriteError: If the file cannot be written (the OS error in its message).
    """
    return write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path | str, data: bytes) -> Path:
    """Write `data` beside `path`, flush it to disk, rename it over `path`, flush the folder."""
    path = Path(path)
    with _writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_dead_staged(path.parent)
        staged, handle = _stage(path, data)
        if _held_back is not None:  # inside `one_step`: renamed in at its end
            _held_back.append((staged, path, lambda: os.close(handle)))
            return path
        try:
            _rename_in(staged, path)
        finally:
            os.close(handle)  # releases the lock: from here the file is the target
    return path


_held_back: list[tuple[Path, Path, Callable[[], None]]] | None = None  # staged, target, release


@contextlib.contextmanager
def one_step() -> Iterator[None]:
    """Hold back the renames of every atomic write made in the block, then do them all at its end.

    A command with several outputs (a report and a results file) then writes all of them or, when
    any write fails (a full disk, a read-only folder) or the block raises, none: the staged files
    are deleted and every target keeps its old bytes. The renames themselves need no space and do
    not fail on a full disk. Blocks nest: an inner block's writes wait for the outermost.
    """
    global _held_back
    outer, _held_back = _held_back, []
    mine = _held_back
    try:
        yield
    except BaseException:
        for staged, _, release in mine:
            release()
            staged.unlink(missing_ok=True)
        raise
    finally:
        _held_back = outer
    if outer is not None:
        outer.extend(mine)
        return
    for index, (staged, target, release) in enumerate(mine):
        try:
            with _writing(target):
                _rename_in(staged, target)
        except BaseException:
            for later, _, release_later in mine[index + 1 :]:
                release_later()
                later.unlink(missing_ok=True)
            raise
        finally:
            release()


class StagedFile:
    """One file written in pieces (a results file, row by row) beside `path`, renamed over it at `commit()`.

    The same staging as `write_bytes_atomically`: a locked `.tmp` beside the target that the next
    writer cleans if this process is killed; `discard()` (or a failure) leaves `path` as it was.

    Raises:
        WriteError: From the constructor, `commit()` or a write of `file`, wrapped as it arises.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        with _writing(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _remove_dead_staged(self.path.parent)
            self._staged, handle = _stage(self.path, b"")
        self.file = os.fdopen(handle, "w", encoding="utf-8")  # closing it releases the lock

    def commit(self) -> Path:
        """Flush the file to disk and rename it over `path`."""
        try:
            with _writing(self.path):
                self.file.flush()
                os.fsync(self.file.fileno())
                if _held_back is not None:  # inside `one_step`: renamed in at its end
                    _held_back.append((self._staged, self.path, self.file.close))
                    return self.path
                _rename_in(self._staged, self.path)
        except BaseException:
            self.discard()
            raise
        self.file.close()
        return self.path

    def discard(self) -> None:
        """Drop what was written; `path` keeps whatever it held before."""
        with contextlib.suppress(OSError):
            self.file.close()
        self._staged.unlink(missing_ok=True)


@contextlib.contextmanager
def staging_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder for staging a multi-file update, removed at the end, even after a failure.

    The folder holds a lock while its process runs, so `remove_dead_staging` can tell the folders
    a killed process left; the caller runs that first, once, and says what it removed.
    """
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    handle = _create_locked(folder / _STAGING_LOCK)
    try:
        yield folder
    finally:
        os.close(handle)
        shutil.rmtree(folder, ignore_errors=True)


def remove_dead_staging(prefix: str) -> list[Path]:
    """Remove the staging folders of `prefix` that killed processes left in the temporary directory.

    Only folders `staging_folder` made (holding its lock file), owned by this user, whose lock no
    running process holds; returns them.
    """
    removed = []
    for old in Path(tempfile.gettempdir()).glob(f"{prefix}*"):
        lock = old / _STAGING_LOCK
        with contextlib.suppress(OSError):
            if not old.is_symlink() and old.lstat().st_uid == os.getuid() and lock.is_file() and not _held(lock):
                shutil.rmtree(old)
                removed.append(old)
    return removed


def _remove_dead_staged(folder: Path) -> None:
    """Delete the staged files killed writers left in `folder`; a running writer's (locked) are left alone."""
    for name in os.listdir(folder):
        if _STAGED_NAME.fullmatch(name) and not _held(folder / name):
            (folder / name).unlink(missing_ok=True)


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn any OSError of a write into a `WriteError`, naming the path, in one line."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        named = exc.filename2 or exc.filename  # a rename's target, else the file the OS named
        named = named if named and not _STAGED_NAME.fullmatch(Path(named).name) else path  # a staged name tells nothing
        raise WriteError(named, exc) from exc


def _create_locked(path: Path) -> int:
    """Create `path` (never an existing file) and lock it for as long as the handle stays open."""
    handle = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)  # O_CREAT applies the umask
    try:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # fails only if a cleaner got there first
        if os.fstat(handle).st_nlink == 0:
            raise FileNotFoundError(2, "removed while being created", str(path))
    except BaseException:
        os.close(handle)
        path.unlink(missing_ok=True)
        raise
    return handle


def _held(path: Path) -> bool:
    """Whether a running writer holds the lock on `path`; True whenever that cannot be told."""
    if fcntl is None:
        return True
    flags = getattr(os, "O_NOFOLLOW", 0)
    try:
        try:
            handle = os.open(path, os.O_RDWR | flags)  # NFS emulates flock with locks that need write access
        except PermissionError:
            handle = os.open(path, os.O_RDONLY | flags)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held, or a file system without locks: either way, leave it
        return True
    finally:
        os.close(handle)  # also releases the lock just taken
    return False


def _stage(path: Path, data: bytes) -> tuple[Path, int]:
    """Write `data` beside `path` under a staged name, with the mode of the file it replaces.

    Returns the staged path and its open, locked handle: the lock tells other writers this
    process is alive, so they leave the file alone. `<pid>-<random>` makes the name unique per
    call; the pid only helps a person tell whose file it is.
    """
    try:
        mode: int | None = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    staged = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{STAGED}")
    handle = _create_locked(staged)
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        os.fsync(handle)
    except BaseException:
        os.close(handle)
        staged.unlink(missing_ok=True)
        raise
    return staged, handle


def _rename_in(staged: Path, target: Path) -> None:
    """The last step of every write: rename the staged file over its target and flush the folder.

    A failed rename deletes the staged file, so the target keeps its old bytes and nothing is left.
    The caller still holds the staged file's handle (its lock) and closes it when it is done.
    """
    try:
        os.replace(staged, target)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Flush a folder's entries, so a rename in it survives a power cut (where the OS allows)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(handle)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename itself is still atomic
    finally:
        os.close(handle)
