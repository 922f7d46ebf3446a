"""The commands run on the slim install, and a user's own `helpers` module is named as the clash it is.

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

from helpers.files import REPO_ROOT
from helpers.harness.schema import SchemaError, load_schema

SAMPLE = REPO_ROOT / "examples" / "your_own_agent"
WALKTHROUGHS = REPO_ROOT / "examples" / "walkthroughs"
NOTEBOOK_LIBRARIES = ("matplotlib", "jinja2", "IPython", "ipykernel", "jupyterlab", "jupyter_server")
SCRIPTS = Path(sys.executable).parent


# Scores the sample both ways and compares the two runs in one process, then names every library of
# the notebooks extra that got imported on the way.
COMMANDS = f"""
import sys
from helpers.commands import score
from helpers.commands.compare import main as compare
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


@pytest.fixture
def clashing_folder(tmp_path, monkeypatch):
    """A user's folder with its own `helpers.py`, and a schema that imports it."""
    (tmp_path / "helpers.py").write_text("def clean(text):\n    return text.strip()\n", encoding="utf-8")
    (tmp_path / "my_schema.py").write_text(
        "from pydantic import BaseModel\nfrom helpers import clean\nclass Doc(BaseModel):\n    title: str\n",
        encoding="utf-8",
    )
    (tmp_path / "cases.jsonl").write_text('{"name": "a", "input": "x", "expected_output": {"title": "x"}}\n', "utf-8")
    (tmp_path / "preds.jsonl").write_text('{"name": "a", "output": {"title": "x"}}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "my_schema", raising=False)
    return tmp_path


def test_a_schema_importing_the_users_own_helpers_is_refused_naming_the_clash(clashing_folder):
    for spec in ("my_schema:Doc", "helpers:Doc"):
        with pytest.raises(SchemaError) as caught:
            load_schema(spec)
        message = str(caught.value)
        assert f"{clashing_folder / 'helpers.py'} shares its name with this project's `helpers` package" in message
        assert "Rename your module (for example to my_helpers.py)" in message


def test_a_users_helpers_package_is_named_too(tmp_path, monkeypatch):
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "text.py").write_text("X = 1\n", encoding="utf-8")
    (tmp_path / "schema2.py").write_text("import helpers.text\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "schema2", raising=False)
    with pytest.raises(SchemaError, match=r"helpers shares its name with this project's `helpers` package"):
        load_schema("schema2:Doc")


def test_without_a_clash_the_refusals_stay_as_they_were(tmp_path, monkeypatch):
    (tmp_path / "schema3.py").write_text("from helpers import nothing_here\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "schema3", raising=False)
    with pytest.raises(SchemaError, match=r"failed to import \(ImportError: cannot import name 'nothing_here'"):
        load_schema("schema3:Doc")


def test_from_that_folder_python_m_finds_the_users_module_and_the_console_script_says_what_to_do(clashing_folder):
    shadowed = run([sys.executable, "-m", "helpers.commands.score", "--help"], clashing_folder)
    assert (
        shadowed.returncode != 0 and "No module named 'helpers.commands'; 'helpers' is not a package" in shadowed.stderr
    )
    assert run([SCRIPTS / "eval-score", "--help"], clashing_folder).returncode == 0
    args = ["--schema", "my_schema:Doc", "--cases", "cases.jsonl", "--predictions", "preds.jsonl", "--out", "r.json"]
    refused = run([SCRIPTS / "eval-score", *args], clashing_folder)
    assert refused.returncode == 2 and "shares its name with this project's `helpers` package" in refused.stderr
    assert refused.stdout == ""
    assert not (clashing_folder / "r.json").exists()


def wheel_modules(folder: Path) -> set[str]:
    """Build the root project's wheel as `pip install .` would (hatchling, offline) and list its .py files."""
    build = "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(folder)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(folder / done.stdout.split()[-1]) as wheel:
        return {name for name in wheel.namelist() if name.endswith(".py")}


def test_the_root_wheel_ships_helpers_whole_and_no_example_code(tmp_path):
    shipped = wheel_modules(tmp_path)
    ours = {path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "helpers").rglob("*.py")}
    assert shipped == ours | {"eval_scripts.py"}  # every module of helpers, the scripts' entry points, nothing else
    assert "helpers/harness/scoring.py" in shipped and "helpers/files.py" in shipped
    examples = {path.relative_to(WALKTHROUGHS).as_posix() for path in WALKTHROUGHS.rglob("*.py")}
    assert {"invoices.py", "fcc/record.py", "fcc/datasets_server.py"} <= examples
    for module in examples:  # neither where it lives now nor where it lived before
        assert f"walkthroughs/{module}" not in shipped and f"helpers/examples/{module}" not in shipped
    assert not {"helpers/record_fcc.py", "helpers/services/datasets_server.py"} & shipped


def test_no_module_of_helpers_imports_the_examples():
    for path in sorted((REPO_ROOT / "helpers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not [name for name in names if name.split(".")[0] == "walkthroughs"], f"{path} imports walkthroughs"
