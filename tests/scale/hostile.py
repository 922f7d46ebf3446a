"""A user's folder whose schema's validator dies or hangs on a marked document, but only inside a worker
process (the driver validates the same values when it reads the files, and must live).

Shared by the hardening tests of local workers (`test_scale_hardening.py`) and of Dask
(`test_scale_with_dask.py`).
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

from fieldeval.commands.score import main
from tests.commands.streams import streams
from tests.jsonl import write_jsonl

SCHEMA = """
import multiprocessing, os, time
from pydantic import BaseModel, field_validator

class Line(BaseModel):
    sku: str

    @field_validator("sku")
    @classmethod
    def misbehave_in_a_worker(cls, value):
        if multiprocessing.parent_process() is not None:  # a worker, never the driver
            if value == "DIE":
                os._exit(3)
            if value == "HANG":
                time.sleep(3600)
        return value

class Order(BaseModel):
    order_id: str
    lines: list[Line]
"""


def project(folder: Path, marked: dict[int, str] | None = None, count: int = 8) -> Path:
    """A user's folder: the schema module, cases and predictions; `marked` puts DIE or HANG in a document."""
    (folder / "hostile_schema.py").write_text(textwrap.dedent(SCHEMA))
    cases, predictions = [], []
    for index in range(count):
        sku = (marked or {}).get(index, f"S{index}")
        truth = {"order_id": f"O-{index}", "lines": [{"sku": sku}]}
        cases.append({"name": f"o{index}", "input": "x", "expected_output": truth})
        predictions.append({"name": f"o{index}", "output": truth})
    write_jsonl(folder / "cases.jsonl", cases)
    write_jsonl(folder / "predictions.jsonl", predictions)
    return folder


ARGS = ["--schema", "hostile_schema:Order", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]


def run_score(folder: Path, monkeypatch, *extra: str) -> tuple[int, str, str]:
    """Exit code, standard output and standard error of one score run in `folder`."""
    monkeypatch.chdir(folder)
    monkeypatch.delitem(sys.modules, "hostile_schema", raising=False)
    return streams(main, [*ARGS, *extra])


def score(folder: Path, monkeypatch, *extra: str) -> tuple[int, str, float]:
    """Exit code, all the user reads (results, then warnings and errors), and the seconds it took."""
    started = time.monotonic()
    code, out, err = run_score(folder, monkeypatch, *extra)
    return code, out + err, time.monotonic() - started
