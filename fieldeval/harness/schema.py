"""Import a user's schema or task named as `module:attribute`, from the working directory or an installed package.

A command run from a user's project folder must find `my_schema.py` there, as `python -m` would,
whether it was started as `python -m fieldeval.commands.score` or as the `eval-score` console script (which
does not put the working directory on the import path). The directory is searched first for the
top-level module, and is on the import path, after everything else, while the module runs, so the
modules it imports from its own folder are found too (`fieldeval.harness.import_path`).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from importlib.machinery import PathFinder
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from fieldeval.errors import EvalError


class SchemaError(EvalError, ValueError):
    """A `module:attribute` path that does not import, or names the wrong kind of object."""


def import_object(spec: str, *, option: str = "--schema", directory: Path | str | None = None) -> Any:
    """The object `spec` (`module:attribute`, attribute dotted if nested) names.

    Args:
        spec: `package.module:Name`.
        option: The command-line option that gave `spec`, named in errors.
        directory: Searched first for the top-level module (default: the working directory).

    Raises:
        SchemaError: If `spec` is malformed, the module does not import, or has no such attribute.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise SchemaError(f"{option} {spec!r}: write it as module:Name (for example my_schema:Invoice)")
    directory = Path(directory) if directory is not None else Path.cwd()
    try:
        module = _import_module(module_name, directory)
    except (Exception, SystemExit) as exc:  # a SyntaxError, a sys.exit() or any error while the module runs
        raise _import_refusal(spec, option, module_name, directory, exc) from exc
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise SchemaError(
                f"{option} {spec!r}: the module {module_name!r} ({getattr(module, '__file__', '?')}) "
                f"defines no {attribute!r}; check the name after the colon"
            )
        value = getattr(value, part)
    return value


def _import_refusal(spec: str, option: str, module_name: str, directory: Path, exc: BaseException) -> SchemaError:
    """The refusal for a module that does not import: not found, or failed while it ran."""
    top = module_name.split(".")[0]
    if isinstance(exc, ModuleNotFoundError) and exc.name and exc.name.split(".")[0] != top:
        found = PathFinder.find_spec(top, [str(directory)])  # the user's module, which imports a missing one
        where = found.origin if found is not None and found.origin else repr(module_name)
        missing = exc.name.split(".")[0]
        return SchemaError(
            f"{option} {spec!r}: {where} imports {exc.name!r}, which is neither in {directory} nor installed; "
            f"put {missing}.py in {directory} beside it, or install the package that provides it"
        )
    if isinstance(exc, ModuleNotFoundError):
        return SchemaError(
            f"{option} {spec!r}: no module named {exc.name!r} in {directory} or the installed packages; "
            "run the command from the folder holding the module, or install the package that provides it"
        )
    return SchemaError(  # a SyntaxError, a sys.exit() or any error raised while the user's module runs
        f"{option} {spec!r}: the module {module_name!r} failed to import ({type(exc).__name__}: {exc}); "
        "fix the module so that `python -c 'import " + module_name + "'` works from this folder"
    )


def load_schema(spec: str, *, directory: Path | str | None = None) -> type[BaseModel]:
    """The pydantic model class `spec` names; refuse anything else."""
    value = import_object(spec, option="--schema", directory=directory)
    if not (isinstance(value, type) and issubclass(value, BaseModel)):
        raise SchemaError(
            f"--schema {spec!r} is a {type(value).__name__}, not a pydantic model class; "
            "name a class that subclasses pydantic.BaseModel"
        )
    if not value.model_fields or value.__pydantic_generic_metadata__["parameters"]:
        raise SchemaError(
            f"--schema {spec!r} is a base class with no fields of its own, not the schema of your output; "
            "name your own model class that subclasses it (for example my_schema:Invoice)"
        )
    return value


def load_task(spec: str, *, directory: Path | str | None = None) -> Callable[..., Any]:
    """The task function `spec` names: `task(case, model)` returning the structured output."""
    value = import_object(spec, option="--task", directory=directory)
    if not callable(value) or isinstance(value, type):
        raise SchemaError(
            f"--task {spec!r} is a {type(value).__name__}, not a function; "
            "name a function task(case, model) that returns the structured output"
        )
    return value


def _import_module(name: str, directory: Path) -> Any:
    """`importlib.import_module(name)`, with `directory` searched first for its top-level package."""
    from fieldeval.harness.import_path import folder_on_path

    top = name.split(".")[0]
    with folder_on_path(directory):  # what the module imports from its own folder is found, after the rest
        if top not in sys.modules:
            spec = PathFinder.find_spec(top, [str(directory)])
            if spec is not None and spec.loader is not None:
                module = importlib.util.module_from_spec(spec)
                sys.modules[top] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[top]
                    raise
        return importlib.import_module(name)
