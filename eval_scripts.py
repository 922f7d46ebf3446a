"""The console scripts' entry points (`eval-score`, `eval-record`, ...), found whatever the folder holds.

A console script imports its command by name. When `PYTHONPATH=.` is set in a folder that has its
own `helpers.py` (a name users give their modules too), `import helpers` would find that file
before this project's package and the script would die with Python's traceback before a single
line of the command ran. Each entry point here loads this project's `helpers` first (the first
`helpers` package on the import path that holds `commands/exits.py`), so the command always runs.
A schema or task that then imports the user's `helpers` gets this package: if that fails while the
module loads (`from helpers import clean`), it is refused with a message naming the clash
(`helpers.harness.schema.name_clash`); a bare `import helpers` used only inside the task fails
later, where it is used, as the task's own AttributeError.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

MARK = Path("commands", "exits.py")  # a file only this project's `helpers` has


def _ours() -> None:
    """This project's `helpers` in `sys.modules`, whatever `import helpers` would find first."""
    loaded = getattr(sys.modules.get("helpers"), "__file__", None)
    if loaded and (Path(loaded).parent / MARK).is_file():
        return
    found = [Path(entry or ".", "helpers") for entry in sys.path if Path(entry or ".", "helpers", MARK).is_file()]
    if not found:
        return  # not installed as a package: let the import below say so
    spec = importlib.util.spec_from_file_location(
        "helpers", found[0] / "__init__.py", submodule_search_locations=[str(found[0])]
    )
    assert spec is not None and spec.loader is not None, f"{found[0]} is not a package"
    package = importlib.util.module_from_spec(spec)
    sys.modules["helpers"] = package
    spec.loader.exec_module(package)


def _main(command: str) -> Any:
    _ours()
    return importlib.import_module(f"helpers.commands.{command}").main()


# One entry point per command; `pyproject.toml` names them under [project.scripts].
score = functools.partial(_main, "score")
record = functools.partial(_main, "record")
compare = functools.partial(_main, "compare")
report = functools.partial(_main, "report")
stand_in = functools.partial(_main, "stand_in")
power = functools.partial(_main, "power")
