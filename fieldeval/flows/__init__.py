"""What each command does, in order: one module per command, each read top down as its recipe.

`score`, `record`, `compare`, `report` and `power` each take the request their command parsed,
run it step by step and return what the command prints. Each step is the only place its
refusals are raised (`Refused`: exit 2, nothing written). The commands (`fieldeval.commands`)
parse arguments, call a flow and print; they neither decide how to score nor write a file.
Every flow module imports only the standard library at the top, so `--help` stays quick.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Self

from fieldeval.errors import EvalError


class Refused(EvalError, ValueError):
    """A run refused before anything was written; the message is the one paragraph the user sees."""


class Request:
    """The base of each flow's request, a frozen dataclass of the options its command parsed."""

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> Self:
        """The request, from the parsed arguments of the same names."""
        options = dataclasses.fields(cls)  # type: ignore[arg-type]  # each subclass is a dataclass
        return cls(**{option.name: getattr(args, option.name) for option in options})
