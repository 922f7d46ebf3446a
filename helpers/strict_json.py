"""The one JSON reader for the files users bring and the tools write: case files, predictions,
cassettes, results files and the FCC snapshot.

`json.loads` accepts more than JSON: `NaN` and `Infinity` (which would be saved back as `null`),
a key repeated in one object (the last silently wins), and an integer too long for `int()`
(a bare `ValueError`). `loads` refuses each with a `StrictJSONError`, a `json.JSONDecodeError`
whose message names the field (`expected_output.line_items[0].sku`) and whose line and column
point at it, so every reader's existing handler reports it with the file and line. A text that
starts with a byte-order mark gets a message that says so.

The fast C parser reads every text; only when it meets one of these does a second, slower walk
find where it is.
"""

from __future__ import annotations

import json
import math
import re
import sys
from json.decoder import scanstring  # type: ignore[attr-defined]  # defined there; typeshed omits it
from typing import Any

_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_CONSTANTS = ("NaN", "Infinity", "-Infinity")
_LITERALS = ("true", "false", "null")


class StrictJSONError(json.JSONDecodeError):
    """JSON these files must not hold; `field` is the path to it, `problem` says what and how to fix it."""

    def __init__(self, problem: str, text: str, position: int, field: str | None = None):
        self.problem = problem
        self.field = field
        super().__init__(f"field '{field}': {problem}" if field else problem, text, position)


class _Suspect(Exception):
    """Raised from inside the C parser; the walk then finds and names what it met."""


def loads(text: str) -> Any:
    """`json.loads(text)`, refusing NaN, Infinity, a too-large number, a repeated key and a leading BOM.

    Raises:
        json.JSONDecodeError: On text that is not JSON, and as `StrictJSONError` on the above.
        RecursionError: On nesting deeper than the interpreter's recursion limit (as `json.loads`).
    """
    if text.startswith("\ufeff"):
        raise StrictJSONError(
            "the text starts with a byte-order mark (BOM); save the file as UTF-8 without a BOM", text, 0
        )
    try:
        return json.loads(text, parse_constant=_refuse, parse_float=_finite, object_pairs_hook=_unique)
    except json.JSONDecodeError:
        raise
    except (_Suspect, ValueError):  # ValueError: an integer longer than int() converts
        raise _locate(text) from None


def _refuse(name: str) -> Any:
    raise _Suspect(name)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Suspect(text)
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _Suspect("duplicate key")
    return result


def _locate(text: str) -> StrictJSONError:
    """Walk the (otherwise valid) text to the first value `loads` refuses, and describe it."""
    try:
        _value(text, 0, [])
    except StrictJSONError as exc:
        return exc
    return StrictJSONError("holds a value this reader refuses", text, 0)  # not reached: the walk finds it


def skip_blanks(text: str, position: int = 0) -> int:
    """Where the JSON blanks from `position` on end (the pattern matches the empty string, so always matches)."""
    blanks = _SPACE.match(text, position)
    assert blanks is not None
    return blanks.end()


def _value(text: str, position: int, path: list[str | int]) -> int:
    """Check the value at `position` (after blanks) and return where it ends; raise at a refused one."""
    position = skip_blanks(text, position)
    char = text[position]
    if char == "{":
        return _object(text, position, path)
    if char == "[":
        return _array(text, position, path)
    if char == '"':
        return scanstring(text, position + 1)[1]
    for literal in _LITERALS:
        if text.startswith(literal, position):
            return position + len(literal)
    for constant in _CONSTANTS:
        if text.startswith(constant, position):
            raise StrictJSONError(
                f"{constant} is not a number JSON allows; write a number, or null for no value",
                text,
                position,
                _where(path),
            )
    number = _NUMBER.match(text, position)
    assert number is not None  # the C parser accepted the text, so what remains here is a number
    integer, fraction, exponent = number.groups()
    if fraction or exponent:
        if math.isinf(float(number.group())):
            raise StrictJSONError(
                f"{number.group()[:20]} is too large for a number; write a finite number", text, position, _where(path)
            )
    else:
        limit = sys.get_int_max_str_digits()
        digits = len(integer.lstrip("-"))
        if limit and digits > limit:
            raise StrictJSONError(
                f"an integer of {digits} digits, more than the {limit} this reader converts; write a shorter number",
                text,
                position,
                _where(path),
            )
    return number.end()


def _object(text: str, position: int, path: list[str | int]) -> int:
    seen: set[str] = set()
    position = skip_blanks(text, position + 1)
    if text[position] == "}":
        return position + 1
    while True:
        key, end = scanstring(text, position + 1)
        if key in seen:
            raise StrictJSONError(
                f"the key {key!r} appears twice in one object; keep one of them", text, position, _where([*path, key])
            )
        seen.add(key)
        position = skip_blanks(text, end) + 1  # past the ':'
        position = skip_blanks(text, _value(text, position, [*path, key]))
        if text[position] == "}":
            return position + 1
        position = skip_blanks(text, position + 1)  # past the ','


def _array(text: str, position: int, path: list[str | int]) -> int:
    position = skip_blanks(text, position + 1)
    if text[position] == "]":
        return position + 1
    index = 0
    while True:
        position = skip_blanks(text, _value(text, position, [*path, index]))
        if text[position] == "]":
            return position + 1
        position += 1  # past the ','
        index += 1


def _where(path: list[str | int]) -> str:
    """A path as the readers name fields: `expected_output.line_items[0].sku`."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the whole value)"
