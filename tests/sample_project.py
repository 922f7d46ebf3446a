"""The "Your own agent" sample copied into a test's folder, as a user's project with a model factory of its own."""

import shutil
import sys
from pathlib import Path

from fieldeval.files import REPO_ROOT

FOLDER = REPO_ROOT / "examples" / "your_own_agent"


def sample_project(tmp_path: Path, monkeypatch, factory: str, cases: int | None = None) -> Path:
    """The sample folder without cassettes, `factory` as its `models.py`, run from there (first `cases` only)."""
    folder = tmp_path / "your_own_agent"
    shutil.copytree(FOLDER, folder, ignore=shutil.ignore_patterns("__pycache__", "cassettes"))
    if cases is not None:
        kept = (FOLDER / "cases.jsonl").read_text(encoding="utf-8").splitlines()[:cases]
        (folder / "cases.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")
    (folder / "models.py").write_text(factory, encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    for name in ("purchase_order", "extract", "models"):  # each test imports the copy's own modules
        monkeypatch.delitem(sys.modules, name, raising=False)
    return folder
