"""Atomic file replacement: a reader sees the old file or the new one, never half of either.

Two tools, both writing beside the target and renaming, so a full disk, a kill or an exception
part way leaves what was there before:

- `write_text_atomically` / `write_bytes_atomically` replace one file;
- `switch_files` replaces several (a cassette of exchanges plus its snapshot) as one step: every
  file is staged first, then all are renamed, and a failure part way renames the old ones back.

The new file keeps the mode of the file it replaces (a new file gets the umask's mode, as
`open()` would give it), and its bytes and the rename are flushed to disk before returning.
Temporary names start with a dot and end in `.tmp`, `.bak` or `.switch.json` (git ignores them);
what a killed process left is cleaned up by the next write into the same folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path

# The checkout the bundled examples and their data live in (`data/` beside `helpers/`).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"

# Leftover names: `.<target>.<pid>-<random>.tmp` (staged content), `.<target>.<pid>-<random>.bak`
# (the old file, kept until a switch is final), `.<pid>-<random>.switch.json` (a switch's journal).
STAGED, BACKUP, JOURNAL = ".tmp", ".bak", ".switch.json"


class SwitchError(ValueError):
    """The files handed to `switch_files` cannot be switched: nothing was written."""


def write_text_atomically(path: Path | str, text: str) -> Path:
    """Write `text` (UTF-8) beside `path`, then rename it over `path`.

    A crash, a full disk or an exception mid-write leaves whatever was at `path` exactly as
    it was, which is what keeps a good fixture safe from a failed recording.
    """
    return write_bytes_atomically(path, text.encode("utf-8"))


def write_bytes_atomically(path: Path | str, data: bytes) -> Path:
    """Write `data` beside `path`, flush it to disk, rename it over `path`, flush the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clean_leftovers(path.parent)
    token = _token()
    staged = _stage(path, data, token)
    try:
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)
    return path


def switch_files(writes: Mapping[Path | str, str | bytes], remove: Iterable[Path | str] = ()) -> list[Path]:
    """Replace every file in `writes` and delete every file in `remove`, all or none.

    `writes` maps each target to its new content (`str` is written as UTF-8). Targets that
    would land on one file (the same path twice, or names equal but for case, which collide on
    macOS and Windows) raise `SwitchError` before anything is written. Files of `remove` that
    do not exist are ignored.

    Order: a journal beside the first target records the set; every new file is staged beside
    its target and every old one hard-linked to a backup; then each staged file is renamed over
    its target and each removed file unlinked; the journal's removal is the commit. An error
    part way renames the backups back and deletes what was new, then re-raises. A process
    killed part way leaves its journal: the next `switch_files`, `write_*_atomically` or
    `clean_leftovers` touching that folder rolls the set back to the old files.

    Returns the targets written, in the order given.
    """
    targets = [Path(path).absolute() for path in writes]
    removed = [Path(path).absolute() for path in remove]
    _refuse_collisions(targets + removed)
    removed = [path for path in removed if path.exists()]
    folders = list(dict.fromkeys(path.parent for path in targets + removed))
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        clean_leftovers(folder)
    if not folders:
        return []
    token = _token()
    entries = [{"path": path, "existed": path.exists(), "new": True} for path in targets]
    entries += [{"path": path, "existed": True, "new": False} for path in removed]
    # One journal per folder, each listing the whole set; the first folder's is the commit mark.
    journals = [folder / f".{token}{JOURNAL}" for folder in folders]
    try:
        for journal in journals:
            _write_journal(journal, journals[0], entries)
        contents = [_as_bytes(content) for content in writes.values()]
        staged = [_stage(path, content, token) for path, content in zip(targets, contents, strict=True)]
        for entry in entries:
            if entry["existed"]:
                _backup(entry["path"], token)
        for path, new in zip(targets, staged, strict=True):
            os.replace(new, path)
        for path in removed:
            path.unlink()
        for folder in folders:
            _sync_folder(folder)
    except BaseException:
        with contextlib.suppress(OSError):  # what cannot be undone now, the next call undoes
            _roll_back(journals[0])
        raise
    _finish(journals, entries, token)
    return targets


def clean_leftovers(folder: Path | str) -> list[Path]:
    """Undo what killed writers left in `folder`; return the paths removed or restored.

    A journal whose process is gone rolls its switch back (or, if it had committed, only deletes
    its backups); staged and backup files of a dead process are deleted. Files of a process
    that is still running are left alone: it may be writing them now.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return []
    touched: list[Path] = []
    for journal in sorted(folder.glob(f".*{JOURNAL}")):
        if not _alive(journal.name) and journal.exists():
            touched += _recover(journal)
    for leftover in sorted([*folder.glob(f".*{STAGED}"), *folder.glob(f".*{BACKUP}")]):
        if not _alive(leftover.name):
            leftover.unlink(missing_ok=True)
            touched.append(leftover)
    return touched


def staged_path(path: Path | str) -> Path:
    """A new staged name beside `path` for a writer that streams into it, after cleaning the folder.

    Named like every staged file here, so what a killed writer leaves is cleaned by the next
    write into the folder (`clean_leftovers`).
    """
    path = Path(path)
    clean_leftovers(path.parent)
    return path.parent / f".{path.name}.{_token()}{STAGED}"


def _token() -> str:
    """`<pid>-<random>`: unique per call, and tells a cleaner whether its writer still runs."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def _token_of(name: str) -> str | None:
    """The token in a leftover's name, or None for a file that is not one of ours."""
    for suffix in (JOURNAL, STAGED, BACKUP):
        if name.startswith(".") and name.endswith(suffix):
            token = name[: -len(suffix)].rsplit(".", 1)[-1]
            return token if re.fullmatch(r"[0-9]+-[0-9a-f]{8}", token) else None
    return None


def _alive(name: str) -> bool:
    """Whether the process that wrote a leftover still runs (or the file is not ours): leave it."""
    token = _token_of(name)
    if token is None:
        return True
    pid = int(token.split("-")[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _stage(path: Path, data: bytes, token: str) -> Path:
    """Write `data` beside `path` under a staged name, with the mode of the file it will replace."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    return _write_new(path.with_name(f".{path.name}.{token}{STAGED}"), data, mode)


def _write_new(path: Path, data: bytes, mode: int | None) -> Path:
    """Create `path` (never an existing file), write and fsync it; `mode` None means the umask's."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # O_CREAT applies the umask
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _backup(path: Path, token: str) -> Path:
    """Keep the old file under a second name (a hard link: no copy, and the target stays put)."""
    backup = path.with_name(f".{path.name}.{token}{BACKUP}")
    try:
        os.link(path, backup)
    except OSError:  # a file system without hard links
        _write_new(backup, path.read_bytes(), os.stat(path).st_mode & 0o7777)
    return backup


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


def _write_journal(journal: Path, primary: Path, entries: list[dict]) -> None:
    """Record the set beside its files, with paths relative to the journal (the tree may move)."""
    files = [
        {"path": os.path.relpath(entry["path"], journal.parent), "existed": entry["existed"], "new": entry["new"]}
        for entry in entries
    ]
    content = {"primary": os.path.relpath(primary, journal.parent), "files": files}
    _write_new(journal, json.dumps(content, indent=1).encode("utf-8"), None)
    _sync_folder(journal.parent)


def _read_journal(journal: Path) -> tuple[Path, list[dict]]:
    content = json.loads(journal.read_text(encoding="utf-8"))
    files = [dict(entry, path=journal.parent / entry["path"]) for entry in content["files"]]
    return journal.parent / content["primary"], files


def _roll_back(primary: Path) -> list[Path]:
    """Put every file of the switch back as it was, then delete its staged files and journals."""
    if not primary.exists():
        return []
    token = _token_of(primary.name)
    _, files = _read_journal(primary)
    touched = []
    for entry in files:
        path = entry["path"]
        backup = path.with_name(f".{path.name}.{token}{BACKUP}")
        staged = path.with_name(f".{path.name}.{token}{STAGED}")
        if backup.exists() and path.exists() and os.path.samefile(backup, path):
            backup.unlink()  # never replaced (rename of one file onto itself would do nothing)
        elif backup.exists():
            os.replace(backup, path)
            touched.append(path)
        elif entry["new"] and not entry["existed"] and not staged.exists() and path.exists():
            path.unlink()  # created by this switch, which stopped after renaming it in
            touched.append(path)
        staged.unlink(missing_ok=True)
    folders = list(dict.fromkeys(entry["path"].parent for entry in files))
    for folder in folders:
        _sync_folder(folder)
        if folder != primary.parent:
            (folder / primary.name).unlink(missing_ok=True)
    primary.unlink()  # last: until here a rerun of this roll back finds the whole set
    _sync_folder(primary.parent)
    return touched


def _finish(journals: list[Path], files: list[dict], token: str) -> None:
    """Commit: delete the first journal (from here the new set stands), then the backups."""
    journals[0].unlink()
    _sync_folder(journals[0].parent)
    _drop_backups(files, token)
    for journal in journals[1:]:
        journal.unlink(missing_ok=True)


def _drop_backups(files: list[dict], token: str | None) -> None:
    for entry in files:
        path = entry["path"]
        path.with_name(f".{path.name}.{token}{BACKUP}").unlink(missing_ok=True)


def _recover(journal: Path) -> list[Path]:
    """A dead process's switch: roll it back unless its first journal (the commit mark) is gone."""
    primary, files = _read_journal(journal)
    if primary.exists():
        return _roll_back(primary)
    _drop_backups(files, _token_of(journal.name))  # committed: the new files stand
    journal.unlink(missing_ok=True)
    return [journal]
