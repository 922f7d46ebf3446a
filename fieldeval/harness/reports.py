"""Date-safe saving and loading of `StructuredOutputReport`.

`EvaluationReport.to_file` writes with `json.dump`, which cannot serialize the
`datetime.date` values an invoice case holds ("Object of type date is not JSON
serializable"). The report is a pydantic model, so its own `model_dump_json` writes dates
as ISO strings. That JSON is the one saved-report format every helper here reads and writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from strands_evals.evaluators import StructuredOutputReport

from fieldeval.files import write_bytes_atomically
from fieldeval.formats import limits
from fieldeval.formats.leaf_diffs import LEAF_DIFFS_KEY, StoredDiffs, read_leaf_diffs
from fieldeval.formats.run_info import RUN_FIX, RUN_KEY, RunInfo, RunInfoError, read_run_info


def save_report(
    report: StructuredOutputReport,
    path: Path | str,
    run: dict[str, Any] | None = None,
    leaf_diffs: str | None = None,
) -> Path:
    """Write `report` as its pydantic JSON, atomically, so a failed write leaves no half file.

    The bytes are `model_dump_json(indent=2)`'s, taken from the serializer before it decodes
    them: a large report is tens of megabytes, not decoded to text and encoded back. `run` (the
    run's self-description, `fieldeval.formats.run_info.RunInfo.to_json()`) is added as the
    top-level key `"run"`, and `leaf_diffs` (the JSON text `fieldeval.formats.leaf_diffs.leaf_diffs_json`
    gives) as `"leaf_diffs"`, both last; `StructuredOutputReport.from_file` ignores them.
    """
    path = Path(path)
    data = report.__pydantic_serializer__.to_json(report, indent=2)
    tails = []
    if run is not None:
        tails.append((RUN_KEY, json.dumps(run, indent=2, ensure_ascii=False).replace("\n", "\n  ")))
    if leaf_diffs is not None:
        tails.append((LEAF_DIFFS_KEY, leaf_diffs))
    if tails:
        parts = [data[: data.rindex(b"}")].rstrip()]  # the report's object, still open
        parts += [f',\n  "{key}": {text}'.encode() for key, text in tails]
        data = b"".join([*parts, b"\n}"])
    return write_bytes_atomically(path, data)


def load_run_info(path: Path | str) -> RunInfo | None:
    """The `"run"` object of a saved report, None when the report was saved without one.

    Raises:
        ValueError: If the file is larger than `limits.RUN` (before it is read), or its run object is malformed.
    """
    limits.check_file(path, limits.RUN)
    try:
        return read_run_info(json.loads(Path(path).read_text(encoding="utf-8")))
    except RunInfoError as exc:  # a field out of range, as after a hand edit
        raise ValueError(f"{path}: {exc} ({RUN_FIX})") from None
    except ValueError as exc:  # not JSON: the file is not what score wrote
        raise ValueError(
            f"{path}: field 'run' is not a run description ({exc}); re-run the score that wrote it"
        ) from exc


def load_report(path: Path | str) -> StructuredOutputReport:
    """Read a saved report back as a `StructuredOutputReport`, so `metrics()` and `per_case()` work.

    Any file name is read, as `save_report` writes any.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ValueError: If the file is larger than `limits.RUN` (before it is read, as `limits.TooLarge`)
            or is not a saved report.
    """
    return load_saved_run(path)[0]


def load_saved_run(path: Path | str) -> tuple[StructuredOutputReport, StoredDiffs | None]:
    """A saved report and the leaf diffs `score` stored in it (None when it stored none), read as data.

    Raises:
        FileNotFoundError: If there is no file at `path`.
        ValueError: If the file is not a saved report, or its stored leaf diffs are malformed (named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no saved report here; write one with fieldeval.harness.reports.save_report")
    limits.check_file(path, limits.RUN)
    try:
        # What `from_file` does after refusing any name not ending in .json: `score --out run.report`
        # writes this same JSON, and the name is the user's to choose.
        data = json.loads(path.read_text(encoding="utf-8"))
        report = StructuredOutputReport.from_dict(data)
    except Exception as exc:  # pydantic, json and key errors all mean the same thing here
        raise ValueError(
            f"{path}: not a saved StructuredOutputReport ({type(exc).__name__}: {exc}); "
            "save reports with fieldeval.harness.reports.save_report"
        ) from exc
    return report, read_leaf_diffs(data, path)
