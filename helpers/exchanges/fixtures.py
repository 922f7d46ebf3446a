"""The exchange file format: one JSON file per recorded (or hand-authored) conversation.

A file is checked in full before any agent runs, so a broken file fails with an error that
names the file, the call or turn, and the field, instead of as a confusing agent loop later on.
Two shapes load; `record` writes the second.

**Format 2** (`"format": 2`) holds every model call whole::

    {
      "format": 2,
      "provenance": {"provider": str, "model_id": str | null, "endpoint": "host[:port]" | null,
                     "stand_in": str (optional), "hand_authored": bool, "recorded": ISO time | null,
                     "note": str, "prompt_sha256": str (optional)},
      "match_on": ["system", "tools", "tool_choice", "output_schema", "messages"],
      "structured_output_by_provider": bool,
      "calls": [{"request": {...}, "events": [StreamEvent, ...], "response": {...}}]
    }

Each call is what the agent sent (`request`), the exact Strands `StreamEvent`s that came back
(`events`, replayed event for event) and the message Strands assembles from them (`response`,
the readable copy; loading checks it against the events). See `helpers.exchanges.calls` for
the canonical request, the volatile fields and `match_on`. `structured_output_by_provider` is
whether the recorded provider enforces structured output itself (Strands then hands it the
output model and every tool on the structured-output retry); the replay claims the same, so the
agent sends the same requests. `endpoint` is set when the provider was reached somewhere other
than its own service (a local server, an endpoint override); `stand_in` when the answers came
from a stand-in server that says so in its stream (`helpers.commands.stand_in`), not from a model.

**Format 1** (no `"format"`; every file written before format 2) holds one assistant message
per turn, with no request::

    {"provenance": {"model_id", "hand_authored", "recorded", "note", "prompt_sha256"},
     "turns": [{"toolUse": {"name", "toolUseId", "inputChunks": [str, ...], "input", "usage"}},
               {"text": {"chunks": [str, ...], "usage": {...}}}]}

A turn is read as one call whose events are what Bedrock's converse-stream sends for it
(`turn_events`) and whose request is unknown, so it is matched on
`provenance.prompt_sha256` (the sha256 of the first user message's text) alone. `inputChunks`
are the tool input exactly as streamed; `input` is the assembled copy, checked against them.
A tool-use turn may also carry a `text` block with `chunks` only (the sentence a model often
writes before calling a tool); it streams first.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from pydantic import BaseModel, ValidationError

from helpers.exchanges.calls import (
    DEFAULT_MATCH_ON,
    MATCH_PARTS,
    REQUEST_KEYS,
    STREAM_EVENT_KEYS,
    assemble,
    first_difference,
    from_json,
)
from helpers.files import DATA_DIR, REPO_ROOT, write_text_atomically
from helpers.formats import json as strict_json
from helpers.formats.errors import FormatError, validation_problem

EXCHANGES_DIR = DATA_DIR / "exchanges"
FORMAT = 2
USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens")
PROVENANCE_KEYS = ("model_id", "hand_authored", "recorded", "note")
PROMPT_HASH_KEY = "prompt_sha256"
_SHA256 = re.compile(r"[0-9a-f]{64}")


class FixtureError(FormatError):
    """An exchange fixture is missing or malformed; the message names file, turn, field and fix."""


@dataclass(frozen=True)
class Call:
    """One recorded model call: the request (None in a format-1 file), the events, the assembled response."""

    request: dict[str, Any] | None
    events: list[dict[str, Any]]
    response: dict[str, Any] | None = None


@dataclass(frozen=True)
class Exchange:
    """A validated exchange: where it came from, its provenance, and its calls.

    Build one with `load_exchange` or `parse_exchange`. Constructing it directly skips every
    check; the offline notebook does that on purpose (with format-1 `turns`), to show what
    Strands does with a malformed stream that validation would have refused.
    """

    source: str
    provenance: dict[str, Any]
    turns: list[dict[str, Any]] = field(default_factory=list)
    recorded_calls: list[Call] | None = None
    match_on: tuple[str, ...] = DEFAULT_MATCH_ON
    structured_output_by_provider: bool = False

    @property
    def format(self) -> int:
        return 1 if self.recorded_calls is None else FORMAT

    @property
    def calls(self) -> list[Call]:
        """Every model call; a format-1 turn becomes the events Bedrock would send for it, with no request."""
        if self.recorded_calls is not None:
            return self.recorded_calls
        return [Call(None, list(turn_events(turn))) for turn in self.turns]

    @property
    def hand_authored(self) -> bool:
        return bool(self.provenance.get("hand_authored"))

    @property
    def stand_in(self) -> str | None:
        """What the stand-in server said it answered from, when a stand-in (not a model) answered."""
        return self.provenance.get("stand_in")

    @property
    def endpoint(self) -> str | None:
        """The host the provider was reached at, when it was not the provider's own service."""
        return self.provenance.get("endpoint")

    @property
    def label(self) -> str:
        """The source as shown to readers: a fixture path relative to the repository."""
        return _display_path(self.source)

    def describe(self) -> str:
        """One line saying where the data came from, for a notebook's first output."""
        name = self.label
        if self.hand_authored:
            shape = "the Bedrock converse-stream wire shape" if self.format == 1 else "Strands stream events"
            served = f", served by the local stand-in at {self.endpoint}" if self.stand_in and self.endpoint else ""
            return f"{name}: HAND-AUTHORED to {shape}{served}; it demonstrates the mechanism and measures no model."
        if self.stand_in:
            return (
                f"{name}: recorded from a stand-in server at {self.endpoint} ({self.stand_in}), "
                "not from a model; it measures no model."
            )
        where = f" through {self.endpoint} (a local or overridden endpoint)" if self.endpoint else ""
        return f"{name}: recorded from {self.provenance['model_id']}{where} at {self.provenance['recorded']}."

    @property
    def prompt_sha256(self) -> str | None:
        """The hash of the prompt this exchange answered, when it is bound to one."""
        return self.provenance.get(PROMPT_HASH_KEY)

    def tool_uses(self) -> list[dict[str, Any]]:
        """Every `toolUse` block, in order: format-1 turn blocks, or the blocks of each assembled response."""
        if self.recorded_calls is None:
            return [turn["toolUse"] for turn in self.turns if "toolUse" in turn]
        return [
            block["toolUse"]
            for call in self.recorded_calls
            for block in (call.response or {}).get("message", {}).get("content", [])
            if "toolUse" in block
        ]

    def final_output(self, tool_name: str) -> Any:
        """The structured output the exchange ends with: the last `tool_name` call's input, else JSON text."""
        return _final_output(self, tool_name)[1]


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
        tool_name: The structured-output tool (named after the model class the notebook asks
            for). When given, a format-1 file's every tool-use turn must call it, and a format-2
            file must end in its structured output (a call of it, or a JSON object as text).
        record_command: The command that (re-)records this fixture, quoted in error messages.
        output_model: When given, the structured output the exchange ends with (format 1: the
            last tool-use turn) must validate against it, so a wrong payload is refused here, not
            misread later.

    Raises:
        FixtureError: If the file is missing, is not JSON, or breaks the format; the message
            names the file, the turn and the field.
    """
    path = Path(path)
    fix = f"restore it from version control or re-record it with `{record_command}`"
    missing = (
        f"no exchange fixture here; record it with `{record_command}`",
        "replay mode never falls back to the network",
    )
    data = strict_json.read_document(path, missing, fix, error=FixtureError)
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
        checker.fail("the fixture must be a JSON object with 'provenance' and 'calls' (or 'turns')")
    checker.provenance(data.get("provenance"))
    if "format" in data:
        return _parse_calls(data, checker, tool_name, output_model)
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


def _parse_calls(
    data: dict[str, Any], checker: _Checker, tool_name: str | None, output_model: type[BaseModel] | None
) -> Exchange:
    """Validate a format-2 file: its version, `match_on`, and every call's request, events and response."""
    if data["format"] != FORMAT:
        checker.fail(f"field 'format' is {data['format']!r}; this version reads format {FORMAT} (or no 'format')")
    match_on = data.get("match_on", list(DEFAULT_MATCH_ON))
    if not isinstance(match_on, list) or not match_on or not set(match_on) <= set(MATCH_PARTS):
        checker.fail(f"field 'match_on' must be a non-empty list of {', '.join(MATCH_PARTS)}")
    by_provider = data.get("structured_output_by_provider", False)
    if not isinstance(by_provider, bool):
        checker.fail("field 'structured_output_by_provider' must be true or false")
    calls = data.get("calls")
    if not isinstance(calls, list) or not calls:
        checker.fail("field 'calls' is missing or empty; it must list at least one model call")
    parsed = []
    for number, call in enumerate(calls, start=1):
        try:
            parsed.append(checker.call(number, call))
        except RecursionError:
            checker.fail("holds data nested too deeply to check", number)
    exchange = Exchange(
        source=checker.source,
        provenance=dict(data["provenance"]),
        recorded_calls=parsed,
        match_on=tuple(match_on),
        structured_output_by_provider=by_provider,
    )
    if tool_name is not None:
        last, output = _final_output(exchange, tool_name)
        if last is None:
            checker.fail(
                f"no call ends in the structured output: neither a `{tool_name}` tool use nor a JSON object as text"
            )
        if output_model is not None:
            checker.validates(output, output_model, last, "response")
    return exchange


def _final_output(exchange: Exchange, tool_name: str) -> tuple[int | None, Any]:
    """(call or turn number, output): the last `tool_name` tool use, else a last answer that is a JSON object."""
    if exchange.recorded_calls is None:
        numbered = [(n, t["toolUse"]) for n, t in enumerate(exchange.turns, start=1) if "toolUse" in t]
        return (numbered[-1][0], numbered[-1][1].get("input")) if numbered else (None, None)
    for number in range(len(exchange.recorded_calls), 0, -1):
        message = (exchange.recorded_calls[number - 1].response or {}).get("message", {})
        for block in reversed(message.get("content", [])):
            if block.get("toolUse", {}).get("name") == tool_name:
                return number, block["toolUse"].get("input")
    last = exchange.recorded_calls[-1].response or {}
    text = "".join(block.get("text", "") for block in last.get("message", {}).get("content", []))
    try:
        answer = json.loads(text)
    except ValueError:
        return None, None
    return (len(exchange.recorded_calls), answer) if isinstance(answer, dict) else (None, None)


def turn_events(turn: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The converse-stream events for one format-1 turn, in the order Bedrock sends them.

    A text block gets no `contentBlockStart` (Bedrock sends none for text). A tool-use block
    whose name or id is missing gets a `contentBlockStart` with an empty `start`, which is
    what a malformed stream looks like to Strands.
    """
    yield {"messageStart": {"role": "assistant"}}
    index = 0
    if "text" in turn:
        for chunk in turn["text"]["chunks"]:
            yield {"contentBlockDelta": {"delta": {"text": chunk}, "contentBlockIndex": index}}
        yield {"contentBlockStop": {"contentBlockIndex": index}}
        index += 1
    if "toolUse" in turn:
        block = turn["toolUse"]
        start: dict[str, Any] = {}
        if block.get("name") and block.get("toolUseId"):
            start = {"toolUse": {"toolUseId": block["toolUseId"], "name": block["name"]}}
        yield {"contentBlockStart": {"start": start, "contentBlockIndex": index}}
        for chunk in block["inputChunks"]:
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": chunk}}, "contentBlockIndex": index}}
        yield {"contentBlockStop": {"contentBlockIndex": index}}
    stop_reason = "tool_use" if "toolUse" in turn else "end_turn"
    yield {"messageStop": {"stopReason": stop_reason}}
    usage = (turn.get("toolUse") or turn["text"]).get("usage")
    if usage is not None:
        yield {"metadata": {"usage": dict(usage)}}


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

    def fail(self, what: str, turn: int | None = None, unit: str = "turn") -> NoReturn:
        where = f"{self.source}: {unit} {turn}, " if turn is not None else f"{self.source}: "
        raise FixtureError(f"{where}{what} (fix the file or re-record it with `{self.record_command}`)")

    def call(self, number: int, call: Any) -> Call:
        """One format-2 call, checked: a request with every part, known events, a response equal to their assembly."""
        if not isinstance(call, dict) or set(call) != {"request", "events", "response"}:
            self.fail("must be an object with exactly 'request', 'events' and 'response'", number, "call")
        request = call["request"]
        if not isinstance(request, dict) or set(request) != set(REQUEST_KEYS):
            self.fail(f"field 'request' must hold exactly {', '.join(REQUEST_KEYS)}", number, "call")
        for key in ("system", "messages", "tools"):
            if not isinstance(request[key], list):
                self.fail(f"field 'request.{key}' must be a list", number, "call")
        events = call["events"]
        if not isinstance(events, list) or not events:
            self.fail("field 'events' must be a non-empty list of Strands stream events", number, "call")
        for index, event in enumerate(events):
            if not isinstance(event, dict) or len(event) != 1 or next(iter(event)) not in STREAM_EVENT_KEYS:
                self.fail(
                    f"field 'events[{index}]' must be an object with one stream event key "
                    f"({', '.join(sorted(STREAM_EVENT_KEYS))})",
                    number,
                    "call",
                )
        try:
            assembled = assemble(from_json(events))
        except Exception as exc:  # a delta without its start, tool input that is not JSON: Strands' own handlers raise
            self.fail(f"field 'events' does not assemble into a message ({type(exc).__name__}: {exc})", number, "call")
        if call["response"] != assembled:
            where = first_difference(call["response"], assembled, "response")
            self.fail(
                f"field 'response' disagrees with the assembled events (first difference at {where})", number, "call"
            )
        return Call(request, events, call["response"])

    def validates(self, output: Any, output_model: type[BaseModel], number: int, field: str) -> None:
        try:
            output_model.model_validate(output)
        except ValidationError as exc:
            where, what = validation_problem(exc, empty="(the whole output)")
            self.fail(
                f"field '{field}' holds a structured output whose {where} does not validate as "
                f"{output_model.__name__}: {what}",
                number,
                "call",
            )

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
        for key in ("provider", "endpoint", "stand_in"):
            if provenance.get(key) is not None and not isinstance(provenance[key], str):
                self.fail(f"field 'provenance.{key}' must be text or null")
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
        chunks = self.chunks("toolUse.inputChunks", block.get("inputChunks"), number)
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
            where, what = validation_problem(exc, ("toolUse", "input"))
            self.fail(f"field '{where}' does not validate as {output_model.__name__}: {what}", number)

    def text(self, number: int, block: Any, *, usage_here: bool) -> None:
        if not isinstance(block, dict):
            self.fail("field 'text' must be an object with 'chunks'", number)
        self.chunks("text.chunks", block.get("chunks"), number)
        if usage_here:
            self.usage("text.usage", block.get("usage"), number)

    def chunks(self, field: str, chunks: Any, number: int) -> list[str]:
        if not isinstance(chunks, list) or not chunks or not all(isinstance(c, str) for c in chunks):
            self.fail(f"field '{field}' must be a non-empty list of strings, as streamed", number)
        return chunks

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
