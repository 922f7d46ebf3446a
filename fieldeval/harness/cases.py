"""The JSONL case and prediction files a user brings, read into Strands Evals `Case`s and outputs.

The formats and their checks are `fieldeval.formats.cases`; this module builds the `Case`s the
harness scores from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from fieldeval.formats.cases import CaseFileError, read_cases, read_predictions
from fieldeval.formats.json import MAX_DEPTH

if TYPE_CHECKING:
    from strands_evals import Case

__all__ = ["MAX_DEPTH", "CaseFileError", "load_cases", "load_predictions", "read_cases"]


def load_cases(path: Path | str, schema: type[BaseModel]) -> list[Case]:
    """Read a case file into Strands Evals `Case`s, each `expected_output` an instance of `schema`.

    Raises:
        CaseFileError: As `fieldeval.formats.cases.read_cases`.
    """
    from strands_evals import Case  # here, not at the top: `read_cases` must work without Strands Evals

    return [
        Case(name=record.name, input=record.input, expected_output=expected, metadata=record.metadata)
        for record, expected in read_cases(path, schema)
    ]


def load_predictions(
    path: Path | str, schema: type[BaseModel], cases: Sequence[Case], sources: dict[str, dict] | None = None
) -> dict[str, BaseModel]:
    """Read a predictions file: one validated output per case of `cases`, by name.

    `sources`, when given, receives the `model_id` and `usage` the file gives per case.

    Raises:
        CaseFileError: As `load_cases`, and for a prediction naming no case or a case with none.
    """
    return read_predictions(path, schema, [case.name for case in cases], sources)
