"""Run a command's `main` with its two streams captured, as a terminal keeps them apart.

Every command prints its results (tables, summaries, "Saved ...") to standard output and its
errors and refusals to standard error (`fieldeval.commands.exits`), so a test reads each from its
own stream: `streams` returns both, `outcome` the one that tells how the run ended.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any


def streams(main: Callable[..., int], argv: list[str], **options: Any) -> tuple[int, str, str]:
    """The exit code, standard output and standard error of `main(argv, out=..., err=..., **options)`."""
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err, **options)
    return code, out.getvalue(), err.getvalue()


def outcome(main: Callable[..., int], argv: list[str], **options: Any) -> tuple[int, str]:
    """The exit code and what the user reads about the outcome.

    On success that is standard output, and standard error must be empty; on a failure it is
    standard error, where the message that names the file, the field and the fix goes.
    """
    code, out, err = streams(main, argv, **options)
    if code == 0:
        assert err == "", f"exit 0, yet standard error says: {err}"
        return code, out
    return code, err
