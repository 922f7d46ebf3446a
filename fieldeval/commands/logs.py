"""Strands' own log lines stay off standard error unless `--verbose` asks for them.

Strands logs through the standard `logging` module, a warning for every throttled call among
others ("OpenAI threw rate limit error"). With no logging set up, Python prints every such
warning to standard error itself, so a throttled run of a hundred cases printed hundreds of them
between the command's own lines, which already say what happened (how often the provider
throttled, which case failed and why). `strands_logs(verbose=False)` gives the `strands` loggers
a handler that drops their records, which keeps Python from printing them; logging that a task
sets up itself still receives them. With `verbose`, they are printed to standard error, each
with its logger's name. Standard library only.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

LOGGER = "strands"  # the parent of every Strands logger (strands.models.openai, strands.event_loop, ...)


_QUIET = logging.NullHandler()  # one for the whole process: added once, never removed


@contextmanager
def strands_logs(verbose: bool, err: TextIO | None = None) -> Iterator[None]:
    """Within the block, Strands' log records are printed to `err` (standard error) with `verbose`; else dropped.

    Dropped for the rest of the process, not only within the block: a case abandoned on Ctrl-C
    may still hear from its provider while the interpreter exits, after the block has ended.
    """
    logger = logging.getLogger(LOGGER)
    if not verbose:
        if _QUIET not in logger.handlers:
            logger.addHandler(_QUIET)
        yield
        return
    shown = logging.StreamHandler(err or sys.stderr)
    shown.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
    shown.setLevel(logging.WARNING)
    logger.addHandler(shown)
    try:
        yield
    finally:
        logger.removeHandler(shown)
