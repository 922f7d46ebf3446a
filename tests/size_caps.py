"""What the size-cap tests share: a cap lowered so a test stays small, and a parse that fails past a size."""

from __future__ import annotations

import dataclasses
import json

from fieldeval.formats import limits


def small_cap(monkeypatch, name, size):
    """`limits.<name>` lowered to `size` bytes, so a test stays small and fast."""
    monkeypatch.setattr(limits, name, dataclasses.replace(getattr(limits, name), bytes=size))


def no_parsing(monkeypatch, over=1 << 20):
    """Make a JSON parse of more than `over` characters fail, so a test shows a refusal came before parsing.

    The small files of the run (the case file, its lines) are still parsed as usual.
    """
    parse = json.loads

    def guarded(text, *args, **kwargs):
        if len(text) > over:
            raise AssertionError(f"a text of {len(text):,} characters was parsed before its size was checked")
        return parse(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", guarded)
