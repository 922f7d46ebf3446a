"""The offline agent notebook needs only strands and stickler, and its stored outputs say what it promises.

nbval already executes every notebook and compares each cell with its stored output, so these
tests read the stored outputs instead of running the notebook a second time. What nbval cannot
see is the promise that the notebook runs with `strands-agents` and `stickler-eval` alone: for
that, every import statement of the notebook runs in a fresh interpreter whose PYTHONPATH starts
with packages named `strands_evals`, `pandas` and `matplotlib` that raise ImportError, so any
import of them, direct or through a helper, fails.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebooks" / "Strands_Evals_Offline_Agent.ipynb"
BLOCKED = ("strands_evals", "pandas", "matplotlib")


@pytest.fixture(scope="module")
def stored():
    return nbformat.read(NOTEBOOK, as_version=4)


def code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def printed(notebook) -> str:
    return "".join(output.get("text", "") for cell in code_cells(notebook) for output in cell.get("outputs", []))


def import_statements(notebook) -> list[str]:
    """Every import statement in the notebook's code cells, at any depth, in order."""
    statements = []
    for cell in code_cells(notebook):
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                statements.append(ast.unparse(node))
    return statements


def test_every_import_of_the_notebook_works_without_strands_evals_pandas_or_matplotlib(stored, tmp_path):
    for name in BLOCKED:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f'raise ImportError("{name} is blocked")\n', encoding="utf-8")
    statements = import_statements(stored)
    assert "from strands import Agent" in statements and "import stickler" in statements
    probe = "\n".join([*statements, "import sys", f"print(sorted(set({BLOCKED!r}) & set(sys.modules)))"])
    path = os.pathsep.join(filter(None, [str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=NOTEBOOK.parent,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_the_blocker_really_blocks(tmp_path):
    (tmp_path / "pandas").mkdir()
    (tmp_path / "pandas" / "__init__.py").write_text('raise ImportError("pandas is blocked")\n', encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-c", "import helpers.render.tables"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode != 0 and "pandas is blocked" in run.stderr


def test_every_code_cell_has_stored_outputs_and_none_errored(stored):
    cells = code_cells(stored)
    assert cells and all(cell.outputs for cell in cells if "def " not in cell.source.split("\n")[0])
    assert not [cell for cell in cells for output in cell.outputs if output.output_type == "error"]


def test_first_output_states_mode_and_hand_authored_data(stored):
    first = next(cell for cell in code_cells(stored) if cell.outputs)
    text = "".join(output.get("text", "") for output in first.outputs)
    assert text.startswith("Mode: replay.")
    assert "HAND-AUTHORED" in text and "measures no model" in text


def test_the_agent_call_is_in_the_cell_that_teaches_it(stored):
    sources = "\n".join(cell.source for cell in code_cells(stored))
    assert "Agent(model=model, callback_handler=None)" in sources
    assert "structured_output_model=Invoice)" in sources


def test_no_table_line_is_wider_than_the_tables_are_fitted_to(stored):
    from fieldeval.render.text import WIDTH

    tables = [cell for cell in code_cells(stored) if "print_table(" in cell.source]
    lines = [line for cell in tables for output in cell.outputs for line in output.get("text", "").splitlines()]
    assert len(tables) >= 5 and lines
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)


@pytest.mark.parametrize(
    "line",
    [
        "required == the fields without defaults: True",
        "same name and schema: True",
        "lines add up to the total: 1284.50 == 1284.50: True",
        "messageStart -> contentBlockStart -> contentBlockDelta x12 -> contentBlockStop -> messageStop -> metadata",
        "stop reason: tool_use",
        "the offered spec is the registered one: True",
        "turns used: 1 of 1 recorded",
        "input the tool was handed: {}",
        "overall 0.589, matched False",
        "precision 0.857, recall 0.857, F1 0.857",
        "raw 0.52 < threshold 0.85",
        "mean of the field scores 0.589 == overall 0.589",
        "NW-0087 item: (1 + 0.324 + 1) / 3 = 0.775, item threshold 0.7",
        "line_items: (1 + 1 + 1 + 0.775) / 4 = 0.944, field score 0.944",
        "false discoveries under line_items: document-level 0, leaf-level 1",
        "failed to parse tool input json, defaulting to empty dict",
        "incomplete tool use block, skipping content block",
        "the agent asked for turn 2, but the exchange records 1 turn",
    ],
)
def test_key_results(stored, line):
    assert line in printed(stored)
