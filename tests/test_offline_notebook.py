"""The offline agent notebook runs where `strands_evals` cannot be imported, and prints what is stored.

It promises to need only `strands-agents` and `stickler-eval`. The kernel here gets a
PYTHONPATH whose first entry holds packages named `strands_evals`, `pandas` and `matplotlib`
that raise ImportError, so any import of them, direct or indirect, fails the run.
"""

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from helpers.mode import OFFLINE_ENV

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "notebooks" / "Strands_Evals_Offline_Agent.ipynb"
BLOCKED = ("strands_evals", "pandas", "matplotlib")
PROBE = """
import importlib
for name in ("strands_evals", "pandas", "matplotlib"):
    try:
        importlib.import_module(name)
    except ImportError as error:
        print(f"{name}: {error}")
"""


def comparable(cell) -> list:
    """What nbval compares: stream text (consecutive writes joined, since the kernel may flush
    one print in several messages) and the text/plain and text/html of each output."""
    seen = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            if seen and seen[-1][0] == output.name:
                seen[-1] = (output.name, seen[-1][1] + output.text)
            else:
                seen.append((output.name, output.text))
        elif output.output_type == "error":
            seen.append(("error", output.ename, output.evalue))
        else:
            data = output.get("data", {})
            seen.append((output.output_type, data.get("text/plain"), data.get("text/html")))
    return seen


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    blockers = tmp_path_factory.mktemp("blocked")
    for name in BLOCKED:
        (blockers / name).mkdir()
        (blockers / name / "__init__.py").write_text(
            f'raise ImportError("{name} is blocked: this notebook must run without it")\n', encoding="utf-8"
        )
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.append(new_code_cell(PROBE.strip()))
    path = os.pathsep.join(filter(None, [str(blockers), os.environ.get("PYTHONPATH")]))
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute(env={**os.environ, **OFFLINE_ENV, "PYTHONPATH": path})
    return notebook


def printed(*cells) -> str:
    return "".join(output.get("text", "") for cell in cells for output in cell.get("outputs", []))


def test_the_blocked_modules_really_were_blocked(executed):
    probe = printed(executed.cells[-1])
    for name in BLOCKED:
        assert f"{name}: {name} is blocked" in probe


def test_no_cell_errored_and_every_output_matches_the_stored_one(executed):
    stored = nbformat.read(NOTEBOOK, as_version=4)
    fresh_cells = executed.cells[:-1]
    assert len(fresh_cells) == len(stored.cells)
    for index, (fresh, kept) in enumerate(zip(fresh_cells, stored.cells, strict=True)):
        assert not any(o.output_type == "error" for o in fresh.get("outputs", [])), f"cell {index} errored"
        assert comparable(fresh) == comparable(kept), f"cell {index} differs from its stored output"


def test_first_output_states_mode_and_hand_authored_data(executed):
    first = printed(next(cell for cell in executed.cells if cell.cell_type == "code" and cell.outputs))
    assert first.startswith("Mode: replay.")
    assert "HAND-AUTHORED" in first and "measures no model" in first


@pytest.mark.parametrize(
    "line",
    [
        "required == the fields without defaults: True",
        "same name and schema: True",
        "lines add up to the total: 1284.50 == 1284.50: True",
        "equal to the stored input: True",
        "messageStart -> contentBlockStart -> contentBlockDelta x12 -> contentBlockStop -> messageStop -> metadata",
        "stop reason: tool_use",
        "the offered spec is the registered one: True",
        "turns used: 1 of 1 recorded",
        "input the tool was handed: {}",
        "overall 0.589, matched False",
        "precision 0.857, recall 0.857, F1 0.857",
        "raw 0.52 < threshold 0.85 -> clipped to 0.0",
        "mean of the field scores 0.589 == overall 0.589",
        "NW-0087 item: (1 + 0.324 + 1) / 3 = 0.775, item threshold 0.7",
        "line_items: (1 + 1 + 1 + 0.775) / 4 = 0.944, field score 0.944",
        "false discoveries under line_items: document-level 0, leaf-level 1",
        "failed to parse tool input json, defaulting to empty dict",
        "incomplete tool use block, skipping content block",
        "the agent asked for turn 2, but the exchange records 1 turn",
        "record it with `make record`",
    ],
)
def test_key_results(executed, line):
    assert line in printed(*executed.cells)
