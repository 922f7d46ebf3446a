"""The user's folder on the import path while a command runs, after everything else.

A schema or task named on the command line (`--task extract:task`) often imports a module of its
own beside it (`import lookups`). `python -m` puts the working folder first on `sys.path`, so that
works there; a console script (`eval-score`) does not, so it would fail there. Every command
therefore runs with its working folder appended to `sys.path` (`fieldeval.commands.exits.run`), and
the module a `module:Name` option names is imported with its folder appended too
(`fieldeval.harness.schema`). Appended, never prepended: this project's `fieldeval` and the installed
packages are always found first, so a folder-local module cannot replace a package the command is
made of. This is the only place `sys.path` is changed, and each change is undone when
the command or the import ends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def folder_on_path(folder: Path | str) -> Iterator[None]:
    """`folder` at the end of `sys.path` for the block, unless it is on it already."""
    entry = str(Path(folder).resolve())
    present = {str(Path(item or ".").resolve()) for item in sys.path}
    if entry in present:
        yield
        return
    sys.path.append(entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the block may have removed it itself
            sys.path.remove(entry)
