"""A run file is data: `report`, `compare` and `power` import no module because a file names it.

A colleague's run file names its schema as `module:Class`. Opened in a folder that holds a module
of that name (a `setup.py`, an `evil.py` that imports a sibling), or one that shadows a library's
optional import (a `pyarrow.py`, which pandas tries), none of it may run. Each command runs here as
a user runs it, in a fresh process whose working folder is that folder, and every lure writes a
file when imported. The leaf diffs still show: `score --out` stored them in the run as data.
"""

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fieldeval.commands import report, score
from tests.commands.test_score_command import SCHEMA_MODULE, TRUTH
from tests.jsonl import write_jsonl

SCRIPTS = Path(sys.executable).parent
WRONG = dict(TRUTH["po-2"], supplier="Betamax", total=25.0)
SIBLING = "open('IMPORTED-sibling', 'w').close()\n"
EVIL = "import sibling\n\nopen('IMPORTED-evil', 'w').close()\n" + SCHEMA_MODULE
SETUP = "open('IMPORTED-setup', 'w').close()\n" + SCHEMA_MODULE
PYARROW = "open('IMPORTED-pyarrow', 'w').close()\n"


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A project scored once, honestly: its saved report (with leaf diffs), its results file, and the
    same report as a run saved before runs stored leaf diffs."""
    folder = tmp_path_factory.mktemp("honest")
    (folder / "po_schema.py").write_text(SCHEMA_MODULE, encoding="utf-8")
    cases = [{"name": name, "input": f"PO {name}", "expected_output": truth} for name, truth in TRUTH.items()]
    write_jsonl(folder / "cases.jsonl", cases)
    predictions = [{"name": name, "output": WRONG if name == "po-2" else truth} for name, truth in TRUTH.items()]
    write_jsonl(folder / "predictions.jsonl", predictions)
    argv = ["--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]
    with contextlib.chdir(folder), contextlib.redirect_stdout(io.StringIO()):
        assert score.main([*argv, "--out", "run.json", "--results", "run.jsonl"]) == 0
    sys.modules.pop("po_schema", None)
    saved = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert saved["leaf_diffs"]["documents"][1]["leaves"]  # po-2's two wrong leaves, stored as data
    del saved["leaf_diffs"]
    (folder / "old.json").write_text(json.dumps(saved), encoding="utf-8")
    return folder


def lured(scored: Path, folder: Path, module: str) -> Path:
    """The three runs, each naming `module:PurchaseOrder`, in a folder holding every lure."""
    folder.mkdir()
    for name in ("run.json", "old.json"):
        saved = json.loads((scored / name).read_text(encoding="utf-8"))
        saved["run"]["schema"] = f"{module}:PurchaseOrder"
        (folder / name).write_text(json.dumps(saved), encoding="utf-8")
    header, *rows = (scored / "run.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(header)
    header["schema"] = header["run"]["schema"] = f"{module}:PurchaseOrder"
    (folder / "run.jsonl").write_text(json.dumps(header) + "\n" + "".join(rows), encoding="utf-8")
    for name, text in (("evil.py", EVIL), ("sibling.py", SIBLING), ("setup.py", SETUP), ("pyarrow.py", PYARROW)):
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run(folder: Path, command: list[str], *argv: str) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [*command, *argv], cwd=folder, env=environment, capture_output=True, text=True, timeout=300, check=False
    )


def imported(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.glob("IMPORTED-*"))


def page_documents(page: Path) -> list:
    html = page.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script id="document-data" type="application/json">(.*?)</script>', html, re.S)[1])[
        "documents"
    ]


@pytest.mark.parametrize("module", ["evil", "setup"])
def test_report_compare_and_power_run_nothing_a_run_file_or_its_folder_names(scored, tmp_path, module):
    folder = lured(scored, tmp_path / "colleague", module)

    def script(name):
        return [str(SCRIPTS / f"eval-{name}")]

    done = run(folder, script("report"), "run.json", "--against", "run.json", "--out", "page.html")
    assert done.returncode == 0, done.stderr
    assert "The leaf diff of each of the 1 document(s) that lost points" in done.stdout
    [(name, _, _, leaves)] = page_documents(folder / "page.html")
    assert name == "po-2" and {leaf[0] for leaf in leaves} == {"supplier", "total"}
    assert "Betamax" in json.dumps(leaves)

    done = run(folder, script("report"), "run.jsonl", "--out", "results.html")
    assert done.returncode == 0, done.stderr
    assert "### Failures by kind" in done.stdout

    done = run(folder, script("report"), "old.json", "--out", "old.html")  # saved before runs stored leaf diffs
    assert done.returncode == 0, done.stderr
    assert "old.json stores no leaf diffs" in done.stdout
    assert f"pass --schema module:Class (it names {module}:PurchaseOrder) to compute them here" in done.stdout

    done = run(folder, script("compare"), "run.json", "run.jsonl", "--gate", "overall >= 0.5")
    assert done.returncode == 0, done.stderr
    done = run(folder, script("power"), "run.json", "--target", "supplier.f1", "--simulations", "10")
    assert done.returncode == 0, done.stderr
    assert imported(folder) == []


def test_under_python_m_the_run_file_names_a_module_that_still_never_runs(scored, tmp_path):
    """`python -m` puts the working folder first on the import path (Python's own rule), so only what the
    run file names is a lure here: the report must not import it."""
    folder = lured(scored, tmp_path / "colleague", "evil")
    (folder / "pyarrow.py").unlink()
    done = run(folder, [sys.executable, "-m", "fieldeval.commands.report"], "run.json", "--out", "page.html")
    assert done.returncode == 0, done.stderr
    assert "The leaf diff of each of the 1 document(s) that lost points" in done.stdout
    assert imported(folder) == []


def test_only_the_schema_the_command_line_names_is_imported(scored, tmp_path, capsys, monkeypatch):
    folder = lured(scored, tmp_path / "colleague", "evil")
    shutil.copy(scored / "po_schema.py", folder / "po_schema.py")
    monkeypatch.chdir(folder)
    monkeypatch.delitem(sys.modules, "po_schema", raising=False)
    assert report.main(["old.json", "--schema", "po_schema:PurchaseOrder", "--out", "fresh.html"]) == 0
    assert "po_schema" in sys.modules and imported(folder) == []
    assert report.main(["run.json", "--out", "stored.html"]) == 0
    assert page_documents(folder / "fresh.html") == page_documents(folder / "stored.html")


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda diffs: diffs["documents"][1]["leaves"][0].__setitem__(1, "bogus"), "leaves[0].kind"),
        (lambda diffs: diffs["documents"][1]["leaves"][0].pop(), "leaf_diffs.documents[1].leaves"),
        (lambda diffs: diffs["documents"][1]["leaves"][0].__setitem__(9, float("nan")), "leaves[0].cost"),
        (lambda diffs: diffs["documents"][0]["pairings"].__setitem__("lines[0]", [-1, 1.0, 0.7]), "pairings"),
        (lambda diffs: diffs.__setitem__("columns", ["path"]), "leaf_diffs.columns"),
    ],
)
def test_malformed_stored_leaf_diffs_are_refused_naming_the_file_and_field(scored, tmp_path, capsys, edit, field):
    saved = json.loads((scored / "run.json").read_text(encoding="utf-8"))
    edit(saved["leaf_diffs"])
    (tmp_path / "edited.json").write_text(json.dumps(saved), encoding="utf-8")
    assert report.main([str(tmp_path / "edited.json"), "--out", str(tmp_path / "page.html")]) == 2
    message = capsys.readouterr().err
    assert f"{tmp_path / 'edited.json'}: field '" in message and field in message, message
    assert "re-score the run with `score --out`" in message and not (tmp_path / "page.html").exists()


def test_match_threshold_without_schema_is_refused_saying_what_it_goes_with(scored, capsys):
    assert report.main([str(scored / "run.json"), "--match-threshold", "0.8", "--out", "x.html"]) == 2
    assert "--match-threshold goes with --schema" in capsys.readouterr().err


def test_a_baseline_saved_before_runs_stored_diffs_is_named_where_what_got_worse_would_be(scored, tmp_path, capsys):
    page = tmp_path / "page.html"
    assert report.main([str(scored / "run.json"), "--against", str(scored / "old.json"), "--out", str(page)]) == 0
    summary = capsys.readouterr().out
    assert "### What got worse where" not in summary
    assert "What got worse where needs the baseline's failures by kind too: old.json stores no leaf diffs" in summary
    assert "What got worse where needs the baseline&#39;s failures by kind too" in page.read_text(encoding="utf-8")
