"""Every number a notebook's prose quotes is shown by one of its cells.

A number in a markdown cell must appear, to the precision quoted, in the code or the stored
outputs of the same notebook (a percentage may appear as a fraction). nbval then checks the
stored outputs against a fresh run, so a quoted number can go stale only by failing a test.
Numbers inside `code spans` are code, not claims, section numbers are headings, and web
addresses (an issue number in a link) are references.
"""

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "examples" / "notebooks").glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?%?")


def values(text: str) -> set[float]:
    return {float(token.rstrip("%").replace(",", "")) for token in NUMBER.findall(text)}


def shown(notebook) -> set[float]:
    """Every number in the code cells and their stored outputs."""
    parts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        parts.append(cell.source)
        for output in cell.outputs:
            parts.append(output.get("text", ""))
            parts.extend(output.get("data", {}).get(kind, "") for kind in ("text/plain", "text/html"))
    return values("\n".join(parts))


def quoted(notebook) -> list[tuple[int, str]]:
    """The numbers each markdown cell states, outside code spans and section headings."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown":
            continue
        prose = re.sub(r"`[^`]*`", " ", cell.source)
        prose = re.sub(r"https?://\S+", " ", prose)
        prose = re.sub(r"^#+ \d+\.", " ", prose, flags=re.MULTILINE)
        found += [(index, token) for token in NUMBER.findall(prose)]
    return found


def is_shown(token: str, numbers: set[float]) -> bool:
    digits = token.rstrip("%")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value = float(digits.replace(",", ""))
    candidates = [(value, 0.5 * 10**-decimals)]
    if token.endswith("%"):
        candidates.append((value / 100, 0.5 * 10 ** -(decimals + 2)))
    return any(abs(number - target) <= tolerance + 1e-12 for number in numbers for target, tolerance in candidates)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_every_quoted_number_is_shown_by_a_cell(path):
    notebook = nbformat.read(path, as_version=4)
    numbers = shown(notebook)
    unshown = [f"markdown cell {index}: {token}" for index, token in quoted(notebook) if not is_shown(token, numbers)]
    assert not unshown, f"{path.name} quotes numbers no cell shows: {'; '.join(unshown)}"


def test_the_check_catches_an_unshown_number():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(
            "## 1. Scores\n\nOverall 0.754, and `0.999` is code; see https://example.org/issues/249."
        ),
        nbformat.v4.new_code_cell("print(score)"),
    ]
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", text="0.7541666\n")]
    assert [token for _, token in quoted(notebook)] == ["0.754"]
    assert is_shown("0.754", shown(notebook))
    assert not is_shown("0.76", shown(notebook))
    assert is_shown("75.4%", shown(notebook))


# A stated reading time is a claim too: every word a reader reads (prose, code, printed output) at
# a careful eighty words a minute, which each notebook's first cell says it assumes.
CAREFUL_WORDS_PER_MINUTE = 80
STATED_MINUTES = {"about half an hour": 30, "about forty-five minutes": 45, "about fifty minutes": 50}


def words_read(notebook) -> int:
    parts = []
    for cell in notebook.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(output.get("text", "") or output.get("data", {}).get("text/plain", ""))
    return len("\n".join(parts).split())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_a_stated_reading_time_matches_a_careful_read(path):
    notebook = nbformat.read(path, as_version=4)
    first = " ".join(notebook.cells[0].source.split())
    stated = [minutes for phrase, minutes in STATED_MINUTES.items() if phrase in first]
    if "minute" in first or "hour" in first:
        assert stated, f"{path.name}: a reading time not in {list(STATED_MINUTES)}"
        assert "eighty words a minute" in first
    for minutes in stated:
        measured = words_read(notebook) / CAREFUL_WORDS_PER_MINUTE
        assert abs(measured - minutes) <= 0.15 * minutes, f"{path.name}: states {minutes} min, reads in {measured:.0f}"
