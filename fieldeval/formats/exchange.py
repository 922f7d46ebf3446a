"""The exchange file: one JSON file per recorded (or hand-authored) model conversation.

This module knows the file's JSON shapes and nothing of Strands; `fieldeval.exchanges` builds on
it (`fixtures.load_exchange` adds the checks that need Strands: that the events assemble into the
stored response, and that the exchange ends in the structured output asked for). Two shapes load;
`record` writes the second.

**Format 2** (`"format": 2`, `CallsFile`) holds every model call whole::

    {
      "format": 2,
      "provenance": {"provider": str, "model_id": str | null, "endpoint": "host[:port]" | null,
                     "stand_in": str (optional), "hand_authored": bool, "recorded": ISO time | null,
                     "note": str, "prompt_sha256": str (optional),
                     "settings": {...} (optional), "record_options": {"model": str | null, "max_calls": int}
                     (optional)},
      "match_on": ["system", "tools", "tool_choice", "output_schema", "messages"],
      "structured_output_by_provider": bool,
      "calls": [{"request": {...}, "events": [StreamEvent, ...], "response": {...}}]
    }

Each call is what the agent sent (`request`), the exact Strands `StreamEvent`s that came back
(`events`, replayed event for event) and the message Strands assembles from them (`response`,
the readable copy). See `fieldeval.exchanges.calls` for the canonical request, the volatile fields
and `match_on`. `structured_output_by_provider` is whether the recorded provider enforces
structured output itself (Strands then hands it the output model and every tool on the
structured-output retry); the replay claims the same, so the agent sends the same requests.
`endpoint` is set when the provider was reached somewhere other than its own service (a local
server, an endpoint override); `stand_in` when the answers came from a stand-in server that says
so in its stream (`fieldeval.commands.stand_in`), not from a model. `settings` are the parameters
the provider was configured with, secrets and addresses left out
(`fieldeval.exchanges.provenance.model_settings`), which a replay given the model compares;
`record_options` are the options of `record` that a re-recording must repeat (the `--model`
factory and `--max-calls`; `match_on` is the cassette's own).

**Format 1** (no `"format"`, `TurnsFile`; every file written before format 2) holds one
assistant message per turn, with no request::

    {"provenance": {"model_id", "hand_authored", "recorded", "note", "prompt_sha256"},
     "turns": [{"toolUse": {"name", "toolUseId", "inputChunks": [str, ...], "input", "usage"}},
               {"text": {"chunks": [str, ...], "usage": {...}}}]}

`inputChunks` are the tool input exactly as streamed (split mid-token); `input` is the assembled
copy for readers, checked against them. A tool-use turn may also carry a `text` block with
`chunks` only (the sentence a model often writes before calling a tool); it streams first.

`check` reads either shape and refuses a broken file with a `FixtureError` naming the file, the
turn or call, the field and the fix; `MUSTS` is what each field must be, in the refusal's words.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PlainValidator,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from fieldeval.formats import json as strict_json
from fieldeval.formats.errors import SHOWN, FormatError, field_path, file_error, first_error, problem, refused, shown

FORMAT = 2
PROMPT_HASH_KEY = "prompt_sha256"
MatchPart = Literal["system", "tools", "tool_choice", "output_schema", "messages", "user_text"]
StreamEventKey = Literal[
    "messageStart",
    "contentBlockStart",
    "contentBlockDelta",
    "contentBlockStop",
    "messageStop",
    "metadata",
    "redactContent",
    "internalServerException",
    "modelStreamErrorException",
    "serviceUnavailableException",
    "throttlingException",
    "validationException",
]
# The parts of a request a replay can be asked to match, in the order differences are reported.
MATCH_PARTS: tuple[str, ...] = get_args(MatchPart)
DEFAULT_MATCH_ON: tuple[MatchPart, ...] = ("system", "tools", "tool_choice", "output_schema", "messages")
STREAM_EVENT_KEYS = frozenset(get_args(StreamEventKey))
USAGE_KEYS = ("inputTokens", "outputTokens", "totalTokens")

_EVENT_KEYS = ", ".join(sorted(STREAM_EVENT_KEYS))
_RECORDED = "must be set on a recorded exchange (one whose hand_authored is false)"
# What each field must be, keyed by the end of its path (see `errors.validation_problem`).
MUSTS = {
    "provenance": "must be an object with hand_authored, model_id, recorded and note",
    "hand_authored": "must be true or false",
    "model_id": "must be the model's id (null only on a hand-authored exchange)",
    "recorded": "must be the ISO time of the recording (null only on a hand-authored exchange)",
    "note": "must say where the exchange came from",
    "provider": "must be text or null",
    "endpoint": "must be text or null",
    "stand_in": "must be text or null",
    "settings": "must be an object of the model's settings, or null",
    "record_options": "must be an object with model (module:function or null) and max_calls (a count from 1)",
    "max_calls": "must be a whole number from 1",
    "model": "must be the --model factory as module:function, or null",
    PROMPT_HASH_KEY: "must be 64 lowercase hex digits, the sha256 of the prompt",
    "turns": "must list at least one turn",
    "turns[]": "must be an object with a 'toolUse' block, a 'text' block, or both",
    "toolUse": "must be an object with name, toolUseId, inputChunks, input and usage",
    "name": "must be the tool's name: contentBlockStart needs the toolUse name and id",
    "toolUseId": "must be the tool use's id: contentBlockStart needs the toolUse name and id",
    "inputChunks": "must be a non-empty list of strings, as streamed",
    "input": "must be the assembled copy of inputChunks, for readers",
    "text": "must be an object with 'chunks'",
    "chunks": "must be a non-empty list of strings, as streamed",
    "usage": f"must be an object with {', '.join(USAGE_KEYS)}",
    **{key: "must be a non-negative integer" for key in USAGE_KEYS},
    "format": f"must be {FORMAT}, the format this version reads (or be left out, for format 1)",
    "match_on": f"must be a non-empty list of {', '.join(MATCH_PARTS)}",
    "match_on[]": f"must be one of {', '.join(MATCH_PARTS)}",
    "structured_output_by_provider": "must be true or false",
    "calls": "must list at least one model call",
    "calls[]": "must be an object with exactly 'request', 'events' and 'response'",
    "request": "must be an object with exactly system, messages, tools, tool_choice and output_schema",
    "system": "must be a list of the system prompt's blocks",
    "messages": "must be a list of the messages the agent sent",
    "tools": "must be a list of the tool specs the agent offered",
    "tool_choice": "must be the tool choice the agent sent, or null",
    "output_schema": "must be the output model's JSON schema, or null",
    "events": "must be a non-empty list of Strands stream events",
    "events[]": f"must be an object with one stream event key ({_EVENT_KEYS})",
    "response": "must be the message, stop reason and usage the events assemble into",
}


class FixtureError(FormatError):
    """An exchange fixture is missing or malformed; the message names file, turn, field and fix."""


class _Shape(BaseModel):
    """A JSON object of the file: exact types (no `"3"` for 3), no field the format does not name."""

    model_config = ConfigDict(strict=True, extra="forbid", protected_namespaces=())


NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Chunks = Annotated[list[str], Field(min_length=1)]


class RecordOptions(_Shape):
    """The options of `record` a re-recording of the cassette must be given again."""

    model: NonEmpty | None = None
    max_calls: Annotated[int, Field(ge=1)] | None = None


class Provenance(_Shape):
    """Where the exchange came from; more keys (a document id) may follow."""

    model_config = ConfigDict(extra="allow")

    hand_authored: bool
    model_id: str | None
    recorded: str | None
    note: Annotated[str, StringConstraints(pattern=r"\S")]
    provider: str | None = None
    endpoint: str | None = None
    stand_in: str | None = None
    prompt_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")] | None = None
    settings: dict[str, Any] | None = None
    record_options: RecordOptions | None = None

    @model_validator(mode="after")
    def _recorded_names_its_model(self) -> Provenance:
        for key in ("model_id", "recorded"):
            if not self.hand_authored and not getattr(self, key):
                raise refused((key,), _RECORDED, getattr(self, key))
        return self


class Usage(_Shape):
    """A call's token counts; a provider may add more (cache reads)."""

    model_config = ConfigDict(extra="allow")

    inputTokens: NonNegativeInt
    outputTokens: NonNegativeInt
    totalTokens: NonNegativeInt


class Text(_Shape):
    """A text block as streamed; it holds the usage only in a turn with no tool use."""

    chunks: Chunks
    usage: Usage | None = None


class ToolUse(_Shape):
    """A tool-use block: the input as streamed (`inputChunks`) and its assembled copy (`input`)."""

    name: NonEmpty
    toolUseId: NonEmpty
    inputChunks: Chunks
    input: Any
    usage: Usage

    @model_validator(mode="after")
    def _input_is_the_chunks(self) -> ToolUse:
        try:
            assembled = reassemble(self.inputChunks)
        except json.JSONDecodeError as exc:
            raise refused(
                ("inputChunks",),
                f"does not reassemble into JSON ({exc.msg}: character {exc.pos} of the joined input)",
            ) from None
        if not isinstance(assembled, dict):
            raise refused(("inputChunks",), "reassembles into JSON that is not an object")
        if self.input != assembled:
            where = first_difference(assembled, self.input, "input", "reassembled", "input")
            raise refused(("input",), f"disagrees with the reassembled inputChunks (first difference at {where})")
        return self


class Turn(_Shape):
    """One assistant message of a format-1 file."""

    toolUse: ToolUse | None = None
    text: Text | None = None

    @field_validator("toolUse", "text", mode="before")
    @classmethod
    def _not_null(cls, block: Any) -> Any:
        if block is None:
            raise ValueError("is null; leave the block out, or give it as an object")
        return block

    @model_validator(mode="after")
    def _a_block_and_its_usage(self) -> Turn:
        if self.toolUse is None and self.text is None:
            raise ValueError(MUSTS["turns[]"])
        if self.toolUse is None and self.text is not None and self.text.usage is None:
            raise refused(
                ("text", "usage"), f"is missing; a turn with no toolUse holds the usage ({', '.join(USAGE_KEYS)})"
            )
        return self


class TurnsFile(_Shape):
    """Format 1."""

    provenance: Provenance
    turns: Annotated[list[Turn], Field(min_length=1)]


def _stream_event(event: Any) -> dict[str, Any]:
    if not isinstance(event, dict) or len(event) != 1 or next(iter(event)) not in STREAM_EVENT_KEYS:
        raise ValueError(f"is {shown(event)}; it {MUSTS['events[]']}")
    return event


StreamEvent = Annotated[dict[str, Any], PlainValidator(_stream_event)]


class Request(_Shape):
    """What the agent sent, in `calls.canonical_request`'s form."""

    system: list[Any]
    messages: list[Any]
    tools: list[Any]
    tool_choice: Any
    output_schema: Any


class CallRecord(_Shape):
    """One model call of a format-2 file."""

    request: Request
    events: Annotated[list[StreamEvent], Field(min_length=1)]
    response: dict[str, Any]


class CallsFile(_Shape):
    """Format 2."""

    format: Literal[2]
    provenance: Provenance
    match_on: Annotated[list[MatchPart], Field(min_length=1)] = list(DEFAULT_MATCH_ON)
    structured_output_by_provider: bool = False
    calls: Annotated[list[CallRecord], Field(min_length=1)]


def check(data: Any, source: str, fix: str) -> TurnsFile | CallsFile:
    """`data` (a file's JSON) read as its format: format 2 when it says `"format"`, else format 1.

    Raises:
        FixtureError: Naming `source`, the turn or call, the field and `fix`.
    """
    if not isinstance(data, dict):
        raise FixtureError(
            file_error(
                source, f"is a JSON {type(data).__name__}, not an object with provenance and turns or calls", fix
            )
        )
    model: type[TurnsFile | CallsFile] = CallsFile if "format" in data else TurnsFile
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = first_error(exc)
        loc = error["loc"]
        record = None
        if len(loc) > 1 and loc[0] in ("turns", "calls") and isinstance(loc[1], int):
            record, loc = f"{str(loc[0])[:-1]} {loc[1] + 1}", loc[2:]
        field = field_path(loc, "") or None
        raise FixtureError(file_error(source, problem(error, MUSTS), fix, record=record, field=field)) from None


def reassemble(chunks: list[str]) -> Any:
    """Join streamed tool-input chunks and parse them, as Strands does at `contentBlockStop`."""
    return strict_json.loads("".join(chunks))


def first_difference(old: Any, new: Any, path: str, was: str = "recorded", now: str = "sent") -> str:
    """The first path at which two JSON values differ, with both values (named `was` and `now`) cut short."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [key for key in new if key not in old]:
            if key not in new:
                return f"{path}.{key}: {was} {shown(old[key])}, {now} nothing"
            if key not in old:
                return f"{path}.{key}: {was} nothing, {now} {shown(new[key])}"
            if old[key] != new[key]:
                return first_difference(old[key], new[key], f"{path}.{key}", was, now)
    if isinstance(old, list) and isinstance(new, list):
        for index, (before, after) in enumerate(zip(old, new, strict=False)):
            if before != after:
                return first_difference(before, after, f"{path}[{index}]", was, now)
        if len(old) != len(new):
            return f"{path}: {was} {len(old)} items, {now} {len(new)}"
    if isinstance(old, str) and isinstance(new, str):
        at = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
        return f"{path} at character {at}: {was} {_window(old, at)}, {now} {_window(new, at)}"
    return f"{path}: {was} {shown(old)}, {now} {shown(new)}"


def _window(text: str, at: int) -> str:
    """The part of `text` around character `at`, quoted, with `...` where it was cut."""
    start = max(0, at - SHOWN // 3)
    part = text[start : start + SHOWN]
    tail = "..." if start + SHOWN < len(text) else ""
    return ("..." if start else "") + json.dumps(part, ensure_ascii=False) + tail
