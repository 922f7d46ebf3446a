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


def _imported_modules(path: Path) -> set[str]:
    """Every module a source file imports, at the top or inside a function, relative imports resolved."""
    import ast

    package = ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_no_module_outside_the_commands_imports_them():
    """Library code raises typed errors; only `commands/` knows the command line and its exit codes."""
    offenders = []
    for path in sorted(Path(PACKAGE).rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "commands":
            continue
        for name in sorted(_imported_modules(path)):
            if name == "fieldeval.commands" or name.startswith("fieldeval.commands."):
                offenders.append(f"{path.relative_to(REPO_ROOT)} imports {name}")
    assert offenders == []


def test_the_import_walk_sees_every_form_of_import(tmp_path: Path):
    """The walk above cannot pass by missing a form: each of these is found."""
    folder = REPO_ROOT / "fieldeval" / "flows"
    sample = folder / "x.py"
    forms = {
        "import fieldeval.commands.exits": "fieldeval.commands.exits",
        "from fieldeval.commands import exits": "fieldeval.commands.exits",
        "from fieldeval import commands": "fieldeval.commands",
        "def f():\n    from ..commands import record": "fieldeval.commands.record",
    }
    for source, expected in forms.items():
        names = _imported_modules_of(source, sample)
        assert expected in names, (source, names)


def _imported_modules_of(source: str, path: Path) -> set[str]:
    """`_imported_modules` of `source` as if it were the file at `path` (nothing is written there)."""
    from unittest import mock

    with mock.patch.object(Path, "read_text", lambda self, encoding=None: source):
        return _imported_modules(path)
