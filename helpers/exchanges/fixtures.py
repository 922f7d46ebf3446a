"""The exchange fixture format: one JSON file per recorded (or hand-authored) conversation.

A fixture is checked in full before any agent runs, so a broken file fails with an error that
names the file, the turn and the field, instead of as a confusing agent loop later on::

    {
      "provenance": {"model_id": str | null, "hand_authored": bool,
                     "recorded": ISO time | null, "note": str,
                     "prompt_sha256": str (optional)},
      "turns": [
        {"toolUse": {"name": str, "toolUseId": str, "inputChunks": [str, ...],
                     "input": {...}, "usage": {"inputTokens": int, "outputTokens": int,
                                               "totalTokens": int}}},
        {"text": {"chunks": [str, ...], "usage": {...}}}
      ]
    }

Each turn is one assistant message. A tool-use turn holds one `toolUse` block: `inputChunks`
are the tool input exactly as the provider streamed it (split mid-token), and `input` is the
assembled copy for readers; loading checks that the two agree. A text turn holds a `text`
block whose `chunks` are the streamed text; it lets a conversation that answered in prose
replay too. A tool-use turn may also carry a `text` block with `chunks` only (the sentence a
model often writes before calling a tool); it streams first, and the turn's usage stays on
`toolUse`. Turns are numbered from 1 in every message.

`provenance.prompt_sha256` binds the exchange to the prompt it answered: the sha256 of the exact
text of the agent's first user message. A replay refuses to answer any other prompt, so an
exchange recorded for one document cannot silently score another. Cassettes require it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from helpers import strict_json
from helpers.files import DATA_DIR, REPO_ROOT, settle, write_text_atomically

EXCHANGES_DIR = DATA_DIR / "exchanges"
USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens")
PROVENANCE_KEYS = ("model_id", "hand_authored", "recorded", "note")
PROMPT_HASH_KEY = "prompt_sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class FixtureError(ValueError):
    """An exchange fixture is missing or malformed; the message names file, turn, field and fix."""


@dataclass(frozen=True)
class Exchange:
    """A validated exchange: where it came from, its provenance and its turns (fixture dicts).

    Build one with `load_exchange` or `parse_exchange`. Constructing it directly skips every
    check; the offline notebook does that on purpose, to show what Strands does with a
    malformed stream that validation would have refused.
    """

    source: str
    provenance: dict[str, Any]
    turns: list[dict[str, Any]]

    @property
    def hand_authored(self) -> bool:
        return bool(self.provenance.get("hand_authored"))

    @property
    def label(self) -> str:
        """The source as shown to readers: a fixture path relative to the repository."""
        return _display_path(self.source)

    def describe(self) -> str:
        """One line saying where the data came from, for a notebook's first output."""
        name = self.label
        if self.hand_authored:
            return (
                f"{name}: HAND-AUTHORED to the Bedrock converse-stream wire shape; "
                "it demonstrates the mechanism and measures no model."
            )
        return f"{name}: recorded from {self.provenance['model_id']} at {self.provenance['recorded']}."

    @property
    def prompt_sha256(self) -> str | None:
        """The hash of the prompt this exchange answered, when it is bound to one."""
        return self.provenance.get(PROMPT_HASH_KEY)

    def tool_uses(self) -> list[dict[str, Any]]:
        """The `toolUse` block of every tool-use turn, in order."""
        return [turn["toolUse"] for turn in self.turns if "toolUse" in turn]


def load_exchange(
    path: Path | str,
    *,
    tool_name: str | None = None,
    record_command: str = "make record",
    output_model: type[BaseModel] | None = None,
) -> Exchange:
    """Read and fully validate a fixture file.

    Args:
        path: The fixture file.
        tool_name: When given, every tool-use turn must call this tool (the structured-output
            tool is named after the model class the notebook asks for).
        record_command: The command that (re-)records this fixture, quoted in error messages.
        output_model: When given, the last tool-use turn (the structured output the agent ends
            with) must validate against it, so a wrong payload is refused here, not misread later.

    Raises:
        FixtureError: If the file is missing, is not JSON, or breaks the format; the message
            names the file, the turn and the field.
    """
    path = Path(path)
    if not path.is_file():
        raise FixtureError(
            f"{path}: no exchange fixture here; record it with `{record_command}` "
            "(replay mode never falls back to the network)"
        )
    try:
        settle(path.parent)  # an interrupted switch of the folder is finished or undone before reading
        data = strict_json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise FixtureError(
            f"{path}: not UTF-8 text (byte {exc.start}); restore it from version control or "
            f"re-record it with `{record_command}`"
        ) from exc
    except json.JSONDecodeError as exc:
        raise FixtureError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}; "
            f"restore it from version control or re-record it with `{record_command}`"
        ) from exc
    except RecursionError as exc:
        raise FixtureError(
            f"{path}: nested too deeply to read; restore it from version control or re-record it "
            f"with `{record_command}`"
        ) from exc
    return parse_exchange(
        data, source=str(path), tool_name=tool_name, record_command=record_command, output_model=output_model
    )


def parse_exchange(
    data: Any,
    *,
    source: str,
    tool_name: str | None = None,
    record_command: str = "make record",
    output_model: type[BaseModel] | None = None,
) -> Exchange:
    """Validate fixture data already in memory; `source` names it in error messages."""
    checker = _Checker(source, record_command)
    if not isinstance(data, dict):
        checker.fail("the fixture must be a JSON object with 'provenance' and 'turns'")
    checker.provenance(data.get("provenance"))
    turns = data.get("turns")
    if not isinstance(turns, list) or not turns:
        checker.fail("field 'turns' is missing or empty; it must list at least one turn")
    for number, turn in enumerate(turns, start=1):
        try:
            checker.turn(number, turn, tool_name)
        except RecursionError:
            checker.fail("holds data nested too deeply to check", number)
    if output_model is not None:
        checker.final_output(turns, output_model)
    return Exchange(source=source, provenance=dict(data["provenance"]), turns=list(turns))


def prompt_sha256(prompt: str) -> str:
    """The sha256 (hex) of the exact prompt text, as stored in `provenance.prompt_sha256`."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def reassemble(chunks: list[str]) -> Any:
    """Join streamed tool-input chunks and parse them, as Strands does at `contentBlockStop`."""
    return strict_json.loads("".join(chunks))


def save_exchange(data: dict[str, Any], path: Path | str) -> Path:
    """Validate `data`, then write it atomically: a temp file beside `path`, then `os.replace`.

    A crash or a refused fixture leaves whatever was at `path` exactly as it was.
    """
    path = Path(path)
    parse_exchange(data, source=str(path))
    return write_text_atomically(path, exchange_text(data))


def exchange_text(data: dict[str, Any]) -> str:
    """The text of an exchange file, as `save_exchange` writes it; `data` is not checked."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


class _Checker:
    """Raises `FixtureError`s that all name the same source and the same fix."""

    def __init__(self, source: str, record_command: str):
        self.source = source
        self.record_command = record_command

    def fail(self, what: str, turn: int | None = None) -> NoReturn:
        where = f"{self.source}: turn {turn}, " if turn is not None else f"{self.source}: "
        raise FixtureError(f"{where}{what} (fix the file or re-record it with `{self.record_command}`)")

    def provenance(self, provenance: Any) -> None:
        if not isinstance(provenance, dict):
            self.fail(f"field 'provenance' is missing; it must be an object with {', '.join(PROVENANCE_KEYS)}")
        for key in PROVENANCE_KEYS:
            if key not in provenance:
                self.fail(f"field 'provenance.{key}' is missing")
        if not isinstance(provenance["hand_authored"], bool):
            self.fail("field 'provenance.hand_authored' must be true or false")
        if not isinstance(provenance["note"], str) or not provenance["note"].strip():
            self.fail("field 'provenance.note' must say where the exchange came from")
        if PROMPT_HASH_KEY in provenance and not (
            isinstance(provenance[PROMPT_HASH_KEY], str) and _SHA256.fullmatch(provenance[PROMPT_HASH_KEY])
        ):
            self.fail(f"field 'provenance.{PROMPT_HASH_KEY}' must be 64 lowercase hex digits, the sha256 of the prompt")
        if not provenance["hand_authored"]:
            for key in ("model_id", "recorded"):
                if not isinstance(provenance[key], str) or not provenance[key]:
                    self.fail(f"field 'provenance.{key}' must be set on a recorded exchange")

    def turn(self, number: int, turn: Any, tool_name: str | None) -> None:
        if not isinstance(turn, dict) or not turn or set(turn) - {"toolUse", "text"}:
            self.fail("must be an object with a 'toolUse' block, a 'text' block, or both", number)
        if "toolUse" in turn:
            self.tool_use(number, turn["toolUse"], tool_name)
        if "text" in turn:
            self.text(number, turn["text"], usage_here="toolUse" not in turn)

    def tool_use(self, number: int, block: Any, tool_name: str | None) -> None:
        if not isinstance(block, dict):
            self.fail("field 'toolUse' must be an object", number)
        for key in ("name", "toolUseId"):
            if not isinstance(block.get(key), str) or not block[key]:
                self.fail(
                    f"field 'toolUse.{key}' is missing; contentBlockStart needs the toolUse name and id",
                    number,
                )
        if tool_name is not None and block["name"] != tool_name:
            self.fail(
                f"field 'toolUse.name' is {block['name']!r}, not the model the notebook asks for ({tool_name!r})",
                number,
            )
        chunks = block.get("inputChunks")
        self.chunks("toolUse.inputChunks", chunks, number)
        try:
            assembled = reassemble(chunks)
        except json.JSONDecodeError as exc:
            self.fail(
                f"field 'toolUse.inputChunks' does not reassemble into JSON ({exc.msg}: character "
                f"{exc.pos} of the joined input)",
                number,
            )
        if not isinstance(assembled, dict):
            self.fail("field 'toolUse.inputChunks' reassembles into JSON that is not an object", number)
        if "input" not in block:
            self.fail("field 'toolUse.input' is missing; it is the assembled copy for readers", number)
        if block["input"] != assembled:
            self.fail(
                f"field 'toolUse.input' disagrees with the reassembled inputChunks "
                f"(first difference at {_first_difference(block['input'], assembled)})",
                number,
            )
        self.usage("toolUse.usage", block.get("usage"), number)

    def final_output(self, turns: list[dict[str, Any]], output_model: type[BaseModel]) -> None:
        numbered = [(number, turn["toolUse"]) for number, turn in enumerate(turns, start=1) if "toolUse" in turn]
        if not numbered:
            return
        number, block = numbered[-1]
        try:
            output_model.model_validate(block["input"])
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"]) or "(the whole input)"
            self.fail(
                f"field 'toolUse.input.{where}' does not validate as {output_model.__name__}: {error['msg']}",
                number,
            )

    def text(self, number: int, block: Any, *, usage_here: bool) -> None:
        if not isinstance(block, dict):
            self.fail("field 'text' must be an object with 'chunks'", number)
        self.chunks("text.chunks", block.get("chunks"), number)
        if usage_here:
            self.usage("text.usage", block.get("usage"), number)

    def chunks(self, field: str, chunks: Any, number: int) -> None:
        if not isinstance(chunks, list) or not chunks or not all(isinstance(c, str) for c in chunks):
            self.fail(f"field '{field}' must be a non-empty list of strings, as streamed", number)

    def usage(self, field: str, usage: Any, number: int) -> None:
        if not isinstance(usage, dict):
            self.fail(f"field '{field}' is missing; it must hold {', '.join(USAGE_KEYS)}", number)
        for key in USAGE_KEYS:
            value = usage.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                self.fail(f"field '{field}.{key}' must be a non-negative integer", number)


def _display_path(source: str) -> str:
    """An absolute fixture path made relative to the repository, so no machine's layout leaks
    into notebook outputs; any other source (a label such as "truncated copy") is kept as is."""
    path = Path(source)
    if path.is_absolute() and path.is_relative_to(REPO_ROOT):
        return path.relative_to(REPO_ROOT).as_posix()
    return source


def _first_difference(left: Any, right: Any, path: str = "input") -> str:
    """The first path where two JSON values differ, for a readable error message."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right)):
            if key not in left or key not in right or left[key] != right[key]:
                if key in left and key in right:
                    return _first_difference(left[key], right[key], f"{path}.{key}")
                return f"{path}.{key}"
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{index}]")
    return f"{path}: {left!r} vs {right!r} in the chunks"
