"""A task or schema imports the other modules of its own folder, under the console scripts and `python -m`.

The sample project with its catalogue moved out of `extract.py` into `catalogue.py`, the way a user's
task grows: `extract.py` now imports a module that no `--task` or `--schema` option names. Every way
of running `score` from that folder must find it, `PYTHONPATH=.` included, and a folder-local
`fieldeval.py` must neither replace this project's package nor crash the console script.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fieldeval.files import REPO_ROOT

SAMPLE = REPO_ROOT / "examples" / "your_own_agent"
SCRIPTS = Path(sys.executable).parent
ARGS = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task"]
ARGS += ["--cassettes", "cassettes", "--out", "run.json"]
IMPORT = "from catalogue import CATALOGUE\n"


@pytest.fixture
def project(tmp_path):
    """The sample project, its task split in two modules (extract.py imports catalogue.py)."""
    shutil.copytree(SAMPLE, tmp_path, dirs_exist_ok=True)
    source = (tmp_path / "extract.py").read_text(encoding="utf-8")
    start, end = source.index("CATALOGUE = {"), source.index("}\n\n\n@tool") + 2
    (tmp_path / "catalogue.py").write_text('"""The catalogue, hand-authored."""\n\n' + source[start:end], "utf-8")
    (tmp_path / "extract.py").write_text(source[:start] + IMPORT + source[end:], encoding="utf-8")
    return tmp_path


def score(command, folder, **env):
    """`score` on the project as a user runs it from its folder, in a fresh process."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(EVAL_NOTEBOOKS_MODE="replay", **env)
    return subprocess.run([*command, *ARGS], cwd=folder, env=environment, capture_output=True, text=True, timeout=120)


CONSOLE = [str(SCRIPTS / "eval-score")]
MODULE = [sys.executable, "-m", "fieldeval.commands.score"]


@pytest.mark.parametrize("command", [CONSOLE, MODULE], ids=["console script", "python -m"])
@pytest.mark.parametrize("pythonpath", [{}, {"PYTHONPATH": "."}], ids=["", "PYTHONPATH=."])
def test_the_task_finds_the_second_module_of_its_folder(project, command, pythonpath):
    done = score(command, project, **pythonpath)
    assert done.returncode == 0, done.stderr
    assert "5 of 5 case(s) pass" in done.stdout
    assert (project / "run.json").is_file()


def test_a_module_the_task_imports_that_is_nowhere_is_named_with_the_fix(project):
    (project / "catalogue.py").unlink()
    for command in (CONSOLE, MODULE):
        refused = score(command, project)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        assert (
            f"--task 'extract:task': {project / 'extract.py'} imports 'catalogue', which is neither in {project} "
            f"nor installed; put catalogue.py in {project} beside it, or install the package that provides it"
        ) in refused.stderr
        assert not (project / "run.json").exists()


def test_the_import_path_is_as_it_was_after_the_command(project, monkeypatch):
    from fieldeval.commands import score as command

    monkeypatch.chdir(project)
    theirs = ("extract", "catalogue", "purchase_order")
    kept = {name: sys.modules.pop(name) for name in theirs if name in sys.modules}
    before = list(sys.path)
    try:
        assert command.main(ARGS) == 0
        assert sys.path == before and str(project) not in sys.path
    finally:
        for name in theirs:
            sys.modules.pop(name, None)
        sys.modules.update(kept)
