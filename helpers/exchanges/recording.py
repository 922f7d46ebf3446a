"""Recording: capture what a real provider streams, and replace a fixture with it safely.

`RecordingModel` wraps any Strands model provider and passes every event through untouched,
while it keeps each assistant message as a fixture turn (see `helpers.exchanges.fixtures`): the
tool-input chunks with the boundaries the provider chose and the usage it reported. A turn
is committed only when its stream ends, so a call that fails half way records nothing.

A recording has two steps. `capture_task` runs a user's `task(case, model)` through it and
returns the exchange data (or an exit code, after printing why); nothing is written.
`commit_fixture` then replaces the exchange atomically and prints the payload and what changed.
`helpers.record.record_cases` does both, case by case, for a cassette folder; a command that
must switch several files as one step captures into a staging folder first. Every record
command uses the exit codes below.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TextIO

from pydantic import BaseModel
from strands.models import Model
from strands.types.exceptions import StructuredOutputException
from strands.types.streaming import StreamEvent

from helpers.exchanges.fixtures import PROMPT_HASH_KEY, FixtureError, parse_exchange, prompt_sha256, save_exchange
from helpers.exchanges.replay import AgentLoopModel, prompt_text

EXIT_OK = 0
EXIT_MISSING_DEPENDENCY = 1
EXIT_AGENT_FAILED = 2
EXIT_NO_STRUCTURED_OUTPUT = 3


class RecordingError(RuntimeError):
    """The provider streamed something a fixture cannot hold faithfully."""


class RecordingModel(AgentLoopModel):
    """A pass-through provider that keeps every streamed message as a fixture turn.

    It does not claim the inner provider's native structured-output support on purpose:
    `ReplayModel` does not claim it either, so the agent takes the same path (a tool call,
    forced with `tool_choice` on retry) when recording as when replaying.

    Attributes:
        inner: The real provider.
        turns: The committed turns, one per completed model call, in fixture format.
        prompt_sha256: The hash of the first prompt the agent sent, which binds the recording to it.
    """

    def __init__(self, inner: Model):
        self.inner = inner
        self.turns: list[dict[str, Any]] = []
        self.prompt_sha256: str | None = None

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    async def stream(  # type: ignore[override]
        self,
        messages: Any,
        tool_specs: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        if self.prompt_sha256 is None:
            sent = prompt_text(messages)
            self.prompt_sha256 = prompt_sha256(sent) if sent is not None else None
        turn = _TurnRecorder(len(self.turns) + 1)
        async for event in self.inner.stream(messages, tool_specs, system_prompt, **kwargs):
            turn.observe(event)
            yield event
        self.turns.append(turn.finish())


class _TurnRecorder:
    """Collects one streamed message; refuses what one fixture turn cannot hold."""

    def __init__(self, number: int):
        self.number = number
        self.text: list[str] = []
        self.tool: dict[str, Any] | None = None
        self.usage: dict[str, Any] | None = None

    def refuse(self, what: str) -> NoReturn:
        raise RecordingError(f"turn {self.number}: {what}; nothing was recorded for this turn")

    def observe(self, event: StreamEvent) -> None:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"].get("start", {})
            if "toolUse" in start:
                if self.tool is not None:
                    self.refuse(
                        "the provider streamed several toolUse blocks in one message, which a fixture turn cannot hold"
                    )
                self.tool = {
                    "name": start["toolUse"]["name"],
                    "toolUseId": start["toolUse"]["toolUseId"],
                    "inputChunks": [],
                }
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "toolUse" in delta:
                if self.tool is None:
                    self.refuse("a toolUse delta arrived without a contentBlockStart naming the tool")
                self.tool["inputChunks"].append(delta["toolUse"].get("input", ""))
            elif "text" in delta:
                if self.tool is not None:
                    self.refuse("text arrived after the toolUse block, an order replay cannot reproduce")
                self.text.append(delta["text"])
        elif "contentBlockStop" in event and self.tool is not None and "input" not in self.tool:
            raw = "".join(self.tool["inputChunks"])
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as exc:
                self.refuse(f"the {self.tool['name']} tool input is not JSON ({exc.msg}): {raw[:120]!r}")
            if not isinstance(parsed, dict):
                self.refuse(f"the {self.tool['name']} tool input is JSON but not an object: {raw[:120]!r}")
            self.tool["input"] = parsed
        elif "metadata" in event and "usage" in event["metadata"]:
            self.usage = dict(event["metadata"]["usage"])

    def finish(self) -> dict[str, Any]:
        """The fixture turn for the completed message."""
        if self.usage is None:
            self.refuse("the stream ended without a metadata event carrying usage")
        if self.tool is not None:
            if "input" not in self.tool:
                self.refuse("the stream ended before the toolUse block was closed")
            turn: dict[str, Any] = {"toolUse": {**self.tool, "usage": self.usage}}
            if self.text:
                turn["text"] = {"chunks": self.text}
            return turn
        if self.text:
            return {"text": {"chunks": self.text, "usage": self.usage}}
        self.refuse("the provider streamed neither text nor a tool use")


def capture_task(
    task: Callable[[Any, Model], Any],
    case: Any,
    model: Model,
    schema: type[BaseModel],
    *,
    source: str,
    model_id: str,
    note: str,
    label: str = "",
    out: TextIO | None = None,
) -> dict[str, Any] | int:
    """Run a user's `task(case, model)` through `RecordingModel` and return the exchange data; write nothing.

    The task builds its own `Agent(model=model, callback_handler=None)` and returns the structured
    output (a `schema` instance or a dict of its fields), which must validate against `schema`
    and come from a call of the `schema.__name__` tool.

    Returns:
        The validated exchange data (`hand_authored` false, the recording time set), bound to the
        prompt the task sent; or, after printing why: `EXIT_AGENT_FAILED` if the task raised or
        the stream cannot be stored (the exception type and message are printed),
        `EXIT_NO_STRUCTURED_OUTPUT` if the model never called the `schema.__name__` tool.
    """
    out = out or sys.stdout
    tool_name = schema.__name__
    recorder = RecordingModel(model)
    try:
        result = task(case, recorder)
    except StructuredOutputException as exc:
        if _calls(recorder.turns, tool_name):
            return _failed(exc, _subject(label, "the task"), out)
        result = None
    except Exception as exc:  # credentials, access, region, throttling, a refused stream, a bug in the task
        return _failed(exc, _subject(label, "the task"), out)
    if result is None or not _calls(recorder.turns, tool_name):
        print(f"{_subject(label, 'the model')} never called the structured-output tool {tool_name!r}.", file=out)
        return EXIT_NO_STRUCTURED_OUTPUT
    try:
        schema.model_validate(result.model_dump() if isinstance(result, BaseModel) else result)
    except Exception as exc:
        print(
            f"{_subject(label, 'the task')} returned a {type(result).__name__} that does not validate as {tool_name} "
            f"({type(exc).__name__}: {str(exc).splitlines()[0]}); return result.structured_output from the task.",
            file=out,
        )
        return EXIT_AGENT_FAILED
    if recorder.prompt_sha256 is None:
        print(f"{_subject(label, 'the task')} sent the agent no text prompt to bind the cassette to.", file=out)
        return EXIT_AGENT_FAILED
    data = {
        "provenance": {
            "model_id": model_id,
            "hand_authored": False,
            "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
            "note": note,
            PROMPT_HASH_KEY: recorder.prompt_sha256,
        },
        "turns": recorder.turns,
    }
    try:
        parse_exchange(data, source=source, tool_name=tool_name, output_model=schema)
    except FixtureError as exc:
        return _failed(exc, _subject(label, "storing the recording"), out)
    return data


def commit_fixture(data: dict[str, Any], path: Path | str, out: TextIO | None = None, label: str = "") -> Path:
    """Replace the fixture at `path` atomically with `data`, then print it for review."""
    out = out or sys.stdout
    path = Path(path)
    previous = read_previous(path)
    save_exchange(data, path)
    print(f"{label + ': ' if label else ''}Recorded {len(data['turns'])} turn(s) into {path}.", file=out)
    print_review(data, previous, out, label)
    return path


def print_review(data: dict[str, Any], previous: Any, out: TextIO, label: str = "") -> None:
    """Print the payload of the last tool call and what changed from `previous`, for a reviewer."""
    tool = [turn["toolUse"] for turn in data["turns"] if "toolUse" in turn][-1]
    print(f"{_subject(label, 'payload')} of the {tool['name']} tool call:", file=out)
    print(json.dumps(tool["input"], indent=2, ensure_ascii=False), file=out)
    print(f"{_subject(label, 'changes')} from the previous fixture (review them before committing):", file=out)
    for line in describe_changes(previous, data):
        print(f"  {line}", file=out)


def read_previous(path: Path) -> Any:
    """The fixture currently at `path` as JSON, or None if it is absent or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def describe_changes(previous: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What a reviewer needs to see: provenance, turn shape, usage and every changed payload field."""
    if not isinstance(previous, dict):
        return ["there was no readable previous fixture; everything is new"]
    lines = []
    old_prov, new_prov = previous.get("provenance") or {}, new["provenance"]
    for key in ("hand_authored", "model_id"):
        if old_prov.get(key) != new_prov.get(key):
            lines.append(f"provenance.{key}: {old_prov.get(key)!r} -> {new_prov.get(key)!r}")
    old_turns, new_turns = previous.get("turns") or [], new["turns"]
    if len(old_turns) != len(new_turns):
        lines.append(f"turns: {len(old_turns)} -> {len(new_turns)}")
    old_tools = [t["toolUse"] for t in old_turns if isinstance(t, dict) and "toolUse" in t]
    new_tools = [t["toolUse"] for t in new_turns if "toolUse" in t]
    if old_tools and new_tools:
        old_tool, new_tool = old_tools[-1], new_tools[-1]
        for key in ("inputChunks", "usage"):
            old_value, new_value = old_tool.get(key), new_tool.get(key)
            if key == "inputChunks":
                old_value, new_value = f"{len(old_value or [])} chunks", f"{len(new_value)} chunks"
            if old_value != new_value:
                lines.append(f"{key}: {old_value} -> {new_value}")
        lines.extend(_payload_changes(old_tool.get("input"), new_tool["input"], "payload"))
    return lines or ["no change"]


def _payload_changes(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in list(old) + [k for k in new if k not in old]:
            if key not in new:
                lines.append(f"{path}.{key}: removed (was {old[key]!r})")
            elif key not in old:
                lines.append(f"{path}.{key}: added {new[key]!r}")
            else:
                lines.extend(_payload_changes(old[key], new[key], f"{path}.{key}"))
        return lines
    if isinstance(old, list) and isinstance(new, list) and old != new:
        # Lists are compared as collections: a reordered list reads as one line, not as noise.
        old_keys = [json.dumps(item, sort_keys=True) for item in old]
        new_keys = [json.dumps(item, sort_keys=True) for item in new]
        removed = [item for item in old_keys if item not in new_keys]
        added = [item for item in new_keys if item not in old_keys]
        if not removed and not added:
            return [f"{path}: same items, different order"]
        return [f"{path}: removed {item}" for item in removed] + [f"{path}: added {item}" for item in added]
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def _calls(turns: list[dict[str, Any]], tool_name: str) -> list[dict[str, Any]]:
    return [t["toolUse"] for t in turns if t.get("toolUse", {}).get("name") == tool_name]


def report_agent_failure(exc: BaseException, out: TextIO, subject: str = "The agent call") -> None:
    """Print the exception type and message, its cause, and the notes Strands attaches.

    Strands adds the region and model id as notes, which is usually what tells a user
    whether the credentials, the model access or the region is wrong.
    """
    print(f"{subject} failed: {type(exc).__name__}: {exc}", file=out)
    cause = exc.__cause__
    if cause is not None:
        print(f"  caused by {type(cause).__name__}: {cause}", file=out)
    for note in getattr(cause or exc, "__notes__", []):
        print(f"  {note}", file=out)
    live = _bedrock_failure(exc)
    if live is not None:
        from helpers.services.bedrock import describe_bedrock_error

        print(f"  {describe_bedrock_error(live)}", file=out)


def _bedrock_failure(exc: BaseException) -> BaseException | None:
    """The Bedrock error behind `exc`, if the live services can be imported and one is there."""
    try:
        from helpers.services.bedrock import bedrock_failure
    except ImportError:  # boto3 missing: the failure cannot have come from Bedrock
        return None
    return bedrock_failure(exc)


def _failed(exc: BaseException, subject: str, out: TextIO) -> int:
    report_agent_failure(exc, out, subject)
    return EXIT_AGENT_FAILED


def _subject(label: str, what: str) -> str:
    """`what` as a sentence start, or after the label when one command records several fixtures."""
    return f"{label}: {what}" if label else what[0].upper() + what[1:]
