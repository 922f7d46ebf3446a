"""The paths a command is told to write, checked before it does any work.

A command replaces its outputs by renaming a new file over them (`fieldeval.files`), which would
turn a symbolic link or a device node into a regular file, and would overwrite an input of the
same run (a cassette, the schema module, the case file) with the report. So an output that is a
symlink, a device or other special file, a folder, one whose parent is a file, or the same file
as an input or another output is refused, naming both, and the command exits 2 having written
nothing. Standard library only, so the commands check this before any heavy import.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from fieldeval.errors import EvalError


class OutputError(EvalError, ValueError):
    """An output path the command refuses to write; the message names it (and the input it is) and the fix."""


def check_output(path: Path, option: str) -> None:
    """Refuse an output file path that the atomic writer would make into something else.

    Raises:
        OutputError: For a symlink, a folder, a device or other special file, or a parent that is not a folder.
    """
    try:
        info = path.lstat()
    except (FileNotFoundError, NotADirectoryError):  # absent, or under a file (refused below)
        info = None
    except OSError as exc:
        raise OutputError(f"{option} {path}: cannot be checked ({exc.strerror}); name a file you can write") from exc
    fix = "name a new or regular file"
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise OutputError(
            f"{option} {path} is a symbolic link (to {os.readlink(path)}); writing would replace the link: {fix}"
        )
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{option} {path} is a folder; name the file to write, such as {path / 'run.json'}")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OutputError(f"{option} {path} is a device or other special file, not a regular file; {fix}")
    parent = path.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent  # the first folder that exists: the writer creates the rest
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: {parent} is a file, not a folder; name a path inside a folder")


def check_outputs(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None]) -> None:
    """The checks every command makes of the files it is told to write, before it does any work.

    Each output must be a file the atomic writer can replace (`check_output`), and none may be an
    input of the run or another output (`refuse_overlap`). `outputs` and `inputs` map what each
    path is (`--out`, `the schema module`) to the path.

    Raises:
        OutputError: Naming the first output refused and the fix.
    """
    for what, path in outputs.items():
        check_output(path, what)
    refuse_overlap(outputs, inputs)


def check_folder(path: Path, option: str) -> None:
    """Refuse an output folder path that exists as something other than a folder."""
    if path.exists() and not path.is_dir():
        raise OutputError(f"{option} {path} is not a folder; name a folder (it is created if absent)")


def refuse_overlap(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None]) -> None:
    """Refuse an output that is the same file as an input of the run or as another output.

    `outputs` and `inputs` map what each path is (`--out`, `the schema module`) to the path.

    Raises:
        OutputError: Naming the output and the input (or other output) it is.
    """
    _refuse(outputs, inputs, between_outputs=True)


def refuse_inputs(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None]) -> None:
    """`refuse_overlap` against `inputs` only: for inputs found after the outputs were checked.

    Raises:
        OutputError: Naming the output and the input it is.
    """
    _refuse(outputs, inputs, between_outputs=False)


def _refuse(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None], between_outputs: bool) -> None:
    seen: dict[str, tuple[str, Path]] = {}
    for what, path in inputs.items():
        if path is not None:
            seen.setdefault(_key(path), (what, path))
    known = dict(seen)
    for what, path in outputs.items():
        other = known.get(_key(path)) or _same_file(path, known.values())
        if other is not None:
            raise OutputError(
                f"{what} {path} is the same file as {other[0]} {other[1]}; writing it would destroy that file, "
                f"so name a new file for {what}"
            )
        if between_outputs:
            known[_key(path)] = (what, path)


def module_file(spec: str) -> Path | None:
    """The file of an imported module named by `module:attribute`, or None (a namespace or built-in)."""
    module = sys.modules.get(spec.partition(":")[0])
    file = getattr(module, "__file__", None)
    return Path(file) if file else None


def _key(path: Path) -> str:
    return os.path.normcase(os.path.realpath(path))


def _same_file(path: Path, known: Iterable[tuple[str, Path]]) -> tuple[str, Path] | None:
    """The known path that is the same file as `path` under another name (a hard link, another case)."""
    if not path.exists():
        return None
    for what, other in known:
        try:
            if other.exists() and os.path.samefile(path, other):
                return what, other
        except OSError:
            continue
    return None
