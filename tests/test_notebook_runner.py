"""`scripts/notebooks.py`: what `make run`, `make outputs` and `make check-outputs` rely on.

In process (`main(argv)`), with real kernels running small scratch notebooks.
"""

import errno
import os
from pathlib import Path

import nbformat
import pytest

from scripts import notebooks


def notebook(folder: Path, *sources: str, name: str = "scratch.ipynb") -> Path:
    path = folder / name
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_markdown_cell("# scratch"), *(nbformat.v4.new_code_cell(s) for s in sources)]
    book.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    nbformat.write(book, path)
    return path


def run(capsys, *args: str) -> tuple[int, list[str]]:
    code = notebooks.main(list(args))
    return code, capsys.readouterr().out.splitlines()


def test_run_reports_one_line_from_the_notebooks_folder_and_rewrites_nothing(tmp_path, capsys):
    path = notebook(tmp_path, "import os\nprint(os.environ['EVAL_NOTEBOOKS_MODE'], os.getcwd())")
    before = path.read_bytes()
    code, lines = run(capsys, "run", str(path))
    assert code == 0, lines
    assert len(lines) == 1 and lines[0].startswith("ok   scratch.ipynb: ran 1 code cells in ")
    assert lines[0].endswith(" s (replay mode)")
    assert path.read_bytes() == before


def test_outputs_stores_what_a_replay_mode_kernel_prints_in_its_own_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "live")  # the runner forces replay whatever the caller set
    path = notebook(tmp_path, "import os\nprint(os.environ['EVAL_NOTEBOOKS_MODE'], os.getcwd())")
    path.chmod(0o664)
    code, _ = run(capsys, "outputs", str(path))
    assert code == 0
    stored = nbformat.read(path, as_version=4)
    assert stored.cells[1].outputs[0].text == f"replay {tmp_path}\n"
    assert stored.metadata["language_info"] == {"name": "python"}  # normalized: no machine's version
    assert oct(path.stat().st_mode & 0o777) == oct(0o664)
    assert [p.name for p in tmp_path.iterdir()] == ["scratch.ipynb"]


def test_failures_are_reported_per_notebook_and_the_rest_still_run(tmp_path, capsys):
    raises = notebook(tmp_path, "x = 1", "x / 0", name="a_raises.ipynb")
    dies = notebook(tmp_path, "x = 1", "import os\nos._exit(3)", "x", name="b_dies.ipynb")
    passes = notebook(tmp_path, "1 + 1", name="c_passes.ipynb")
    broken = tmp_path / "d_broken.ipynb"
    broken.write_text('{"cells": [')
    code, lines = run(capsys, "run", str(raises), str(dies), "No_Such_Notebook.ipynb", str(broken), str(passes))
    assert code == 1
    assert lines[0] == "FAIL a_raises.ipynb: cell 2 of 2 raised ZeroDivisionError: division by zero"
    assert lines[1] == "FAIL b_dies.ipynb: the kernel died in cell 2 of 3 (a crash, os._exit or out of memory)"
    assert lines[2].startswith("FAIL No_Such_Notebook.ipynb: no such notebook: ")
    assert "the notebooks are: Strands_Evals_Compare_Runs.ipynb, " in lines[2]
    assert lines[3].startswith(f"FAIL d_broken.ipynb: cannot read {broken}: ")
    assert lines[4].startswith("ok   c_passes.ipynb: ran 1 code cells")
    assert lines[5] == "4 of 5 notebooks failed"


def test_a_write_that_fails_leaves_the_stored_notebook_whole(tmp_path, capsys, monkeypatch):
    path = notebook(tmp_path, "print('new output')")
    before = path.read_bytes()

    def disk_full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    code, lines = run(capsys, "outputs", str(path))
    assert code == 1
    assert lines == [f"FAIL scratch.ipynb: cannot write {path}: [Errno 28] No space left on device; "
                     "the stored notebook is unchanged", "1 of 1 notebooks failed"]  # fmt: skip
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["scratch.ipynb"]


def test_normalize_strips_run_specific_metadata_and_leaves_a_clean_file_untouched(tmp_path, capsys):
    path = notebook(tmp_path, "1")
    book = nbformat.read(path, as_version=4)
    book.cells[1].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    nbformat.write(book, path)
    code, lines = run(capsys, "normalize", str(path))
    assert (code, lines) == (0, ["ok   scratch.ipynb: normalized"])
    normalized = nbformat.read(path, as_version=4)
    assert "execution" not in normalized.cells[1].metadata
    assert normalized.metadata["kernelspec"]["name"] == "python3"
    os.utime(path, (0, 0))
    assert run(capsys, "normalize", str(path))[0] == 0
    assert path.stat().st_mtime == 0  # nothing to change: not rewritten


def test_a_bad_command_is_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        notebooks.main(["execute"])
    assert stopped.value.code == 2
