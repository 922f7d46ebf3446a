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


@contextmanager
def strands_logs(verbose: bool, err: TextIO | None = None) -> Iterator[None]:
    """Within the block, Strands' log records are dropped, or with `verbose` printed to `err` (standard error)."""
    handler: logging.Handler
    if verbose:
        handler = logging.StreamHandler(err or sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        handler.setLevel(logging.WARNING)
    else:
        handler = logging.NullHandler()
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
