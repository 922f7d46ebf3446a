"""Atomic file replacement: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# The checkout the bundled examples and their data live in (`data/` beside `helpers/`).
REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"


def write_text_atomically(path: Path | str, text: str) -> Path:
    """Write `text` to a temporary file beside `path`, then rename it over `path`.

    A crash, a full disk or an exception mid-write leaves whatever was at `path` exactly as
    it was, which is what keeps a good fixture safe from a failed recording.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
