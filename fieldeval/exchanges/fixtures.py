"""Exchange files as the replay uses them: read, checked in full, and saved.

The file format (format 1, one assistant message per turn; format 2, every model call whole) is
`fieldeval.formats.exchange`, which knows the JSON shapes. This module adds what needs Strands:
each format-2 call's events must assemble (through Strands' own stream handlers) into the stored
`response`, and, when the caller names the structured-output tool and model, the exchange must
end in that output and the output must validate. A file is checked in full before any agent
runs, so a broken file fails with an error that names the file, the call or turn, and the field,
instead of as a confusing agent loop later on.

A format-1 turn is read as one call whose events are what Bedrock's converse-stream sends for it
(`turn_events`) and whose request is unknown, so it is matched on `provenance.prompt_sha256`
(the sha256 of the first user message's text) alone.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from fieldeval.exchanges.calls import assemble
from fieldeval.files import DATA_DIR, REPO_ROOT, write_text_atomically
from fieldeval.formats import exchange as exchange_format
from fieldeval.formats import json as strict_json
from fieldeval.formats import limits
from fieldeval.formats.errors import file_error, validation_problem
from fieldeval.formats.exchange import DEFAULT_MATCH_ON, FORMAT, PROMPT_HASH_KEY, FixtureError, first_difference

EXCHANGES_DIR = DATA_DIR / "exchanges"


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
        final = _final_output(self, tool_name)
        return final[2] if final is not None else None


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
        FixtureError: If the file is missing, is larger than `limits.EXCHANGE` (refused before it
            is read), is not JSON, or breaks the format; the message names the file, the turn and the field.
    """
    path = Path(path)
    fix = f"restore it from version control or re-record it with `{record_command}`"
    missing = (
        f"no exchange fixture here; record it with `{record_command}`",
        "replay mode never falls back to the network",
    )
    cap = limits.EXCHANGE.fixed(f"re-record it with `{record_command}`; {limits.EXCHANGE.fix}")
    data = strict_json.read_document(path, missing, fix, error=FixtureError, cap=cap)
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
    fix = f"fix the file or re-record it with `{record_command}`"
    try:
        shape = exchange_format.check(data, source, fix)
        if isinstance(shape, exchange_format.TurnsFile):
            exchange = Exchange(source=source, provenance=dict(data["provenance"]), turns=list(data["turns"]))
        else:
            exchange = Exchange(
                source=source,
                provenance=dict(data["provenance"]),
                recorded_calls=[
                    _assembled(source, number, call, fix) for number, call in enumerate(data["calls"], start=1)
                ],
                match_on=tuple(shape.match_on),
                structured_output_by_provider=shape.structured_output_by_provider,
            )
    except RecursionError:
        raise FixtureError(file_error(source, "holds data nested too deeply to check", fix)) from None
    _check_output(exchange, tool_name, output_model, fix)
    return exchange


def _assembled(source: str, number: int, call: dict[str, Any], fix: str) -> Call:
    """One format-2 call, its `response` checked against what Strands assembles from its events."""
    try:
        assembled = assemble(call["events"])
    except Exception as exc:  # a delta without its start, tool input that is not JSON: Strands' own handlers raise
        problem = f"does not assemble into a message ({type(exc).__name__}: {exc})"
        raise FixtureError(file_error(source, problem, fix, record=f"call {number}", field="events")) from exc
    if call["response"] != assembled:
        where = first_difference(assembled, call["response"], "response", "assembled", "stored")
        problem = f"disagrees with the assembled events (first difference at {where})"
        raise FixtureError(file_error(source, problem, fix, record=f"call {number}", field="response"))
    return Call(call["request"], call["events"], call["response"])


def _check_output(exchange: Exchange, tool_name: str | None, output_model: type[BaseModel] | None, fix: str) -> None:
    """The exchange ends in `tool_name`'s output (in format 1, every tool use calls it), valid as `output_model`."""
    if exchange.format == 1 and tool_name is not None:
        _check_tool_names(exchange, tool_name, fix)
    if exchange.format == FORMAT and tool_name is None:
        return  # nothing names the output tool, so nothing says which call ends in the output
    final = _final_output(exchange, tool_name)
    if final is None and exchange.format == FORMAT:
        problem = f"no call ends in the structured output: neither a `{tool_name}` tool use nor a JSON object as text"
        raise FixtureError(file_error(exchange.source, problem, fix))
    if final is None or output_model is None:
        return  # a format-1 exchange of text turns only, or no model to check the output against
    number, where, output = final
    try:
        output_model.model_validate(output)
    except ValidationError as exc:
        field, what = validation_problem(exc, where)
        problem = f"does not validate as {output_model.__name__}: {what}"
        unit = "turn" if exchange.format == 1 else "call"
        raise FixtureError(file_error(exchange.source, problem, fix, record=f"{unit} {number}", field=field)) from exc


def _check_tool_names(exchange: Exchange, tool_name: str, fix: str) -> None:
    for number, turn in enumerate(exchange.turns, start=1):
        name = turn.get("toolUse", {}).get("name", tool_name)
        if name != tool_name:
            problem = f"is {name!r}, not the model the notebook asks for ({tool_name!r})"
            raise FixtureError(file_error(exchange.source, problem, fix, record=f"turn {number}", field="toolUse.name"))


def _final_output(exchange: Exchange, tool_name: str | None) -> tuple[int, tuple[str | int, ...], Any] | None:
    """(call or turn number, where in it, output) of the structured output the exchange ends with.

    Format 1: the last tool use. Format 2: the last `tool_name` tool use, else a last answer
    whose text is a JSON object.
    """
    if exchange.recorded_calls is None:
        numbered = [(n, t["toolUse"]) for n, t in enumerate(exchange.turns, start=1) if "toolUse" in t]
        return (numbered[-1][0], ("toolUse", "input"), numbered[-1][1].get("input")) if numbered else None
    contents = [(call.response or {}).get("message", {}).get("content", []) for call in exchange.recorded_calls]
    for number, content in reversed(list(enumerate(contents, start=1))):
        for index, block in reversed(list(enumerate(content))):
            if block.get("toolUse", {}).get("name") == tool_name:
                return (
                    number,
                    ("response", "message", "content", index, "toolUse", "input"),
                    block["toolUse"].get("input"),
                )
    texts = [index for index, block in enumerate(contents[-1]) if "text" in block]
    try:
        answer = json.loads("".join(contents[-1][index]["text"] for index in texts))
    except ValueError:
        return None
    where = ("response", "message", "content", texts[-1], "text")
    return (len(contents), where, answer) if isinstance(answer, dict) else None


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


def save_exchange(data: dict[str, Any], path: Path | str) -> Path:
    """Validate `data`, then write it atomically: a temp file beside `path`, then `os.replace`.

    A crash or a refused fixture leaves whatever was at `path` exactly as it was.
    """
    path = Path(path)
    parse_exchange(data, source=str(path))
    text = exchange_text(data)
    check_exchange_size(text, str(path))
    return write_text_atomically(path, text)


def check_exchange_size(data: dict[str, Any] | str, source: str) -> None:
    """Refuse to write an exchange (given as data, or as its text) that a replay would refuse for its size.

    Raises:
        FixtureError: Naming the file, the size and `limits.EXCHANGE`.
    """
    size = len((data if isinstance(data, str) else exchange_text(data)).encode("utf-8"))
    if size > limits.EXCHANGE.bytes:
        raise FixtureError(limits.over_cap(source, size, limits.EXCHANGE, "written"))


def exchange_text(data: dict[str, Any]) -> str:
    """The text of an exchange file, as `save_exchange` writes it; `data` is not checked."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _display_path(source: str) -> str:
    """An absolute fixture path made relative to the repository, so no machine's layout leaks
    into notebook outputs; any other source (a label such as "truncated copy") is kept as is."""
    path = Path(source)
    if path.is_absolute() and path.is_relative_to(REPO_ROOT):
        return path.relative_to(REPO_ROOT).as_posix()
    return source
