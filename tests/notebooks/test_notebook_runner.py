"""The scripts behind the Makefile: `scripts/notebooks.py` (`make run`, `make outputs`,
`make check-outputs`), in process with real kernels on scratch notebooks, and
`scripts/make_compare.py` (`make compare`), through make itself.
"""

import errno
import os
import subprocess
from pathlib import Path

import nbformat
import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.harness.reports import save_report
from scripts import make_compare, notebooks
from walkthroughs.invoices import Invoice, reference_cases

ROOT = Path(__file__).resolve().parents[2]


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
    assert "the notebooks are: Strands_Evals_Choosing_A_Model.ipynb, Strands_Evals_Compare_Runs.ipynb, " in lines[2]
    assert lines[3].startswith(f"FAIL d_broken.ipynb: cannot read {broken}: ")
    assert lines[4].startswith("ok   c_passes.ipynb: ran 1 code cells")
    assert lines[5] == "4 of 5 notebooks failed"


def test_the_longest_notebooks_start_first_and_lines_keep_the_order_named(tmp_path, capsys, monkeypatch):
    stored = {path.name for path in notebooks.notebooks([])}
    assert set(notebooks.LONGEST_FIRST) <= stored  # a renamed notebook would otherwise just start late
    first = notebook(tmp_path, "1", name="a_first.ipynb")
    longest = notebook(tmp_path, "2", name="z_longest.ipynb")
    monkeypatch.setattr(notebooks, "LONGEST_FIRST", ("z_longest.ipynb",))
    started = []
    execute = notebooks.execute
    monkeypatch.setattr(notebooks, "execute", lambda path: started.append(path.name) or execute(path))
    code, lines = run(capsys, "--jobs", "1", "run", str(first), str(longest))
    assert code == 0, lines
    assert started == ["z_longest.ipynb", "a_first.ipynb"]
    assert [line.split(":")[0] for line in lines] == ["ok   a_first.ipynb", "ok   z_longest.ipynb"]


def test_a_write_that_fails_leaves_the_stored_notebook_whole(tmp_path, capsys, monkeypatch):
    path = notebook(tmp_path, "print('new output')")
    before = path.read_bytes()

    def disk_full(handle):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    code, lines = run(capsys, "outputs", str(path))
    assert code == 1
    assert lines == [f"FAIL scratch.ipynb: cannot write {path}: No space left on device; "
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
    assert run(capsys, "normalize", str(path)) == (0, ["ok   scratch.ipynb: already normalized"])
    assert path.stat().st_mtime == 0  # nothing to change: not rewritten


def test_a_bad_command_is_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        notebooks.main(["execute"])
    assert stopped.value.code == 2


def make_compare_target(tmp_path: Path, *variables: str) -> subprocess.CompletedProcess:
    """`make compare VAR=...` as a user types it; `-o` keeps make from rebuilding the environment."""
    argv = ["make", "-C", str(ROOT), "--no-print-directory", "-o", ".venv/.synced", "compare", *variables]
    # Run as a top-level make even under `make test`, whose MAKELEVEL would make it `make[1]`.
    env = {name: value for name, value in os.environ.items() if name not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_make_compare_keeps_gates_as_typed_and_executes_nothing_in_them(tmp_path):
    hostile = f"--gate 'overall >= 0.8' $(touch {tmp_path}/a) `touch {tmp_path}/b`; touch {tmp_path}/c"
    hostile += f" '$(shell touch {tmp_path}/d)'"
    done = make_compare_target(tmp_path, f"OLD={tmp_path}/missing.json", "NEW=it's new.json", f"GATES={hostile}")
    assert sorted(path.name for path in tmp_path.iterdir()) == []  # no file made, not even one named 0.8
    assert (
        "+ python -m fieldeval.commands.compare " in done.stderr and "--gate 'overall >= 0.8' '$(touch' " in done.stderr
    )
    assert f"unrecognized arguments: $(touch {tmp_path}/a) `touch {tmp_path}/b`; touch" in done.stderr
    assert "make: *** [Makefile" in done.stderr and "compare] Error 2" in done.stderr


def test_make_compare_names_the_commands_own_exit_code(tmp_path, score_reference):
    report = score_reference(StructuredOutputSimilarity(Invoice), reference_cases())
    old, new = save_report(report, tmp_path / "old.json"), save_report(report, tmp_path / "new.json")
    passing = make_compare_target(tmp_path, f"OLD={old}", f"NEW={new}", "GATES=--gate 'overall >= 0.5'")
    assert passing.returncode == 0, passing.stderr
    failing = make_compare_target(tmp_path, f"OLD={old}", f"NEW={new}", "GATES=--gate 'overall >= 0.99'")
    assert failing.returncode == 2 and "compare] Error 1" in failing.stderr  # make's 2, the gate's 1 named


def test_make_compare_needs_both_reports_and_closed_quotes():
    with pytest.raises(ValueError, match="OLD and NEW are both needed"):
        make_compare.command("a.json", "", "")
    with pytest.raises(ValueError, match="cannot be split into words .*close every quote"):
        make_compare.command("a.json", "b.json", "--gate 'overall >= 0.8")
    assert make_compare.command("a.json", "b.json", "--gate 'overall >= 0.8'")[-2:] == ["--gate", "overall >= 0.8"]


def test_normalize_joins_a_print_the_kernel_sent_in_chunks_and_keeps_other_outputs_apart():
    cell = nbformat.v4.new_code_cell("print('a'); print('b')")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="a"),
        nbformat.v4.new_output("stream", name="stdout", text="\nb\n"),
        nbformat.v4.new_output("stream", name="stderr", text="warn\n"),
        nbformat.v4.new_output("execute_result", data={"text/plain": "1"}, execution_count=1),
        nbformat.v4.new_output("stream", name="stdout", text="c\n"),
    ]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    outputs = notebooks.normalize(notebook).cells[0].outputs
    assert [(o.output_type, o.get("name"), o.get("text")) for o in outputs] == [
        ("stream", "stdout", "a\nb\n"),
        ("stream", "stderr", "warn\n"),
        ("execute_result", None, None),
        ("stream", "stdout", "c\n"),
    ]
