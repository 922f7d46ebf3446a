"""A command's run goes down the package's layers and comes back once: no call climbs a layer.

The layers, top down: `commands/` (parse and print), `flows/` (each run's recipe), the concerns
(`harness/`, `compare/`, `exchanges/`, `scale/`, `report/`, `render/`, ...), `formats/` (the
files' shapes), and the base (`files.py`, `outputs.py`, `errors.py`). Every call one module of
the package makes into another is traced while a score, a compare and a report run, and a call
from a lower layer into a higher one fails the test, naming both and the function called.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from fieldeval.commands import compare, report, score
from fieldeval.files import REPO_ROOT

PACKAGE = str(REPO_ROOT / "fieldeval")
LAYERS = {"commands": 0, "flows": 1, "formats": 3, "files": 4, "outputs": 4, "errors": 4}
DATA = REPO_ROOT / "data" / "invoices"


def _module(filename: str) -> str | None:
    """`harness/cases` for fieldeval/harness/cases.py; None outside the package."""
    if not filename.startswith(PACKAGE + "/"):
        return None
    return filename[len(PACKAGE) + 1 :].removesuffix(".py").removesuffix("/__init__")


def _layer(module: str) -> int:
    return LAYERS.get(module.split("/")[0], 2)


def _traced(run) -> tuple[int, list[str], set[tuple[str, str]]]:
    """Run `run()` with every call between package modules traced: its result, the climbs, the calls seen."""
    climbs: list[str] = []
    calls: set[tuple[str, str]] = set()

    def on_event(frame, event, _arg):
        if event != "call" or (callee := _module(frame.f_code.co_filename)) is None:
            return
        caller_frame = frame.f_back
        while caller_frame is not None and _module(caller_frame.f_code.co_filename) is None:
            caller_frame = caller_frame.f_back  # through pandas, stickler and Strands back to the package
        caller = _module(caller_frame.f_code.co_filename) if caller_frame is not None else None
        if caller is None or caller == callee or frame.f_code.co_name == "<module>":  # an import runs top level
            return
        calls.add((caller, callee))
        if _layer(callee) < _layer(caller):
            climbs.append(f"{caller} -> {callee}.{frame.f_code.co_name}")

    sys.setprofile(on_event)
    threading.setprofile(on_event)
    try:
        code = run()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return code, sorted(set(climbs)), calls


def test_score_compare_and_report_runs_never_climb_a_layer(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    run, results = tmp_path / "run.json", tmp_path / "results.jsonl"
    scoring = [
        "--schema",
        "walkthroughs.invoices:Invoice",
        "--cases",
        str(DATA / "reference_cases.jsonl"),
        "--predictions",
        str(DATA / "reference_predictions.jsonl"),
    ]
    commands = {
        "score": lambda: score.main([*scoring, "--out", str(run), "--results", str(results)]),
        "compare": lambda: compare.main([str(run), str(results), "--resamples", "50", "--gate", "overall >= 0"]),
        "report": lambda: report.main([str(results), "--out", str(tmp_path / "page.html"), "--resamples", "50"]),
    }
    for name, command in commands.items():
        code, climbs, calls = _traced(command)
        assert code == 0, (name, capsys.readouterr().err)
        assert (f"commands/{name}", f"flows/{name}") in calls, name  # the trace saw the run go through its flow
        assert any(_layer(callee) == 3 for _, callee in calls), name  # and down to the formats
        assert climbs == [], name
