"""`score --workers N`, `--cluster ADDRESS|local` and `--results PATH`: the score command's scale-out options.

`add_arguments` adds them to `python -m helpers.commands.score`; the run checks them
(`helpers.run.scale_problem`) and, when any is given, scores stored outputs fanned out in place of
the one-process step (`helpers.run.score`). The saved report (`--out`) is the same file one
process writes; `--results` writes the compact per-document file as batches finish; with
`--results` alone no report is held, so memory is bounded by the batch size.

Fan-out scores stored outputs (`--predictions`): the agent runs of `--task` are not repeated
on workers.
"""

from __future__ import annotations

import argparse
from typing import Any

from helpers.scale.engine import BATCH_TIMEOUT  # the standard library only: --help stays quick


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the scale-out options to the score command's parser."""
    group = parser.add_argument_group("scoring at scale (with --predictions)")
    group.add_argument(
        "--workers", type=int, help="score on N local processes; with --cluster local, the number of Dask workers"
    )
    group.add_argument(
        "--cluster",
        metavar="ADDRESS|local",
        help="score on a Dask cluster: a scheduler address (tcp://host:8786), or `local` to start one "
        "(needs pip install '.[cluster]')",
    )
    group.add_argument(
        "--results", type=_path, help="also write the compact per-document results file (JSONL) that compare reads"
    )
    group.add_argument("--batch-size", type=int, default=32, help="documents per batch sent to a worker (default 32)")
    group.add_argument(
        "--batch-timeout",
        type=float,
        default=BATCH_TIMEOUT,
        metavar="SECONDS",
        help="a batch still running after this long is scored 0, named, and its local worker replaced "
        f"(default {BATCH_TIMEOUT:g})",
    )
    group.add_argument(
        "--beyond-cores", action="store_true", help="allow more --workers than this machine has CPU cores"
    )
    group.add_argument(
        "--fan-out",
        choices=("auto", "always"),
        default="auto",
        help="auto (default): a run too small to win back the workers' start-up is scored in one process; "
        "always: use the workers whatever the size",
    )


def _path(text: str) -> Any:
    from pathlib import Path

    return Path(text)
