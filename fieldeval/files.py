"""Atomic file replacement: a reader sees the old file or the new one, never half of either.

Two tools, both writing beside the target and renaming, so a full disk, a kill or an exception
part way leaves what was there before:

- `write_text_atomically` / `write_bytes_atomically` replace one file;
- `switch_files` replaces several (a cassette of exchanges plus its snapshot) as one step: every
  file is staged first, then all are renamed, and a failure part way renames the old ones back;
- `StagedFile` writes one file in pieces (a results file, row by row) and renames it at the end;
- `one_step` holds back the renames of every write in a block until its end, so a command with
  two outputs writes both or neither.

A journal in each folder a switch touches names that folder's files by bare name (the first
folder's journal, whose removal is the commit, also links to the others'), with the sha256 of
each new file, so a roll back removes only a file this switch created.

The new file keeps the mode of the file it replaces (a new file gets the umask's mode, as
`open()` would give it), and its bytes and the rename are flushed to disk before returning. A
failure to write is a `WriteError`: an `OSError` whose message is one line, raised only after the
old file is back whole and no temporary file is left.

Temporary names start with a dot and end in `.tmp`, `.bak` or `.switch.json` (git ignores them).
What a killed process left is cleaned up by the next write into the same folder, and by the
readers (`settle`) before they read. A writer is judged alive by the `flock` it holds on its
staged file or journal, not by its process id, which another PID namespace (a second container on
the same volume) may reuse or not see at all. A journal is followed only if it is one this module
wrote: its format, version and a sha256 of its content check out, and it names only files of its
own folder, by bare name. Anything else is reported (`UnknownJournalWarning`) and left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from fieldeval.errors import EvalError

try:
    import fcntl
except ImportError:  # Windows: no flock, so no leftover is ever judged dead and removed
    fcntl = None  # type: ignore[assignment]

# The checkout the bundled examples and their data live in (`data/` beside `fieldeval/`).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"

# Leftover names: `.<target>.<token>.tmp` (staged content), `.<target>.<token>.bak` (the old file,
# kept until a switch is final), `.<token>.switch.json` (a switch's journal, one per folder).
STAGED, BACKUP, JOURNAL = ".tmp", ".bak", ".switch.json"
JOURNAL_FORMAT, JOURNAL_VERSION = "fieldeval.files switch journal", 2
_TOKEN = re.compile(r"[0-9]+-[0-9a-f]{8}")
_STAGING_LOCK = ".staging.lock"
_Target = TypeVar("_Target", bound=Path | str)  # a mapping's keys: paths, names, or both


class SwitchError(EvalError, ValueError):
    """The files handed to `switch_files` cannot be switched: nothing was written."""


class WriteError(EvalError, OSError):
    """A file could not be written; what was at its path is as it was, and no temporary file is left."""

    def __init__(self, path: Path | str, exc: OSError):
        super().__init__(exc.errno, f"cannot write {path}: {exc.strerror or exc}")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


class UnknownJournalWarning(UserWarning):
    """A `*.switch.json` file that is not a journal this module wrote: reported, never followed."""


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
        clean_leftovers(path.parent)
        staged, handle = _stage(path, data, _token())
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
    any write fails (a full disk, a read-only folder), none: the staged files are deleted and
    every target keeps its old bytes. The renames themselves need no space and do not fail on a
    full disk. Blocks nest: an inner block's writes wait for the outermost.
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


def switch_files(writes: Mapping[_Target, str | bytes], remove: Iterable[Path | str] = ()) -> list[Path]:
    """Replace every file in `writes` and delete every file in `remove`, all or none.

    `writes` maps each target to its new content (`str` is written as UTF-8). Targets that
    would land on one file (the same path twice, or names equal but for case, which collide on
    macOS and Windows) raise `SwitchError` before anything is written. Files of `remove` that
    do not exist are ignored.

    Order: a journal in each folder records that folder's part of the set (the first folder's,
    the primary, also names the others); every new file is staged beside its target and every
    old one hard-linked to a backup; then each staged file is renamed over its target and each
    removed file unlinked; the primary journal's removal is the commit. An error part way renames
    the backups back and deletes what was new, then re-raises. A process killed part way leaves
    its journals: the next `switch_files`, `write_*_atomically`, `clean_leftovers` or `settle`
    touching any folder of the set rolls the whole set back to the old files.

    Returns the targets written, in the order given.

    Raises:
        SwitchError: On colliding targets.
        WriteError: If a file cannot be written; every file is then as it was.
    """
    targets = [Path(path).absolute() for path in writes]
    removed = [Path(path).absolute() for path in remove]
    _refuse_collisions(targets + removed)
    removed = [path for path in removed if path.exists()]
    folders = list(dict.fromkeys(path.parent for path in targets + removed))
    if not folders:
        return []
    with _writing(folders[0]):
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            clean_leftovers(folder)
        token = _token()
        contents = dict(zip(targets, map(_as_bytes, writes.values()), strict=True))
        journals = [folder / f".{token}{JOURNAL}" for folder in folders]
        handles: list[int] = []
        try:
            for folder, journal in zip(folders, journals, strict=True):
                handles.append(_write_journal(journal, journals, _entries(folder, contents, removed)))
            for path, content in contents.items():
                handles.append(_stage(path, content, token)[1])
            for path in [*targets, *removed]:
                if path.exists():
                    _backup(path, token)
            for path in targets:
                os.replace(_staged_name(path, token), path)
            for path in removed:
                path.unlink()
            for folder in folders:
                _sync_folder(folder)
            journals[0].unlink()  # the commit: from here the new set stands
        except BaseException:
            with contextlib.suppress(OSError, ValueError):  # what cannot be undone now, the next call undoes
                _roll_back(journals[0])
            raise
        finally:
            for handle in handles:
                with contextlib.suppress(OSError):
                    os.close(handle)
        with contextlib.suppress(OSError):  # committed: what is left here, the next writer cleans
            _finish(journals, [*targets, *removed], token)
    return targets


def clean_leftovers(folder: Path | str) -> list[Path]:
    """Undo what killed writers left in `folder`; return the paths removed or restored.

    A journal whose writer is gone rolls its whole switch back (or, if it had committed, only
    deletes its backups); staged and backup files of a writer that is gone are deleted. Files a
    running writer holds are left alone: it may be writing them now. A journal this module did not
    write is reported with an `UnknownJournalWarning` and left alone, with the files of its token.
    """
    folder = Path(folder)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    touched: list[Path] = []
    journals = {_token_of(name): folder / name for name in names if name.endswith(JOURNAL) and _token_of(name)}
    for journal in sorted(journals.values()):
        if journal.exists() and not _held(journal):
            touched += _recover(journal)
    for name in sorted(names):
        token = _token_of(name)
        if token is None or token in journals or name.endswith(JOURNAL):
            continue  # a journal's own files are its to undo (or to leave, if it is not ours)
        leftover = folder / name
        if not _held(leftover):
            leftover.unlink(missing_ok=True)
            touched.append(leftover)
    return touched


_settled: dict[Path, int] = {}  # folder -> its mtime when last found holding no leftover at all


def settle(folder: Path | str) -> list[Path]:
    """What a reader calls before reading a folder's files: `clean_leftovers`, skipped while the
    folder has not changed since it was last found clean (so reading many files of one folder
    costs one scan). Returns the paths restored or removed.

    Raises:
        WriteError: If an interrupted switch there cannot be undone (a read-only folder).
    """
    folder = Path(folder).absolute()
    try:
        before = os.stat(folder).st_mtime_ns
    except OSError:
        return []
    if _settled.get(folder) == before:
        return []
    with _writing(folder):
        touched = clean_leftovers(folder)
    if not any(_token_of(name) for name in os.listdir(folder)):
        _settled[folder] = os.stat(folder).st_mtime_ns
    return touched


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


@contextlib.contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Turn any OSError of a write into a `WriteError`, naming the path, in one line."""
    try:
        yield
    except WriteError:
        raise
    except OSError as exc:
        named = exc.filename2 or exc.filename  # a rename's target, else the file the OS named
        named = named if named and _token_of(Path(named).name) is None else path  # a temporary name tells nothing
        raise WriteError(named, exc) from exc


def _token() -> str:
    """`<pid>-<random>`: unique per call (the pid only helps a person tell whose file it is)."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def _token_of(name: str) -> str | None:
    """The token in a leftover's name, or None for a file that is not one of ours."""
    for suffix in (JOURNAL, STAGED, BACKUP):
        if name.startswith(".") and name.endswith(suffix):
            token = name[: -len(suffix)].rsplit(".", 1)[-1]
            return token if _TOKEN.fullmatch(token) else None
    return None


def _journal_token(journal: Path) -> str:
    """The token of a journal's switch, which its staged and backup files carry in their names."""
    token = _token_of(journal.name)
    if token is None or not journal.name.endswith(JOURNAL):
        raise ValueError(f"its name {journal.name!r} is not a journal's name, .<token>{JOURNAL}")
    return token


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


def _staged_name(path: Path, token: str) -> Path:
    return path.with_name(f".{path.name}.{token}{STAGED}")


def _backup_name(path: Path, token: str) -> Path:
    return path.with_name(f".{path.name}.{token}{BACKUP}")


def _stage(path: Path, data: bytes, token: str) -> tuple[Path, int]:
    """Write `data` beside `path` under a staged name, locked, with the mode of the file it replaces."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    staged = _staged_name(path, token)
    return staged, _write_new(staged, data, mode)


def _write_new(path: Path, data: bytes, mode: int | None) -> int:
    """Create `path`, write and fsync it, and return its open, locked handle; `mode` None means the umask's."""
    handle = _create_locked(path)
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view) :]
        os.fsync(handle)
    except BaseException:
        os.close(handle)
        path.unlink(missing_ok=True)
        raise
    return handle


def _backup(path: Path, token: str) -> Path:
    """Keep the old file under a second name (a hard link: no copy, and the target stays put)."""
    backup = _backup_name(path, token)
    try:
        os.link(path, backup)
    except OSError:  # a file system without hard links: a copy, staged and renamed so it is never half
        staged, handle = _stage(backup, path.read_bytes(), token)
        os.close(handle)
        _rename_in(staged, backup)
    return backup


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


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _refuse_collisions(paths: list[Path]) -> None:
    seen: dict[str, Path] = {}
    for path in paths:
        key = os.path.normpath(path).casefold()
        if key in seen:
            raise SwitchError(
                f"{seen[key]} and {path} are the same file (or differ only by case): give each file its own name; "
                "nothing was written"
            )
        seen[key] = path


# --- journals ----------------------------------------------------------------------------------


def _entries(folder: Path, contents: Mapping[Path, bytes], removed: list[Path]) -> list[dict]:
    """This folder's part of a switch: each file by bare name, whether it existed, the sha256 it gets."""
    entries = [
        {"name": path.name, "existed": path.exists(), "sha256": hashlib.sha256(content).hexdigest()}
        for path, content in contents.items()
        if path.parent == folder
    ]
    return entries + [{"name": path.name, "existed": True, "sha256": None} for path in removed if path.parent == folder]


def _digest(body: Mapping) -> str:
    """The integrity check: sha256 of the journal's content in one canonical form (no secret)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def _write_journal(journal: Path, journals: list[Path], files: list[dict]) -> int:
    """Write one folder's journal and return its locked handle; the primary (first) also lists the others."""
    primary = journals[0]
    body: dict = {"format": JOURNAL_FORMAT, "version": JOURNAL_VERSION, "files": files}
    if journal == primary:
        body["peers"] = [os.path.relpath(other, journal.parent) for other in journals[1:]]
    else:
        body["primary"] = os.path.relpath(primary, journal.parent)
    body["sha256"] = _digest(body)
    # Staged and renamed like any file, so a kill mid-write leaves a staged leftover, never half a journal.
    staged, handle = _stage(journal, json.dumps(body, indent=1).encode("utf-8"), _journal_token(journal))
    try:
        _rename_in(staged, journal)  # the handle, and so the lock, now belong to the journal
    except BaseException:
        os.close(handle)
        raise
    return handle


def _read_journal(journal: Path) -> dict:
    """A journal's content, checked to be one this module wrote; raises ValueError saying why not."""
    try:
        body = json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, RecursionError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable ({exc})") from None
    if not isinstance(body, dict) or body.get("format") != JOURNAL_FORMAT or body.get("version") != JOURNAL_VERSION:
        raise ValueError(f"not a {JOURNAL_FORMAT} of version {JOURNAL_VERSION}")
    claimed = body.pop("sha256", None)
    if claimed != _digest(body):
        raise ValueError("its sha256 does not match its content")
    for entry in body.get("files", []):
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise ValueError(f"it names {name!r}, not a file of its own folder")
    links = [body["primary"]] if "primary" in body else body.get("peers", [])
    if any(not isinstance(link, str) or Path(link).name != journal.name for link in links):
        raise ValueError("it links to a file that is not a journal of the same switch")
    return body


def _linked(journal: Path, link: str) -> Path:
    return Path(os.path.normpath(journal.parent / link))


def _recover(journal: Path) -> list[Path]:
    """A dead writer's journal: roll its switch back, unless the primary journal (the commit mark) is gone."""
    try:
        body = _read_journal(journal)
        primary = _linked(journal, body["primary"]) if "primary" in body else journal
        if not primary.exists():  # committed: the new files stand
            _drop_backups(journal, body)
            journal.unlink()
            return [journal]
        if primary != journal and _held(primary):
            return []  # its writer runs (in another folder's lock)
        return _roll_back(primary)
    except ValueError as exc:
        warnings.warn(
            f"{journal}: left alone, not a switch journal these tools wrote ({exc}); "
            "check the files of that folder, then delete it",
            UnknownJournalWarning,
            stacklevel=3,
        )
        return []


def _roll_back(primary: Path) -> list[Path]:
    """Put every file of the switch back as it was, then delete its staged files and journals.

    Every journal of the set is checked before any file is touched; the primary goes last, so a
    rerun after a failure here finds the whole set again.
    """
    if not primary.exists():
        return []
    body = _read_journal(primary)
    peers = [_linked(primary, link) for link in body.get("peers", [])]
    found = [(peer, _read_journal(peer)) for peer in peers if peer.exists()]
    touched = []
    for journal, content in [*found, (primary, body)]:
        touched += _restore(journal, content)
        journal.unlink()
        _sync_folder(journal.parent)
    return touched


def _restore(journal: Path, body: dict) -> list[Path]:
    """Undo one folder's part: backups renamed back, files this switch created (by their sha256) removed."""
    token = _journal_token(journal)
    touched = []
    for entry in body["files"]:
        path = journal.parent / entry["name"]
        backup, staged = _backup_name(path, token), _staged_name(path, token)
        if backup.exists() and path.exists() and os.path.samefile(backup, path):
            backup.unlink()  # never replaced (rename of one file onto itself would do nothing)
        elif backup.exists():
            os.replace(backup, path)
            touched.append(path)
        elif not entry["existed"] and not staged.exists() and _holds(path, entry["sha256"]):
            path.unlink()  # created by this switch, which stopped after renaming it in
            touched.append(path)
        staged.unlink(missing_ok=True)
    return touched


def _holds(path: Path, sha256: str | None) -> bool:
    """Whether `path` is a file with exactly the content whose sha256 the journal recorded."""
    try:
        return sha256 is not None and path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def _finish(journals: list[Path], paths: list[Path], token: str) -> None:
    """After the commit: delete the backups, then the other folders' journals."""
    _sync_folder(journals[0].parent)
    for path in paths:
        _backup_name(path, token).unlink(missing_ok=True)
    for journal in journals[1:]:
        journal.unlink(missing_ok=True)


def _drop_backups(journal: Path, body: dict) -> None:
    token = _journal_token(journal)
    for entry in body["files"]:
        _backup_name(journal.parent / entry["name"], token).unlink(missing_ok=True)
        _staged_name(journal.parent / entry["name"], token).unlink(missing_ok=True)


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
            clean_leftovers(self.path.parent)
            self._staged, handle = _stage(self.path, b"", _token())
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
