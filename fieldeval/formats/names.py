"""The one rule for case names, applied by every command that reads them (score, record, compare).

Runs are paired by case name, a name becomes a cassette's file name, and tables print it, so a
name must be non-empty text that prints as itself: no tabs, newlines or other control characters,
no zero-width or other format characters (which make two names look equal), no unpaired
surrogates, and not absurdly long. Standard library only, so `compare` checks names without
importing pydantic.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

MAX_NAME_CHARS = 1000
NAME_FIX = "give every case a short printable name (letters, digits, spaces and punctuation)"


def name_problem(name: object) -> str | None:
    """What is wrong with `name` as a case name, in a few words; None when it is a good one."""
    if not isinstance(name, str) or not name:
        return "the case has no name"
    if len(name) > MAX_NAME_CHARS:
        return f"the case name is {len(name)} characters long, more than {MAX_NAME_CHARS}"
    if name.isprintable():  # the common case, in C; the loop below only finds the character to name
        return None
    for char in name:
        if not char.isprintable():
            what = unicodedata.name(char, unicodedata.category(char))
            return f"case name {name!r} holds unprintable characters (U+{ord(char):04X} {what})"
    return None


def case_name(case: Mapping[str, Any], index: int) -> str:
    """A report case's name: its own, or `case_N` (its position) for a case saved without one."""
    return str(case.get("name") or f"case_{index}")
