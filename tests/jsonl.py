"""Writing the JSON-lines files the tests hand to the commands: one JSON object per line, UTF-8."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    """Write `rows` to `path`, one `json.dumps` a line, and return the path."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path
