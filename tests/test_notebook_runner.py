"""`scripts/notebooks.py`: what `make run`, `make outputs` and `make check-outputs` rely on."""

import subprocess
import sys
from pathlib import Path

import nbformat

RUNNER = Path(__file__).resolve().parent.parent / "scripts" / "notebooks.py"


def notebook(tmp_path: Path, *sources: str) -> Path:
    path = tmp_path / "scratch.ipynb"
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    book.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nbformat.write(book, path)
    return path


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True, timeout=120)


def test_run_reports_one_line_and_rewrites_nothing(tmp_path):
    path = notebook(tmp_path, "import os\nprint(os.environ['EVAL_NOTEBOOKS_MODE'])")
    before = path.read_bytes()
    done = run("run", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [line for line in done.stdout.splitlines() if line.startswith("ok   scratch")]
    assert "ran 1 code cells" in done.stdout and "(replay mode)" in done.stdout
    assert path.read_bytes() == before


def test_outputs_stores_what_a_replay_mode_kernel_prints(tmp_path):
    path = notebook(tmp_path, "import os\nprint(os.environ['EVAL_NOTEBOOKS_MODE'])")
    assert run("outputs", str(path)).returncode == 0
    stored = nbformat.read(path, as_version=4)
    assert stored.cells[0].outputs[0].text == "replay\n"
    assert stored.metadata["language_info"] == {"name": "python"}  # normalized: no machine's version


def test_a_failing_cell_is_named_and_fails_the_run(tmp_path):
    path = notebook(tmp_path, "x = 1", "x / 0")
    done = run("run", str(path))
    assert done.returncode == 1
    assert "FAIL scratch.ipynb: cell 2 of 2 raised ZeroDivisionError: division by zero" in done.stdout


def test_normalize_strips_run_specific_metadata(tmp_path):
    path = notebook(tmp_path, "1")
    book = nbformat.read(path, as_version=4)
    book.cells[0].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    nbformat.write(book, path)
    assert run("normalize", str(path)).returncode == 0
    normalized = nbformat.read(path, as_version=4)
    assert "execution" not in normalized.cells[0].metadata
    assert normalized.metadata["kernelspec"]["name"] == "python3"
