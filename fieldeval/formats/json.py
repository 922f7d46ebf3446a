"""The one JSON reader for the files users bring and the tools write: case files, predictions,
cassettes, results files and the FCC snapshot.

`read_text` reads a file as UTF-8 and `parse` reads its JSON (a whole document, or one line of
a JSON Lines file); `read_document` does both for a file that is one JSON document. Each refuses
with a `FormatError` worded by `errors.file_error`, naming the file, the line, the field and the
fix. Given a `cap` (`fieldeval.formats.limits`), `read_text` refuses a file over it before reading it.

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
from pathlib import Path
from typing import Any

from fieldeval.errors import EvalError
from fieldeval.formats.errors import FormatError, field_path, file_error
from fieldeval.formats.limits import Cap, read_bounded

# Deeper than any real document; deep enough input would otherwise end in a raw RecursionError.
MAX_DEPTH = 100
ENCODING_FIX = "save the file as UTF-8"

_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string, unrolled: no backtracking
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIRS = str.maketrans("[{]}", "(())")
_CONSTANTS = ("NaN", "Infinity", "-Infinity")
_LITERALS = ("true", "false", "null")


class StrictJSONError(EvalError, json.JSONDecodeError):
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


def read_text(
    path: Path,
    missing: tuple[str, str],
    *,
    error: type[FormatError] = FormatError,
    encoding_fix: str = ENCODING_FIX,
    cap: Cap | None = None,
) -> str:
    """The file's text, read as UTF-8.

    With `cap`, a file larger than the cap is refused before any of it is read.

    Raises:
        FormatError: As `error`, naming `missing` (problem, fix) when there is no file, the cap
            when the file is over it, or the line of the first byte that is not UTF-8.
    """
    try:
        with path.open("rb") as file:
            raw = file.read() if cap is None else read_bounded(file, path, cap, error=error)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise error(file_error(path, *missing)) from None
    except OSError as exc:
        raise error(file_error(path, f"cannot be read ({exc.strerror or exc})", "check the path")) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(file_error(path, f"not UTF-8 text (byte {exc.start})", encoding_fix, line=line)) from exc


def read_document(
    path: Path, missing: tuple[str, str], fix: str, *, error: type[FormatError] = FormatError, cap: Cap | None = None
) -> Any:
    """A whole file's JSON (an exchange, a snapshot): `read_text`, then `parse`, with `fix` for every refusal.

    Raises:
        FormatError: As `error`, naming `missing` (problem, fix) when there is no file, or `cap`
            when the file is over it (before any of it is read).
    """
    return parse(read_text(path, missing, error=error, encoding_fix=fix, cap=cap), path, fix, error=error)


def parse(
    text: str, path: Path | str, fix: str, *, error: type[FormatError] = FormatError, line: int | None = None
) -> Any:
    """`loads(text)`, refusing what it refuses with a message that names the file, line and field.

    `line` is the line `text` stands on in a JSON Lines file; without it, `text` is the whole
    file and the line is the decoder's.

    Raises:
        FormatError: As `error`, on text that is not JSON, JSON `loads` refuses, or nesting
            deeper than `MAX_DEPTH`.
    """
    # One line is checked here (a whole document is checked by recursion), and only when it has more
    # opening brackets than MAX_DEPTH: it cannot nest deeper than that, and counting is ~70x faster.
    walk = line is not None and text.count("[") + text.count("{") > MAX_DEPTH
    depth = _nesting_over(text, MAX_DEPTH) if walk else 0
    if depth > MAX_DEPTH:
        raise error(
            file_error(path, f"nested {depth} levels deep, more than {MAX_DEPTH}", "flatten the data", line=line)
        )
    try:
        return loads(text)
    except StrictJSONError as exc:
        raise error(file_error(path, exc.problem, fix, line=line or exc.lineno, field=exc.field)) from exc
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if line is not None else f"line {exc.lineno}, column {exc.colno}"
        raise error(file_error(path, f"not valid JSON ({where}): {exc.msg}", fix, line=line)) from exc
    except RecursionError as exc:
        raise error(file_error(path, "nested too deeply to read", fix, line=line)) from exc


def _nesting_over(text: str, limit: int) -> int:
    """The deepest bracket nesting in a JSON text when it passes `limit`, else 0.

    A results file's header lists every case, so a line may hold a million brackets. Its strings
    are dropped and its brackets kept by regular expressions, then innermost pairs are removed
    `limit` times over: what is left nests deeper than `limit` (or does not pair up), and only
    then is the text walked character by character for the exact depth. About twice as fast as
    the walk on such a line.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).translate(_PAIRS)
    for _ in range(limit):
        if not brackets:
            return 0
        brackets = brackets.replace("()", "")
    depth = _nesting(text) if brackets else 0  # the walk reads an unfinished string as the parser does
    return depth if depth > limit else 0


def _nesting(text: str) -> int:
    """The deepest bracket nesting in a JSON text, ignoring brackets inside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


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
    return field_path(path, "(the whole value)")
