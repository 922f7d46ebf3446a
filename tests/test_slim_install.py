"""The commands run on the slim install of the tool, which ships `fieldeval` and nothing else.

`pip install .` brings the scoring libraries only; JupyterLab, the kernel, matplotlib and jinja2
come with the `notebooks` extra. The commands must therefore never import them, and the modules
that need them must say which extra to install. The bundled examples' code (`walkthroughs`, in
examples/) is a second package that `make setup` installs and the root wheel leaves out.
"""

import ast
import importlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fieldeval.files import REPO_ROOT

SAMPLE = REPO_ROOT / "examples" / "your_own_agent"
WALKTHROUGHS = REPO_ROOT / "examples" / "walkthroughs"
NOTEBOOK_LIBRARIES = ("matplotlib", "jinja2", "IPython", "ipykernel", "jupyterlab", "jupyter_server")
SCRIPTS = Path(sys.executable).parent


# Scores the sample both ways and compares the two runs in one process, then names every library of
# the notebooks extra that got imported on the way.
COMMANDS = f"""
import sys
from fieldeval.commands import score
from fieldeval.commands.compare import main as compare
base = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl"]
assert score.main([*base, "--task", "extract:task", "--cassettes", "cassettes", "--out", "old.json"]) == 0
assert score.main([*base, "--predictions", "predictions_v2.jsonl", "--results", "new.results.jsonl"]) == 0
assert compare(["old.json", "new.results.jsonl", "--gate", "overall >= 0.9"]) == 0
print("IMPORTED", sorted(name for name in {NOTEBOOK_LIBRARIES!r} if name in sys.modules))
"""


def run(args, cwd):
    env = {**os.environ, "EVAL_NOTEBOOKS_MODE": "replay"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_score_and_compare_import_no_library_of_the_notebooks_extra(tmp_path):
    project = shutil.copytree(SAMPLE, tmp_path / "project", ignore=shutil.ignore_patterns("__pycache__", "runs"))
    done = run([sys.executable, "-c", COMMANDS], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "IMPORTED []" in done.stdout


@pytest.mark.parametrize(("library", "module"), [("matplotlib", "charts"), ("jinja2", "tables")])
def test_a_chart_or_styled_table_without_the_extra_names_the_install_line(monkeypatch, library, module):
    monkeypatch.setitem(sys.modules, library, None)  # what an absent library looks like to import
    for name in ("helpers.render.charts", "helpers.render.tables", "pandas.io.formats.style"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"notebooks extra, `pip install '\.\[notebooks\]'`"):
        importlib.import_module(f"helpers.render.{module}")


# A team's install: the tool's wheel unpacked alone, the checkout (which also holds the walkthroughs'
# `helpers`) off the path, started as the console script starts it (its folder not on the path).
AS_INSTALLED = """
import sys
site, checkout = sys.argv[1:3]
del sys.argv[1:3]
sys.path = [site] + [entry for entry in sys.path[1:] if entry not in (checkout, checkout + "/examples")]
from fieldeval.commands.score import main
sys.exit(main())
"""


def test_a_users_own_helpers_module_is_theirs_the_tool_holds_no_such_name(tmp_path):
    """A team's folder with a `helpers.py`: its schema imports that module, not one of this project's."""
    site = tmp_path / "site"
    with zipfile.ZipFile(_wheel(tmp_path / "wheel", REPO_ROOT)) as wheel:
        wheel.extractall(site)
    project = tmp_path / "project"
    project.mkdir()
    (project / "helpers.py").write_text("def clean(text):\n    return text.strip()\n", encoding="utf-8")
    (project / "my_schema.py").write_text(
        "from pydantic import BaseModel\nfrom helpers import clean\nclass Doc(BaseModel):\n    title: str\n",
        encoding="utf-8",
    )
    (project / "cases.jsonl").write_text('{"name": "a", "input": "x", "expected_output": {"title": "x"}}\n', "utf-8")
    (project / "preds.jsonl").write_text('{"name": "a", "output": {"title": "x"}}\n', encoding="utf-8")
    args = ["--schema", "my_schema:Doc", "--cases", "cases.jsonl", "--predictions", "preds.jsonl", "--out", "r.json"]
    done = run([sys.executable, "-c", AS_INSTALLED, str(site), str(REPO_ROOT), *args], project)
    assert done.returncode == 0, done.stderr
    assert "1 of 1 case(s) pass" in done.stdout
    assert (project / "r.json").is_file()


def _wheel(folder: Path, project: Path) -> Path:
    """Build a project's wheel as `pip install` would (hatchling, offline); its path."""
    folder.mkdir(parents=True, exist_ok=True)
    build = "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(folder)], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / done.stdout.split()[-1]


def wheel_modules(folder: Path, project: Path = REPO_ROOT) -> set[str]:
    """The .py files of a project's wheel."""
    with zipfile.ZipFile(_wheel(folder, project)) as wheel:
        return {name for name in wheel.namelist() if name.endswith(".py")}


def test_the_root_wheel_ships_the_tool_whole_and_no_example_code_or_helpers(tmp_path):
    shipped = wheel_modules(tmp_path)
    ours = {path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "fieldeval").rglob("*.py")}
    assert shipped == ours  # every module of the tool, nothing else: no `helpers` on a team's import path
    assert "fieldeval/harness/scoring.py" in shipped and "fieldeval/files.py" in shipped
    examples = {path.relative_to(WALKTHROUGHS).as_posix() for path in WALKTHROUGHS.rglob("*.py")}
    assert {"invoices.py", "fcc/record.py", "fcc/datasets_server.py"} <= examples
    for module in examples:  # neither where it lives now nor where it lived before
        assert f"walkthroughs/{module}" not in shipped and f"fieldeval/examples/{module}" not in shipped
    assert not {"fieldeval/record_fcc.py", "fieldeval/services/datasets_server.py"} & shipped


def test_the_walkthroughs_wheel_ships_helpers_whole_beside_the_examples(tmp_path):
    shipped = wheel_modules(tmp_path, REPO_ROOT / "examples")
    helpers = {path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "helpers").rglob("*.py")}
    examples = {path.relative_to(REPO_ROOT / "examples").as_posix() for path in WALKTHROUGHS.rglob("*.py")}
    assert "helpers/replay.py" in helpers and "walkthroughs/invoices.py" in examples
    assert shipped == helpers | examples  # and nothing of the tool, which it depends on instead


def test_no_module_of_the_tool_imports_the_examples():
    for path in sorted((REPO_ROOT / "fieldeval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not [name for name in names if name.split(".")[0] == "walkthroughs"], f"{path} imports walkthroughs"
