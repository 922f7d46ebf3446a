"""Recording: capture what any Strands model provider streams, and replace a cassette with it safely.

`RecordingModel` wraps the `Model.stream` of whatever provider it is given (Bedrock, OpenAI,
Anthropic, LiteLLM, Ollama, llama.cpp, a local stand-in) and passes every event through
untouched, while it keeps each model call whole: the request in canonical form and the exact
`StreamEvent` sequence (see `fieldeval.exchanges.calls`). A call's events are handed to the agent,
and the call committed, only when its stream ends: a call that fails half way records nothing,
and a throttle at any point of a stream is sent again under the run's one back-off
(`fieldeval.exchanges.throttle`) before the agent has seen any of it. The number of model calls per case is
bounded (`DEFAULT_MAX_CALLS`): a model that keeps calling a tool it was not offered ends the case
in a few calls, with `NoStructuredOutput`, instead of looping for hundreds. So is what one case may
stream (`limits.STREAM`, counted as the events arrive): a model that runs on without end fails its
case at the cap, with `RecordingFailed`, and no cassette is written larger than a replay reads.

A recording has two steps. `capture_task` runs a user's `task(case, model)` through it and
returns the exchange data, or raises `RecordingFailed` (`NoStructuredOutput`) saying why; nothing
is written. `commit_fixture` then replaces the exchange atomically and prints the payload and what
changed. `fieldeval.exchanges.recorder.record_cases` does both, case by case, for a cassette folder; a
command that must switch several files as one step captures into a staging folder first. The
errors are those of `fieldeval.errors`; each command maps them to its own exit codes.
"""

from __future__ import annotations

import io
import json
import sys
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.exceptions import StructuredOutputException
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from fieldeval.errors import EvalError, NoStructuredOutput, RecordingFailed
from fieldeval.exchanges.calls import assemble, canonical_request, to_json
from fieldeval.exchanges.fixtures import FixtureError, check_exchange_size, parse_exchange, prompt_sha256, save_exchange
from fieldeval.exchanges.provenance import (
    STAND_IN_FIELD,
    describe_model,
    model_settings,
    provider_name,
    setting_differences,
)
from fieldeval.exchanges.record_options import DEFAULT_MAX_CALLS, RecordOptions
from fieldeval.exchanges.replay import AgentLoopModel, prompt_text
from fieldeval.exchanges.throttle import SharedBackoff, ThrottledError, is_throttle, retry_after
from fieldeval.formats import limits
from fieldeval.formats.exchange import DEFAULT_MATCH_ON, FORMAT, PROMPT_HASH_KEY


class ModelCallLimitError(EvalError, RuntimeError):
    """The agent asked for more model calls in one case than the bound allows."""


class StreamTooLargeError(EvalError, RuntimeError):
    """What the model streamed for one case passed `limits.STREAM`; the case fails and nothing is written."""


class RecordingModel(AgentLoopModel):
    """A pass-through provider that keeps every model call whole: its request and its exact events.

    It claims what the inner provider claims about enforcing structured output itself, so the
    agent sends it what it would send the provider; `ReplayModel` claims the same from the cassette.

    Attributes:
        inner: The real provider.
        calls: The committed calls, in cassette format (`request`, `events`, `response`).
        prompt_sha256: The hash of the first prompt the agent sent.
        stand_in: What a stand-in server said about itself in its stream, if one answered.
    """

    def __init__(self, inner: Model, *, max_calls: int = DEFAULT_MAX_CALLS, backoff: SharedBackoff | None = None):
        self.inner = inner
        self.max_calls = max_calls
        self.backoff = backoff or SharedBackoff(provider=provider_name(inner))
        self.seconds = 0.0  # wall time of the calls, from sending to the stream's end (pauses left out)
        self.throttled = 0  # throttled answers retried
        self.calls: list[dict[str, Any]] = []
        self.asked = 0
        self.streamed = 0  # bytes of the events kept so far, as compact JSON, every call of the case
        self.prompt_sha256: str | None = None
        self.stand_in: str | None = None
        self._supports_structured_output = getattr(inner, "_supports_structured_output", False) is True

    def update_config(self, **model_config: Any) -> None:
        self.inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self.inner.get_config()

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        self.asked += 1
        if self.asked > self.max_calls:
            raise ModelCallLimitError(
                f"the agent asked for model call {self.asked}, over the bound of {self.max_calls} per case "
                "(raise it with --max-calls if the agent really needs more)"
            )
        if self.prompt_sha256 is None:
            sent = prompt_text(messages)
            self.prompt_sha256 = prompt_sha256(sent) if sent is not None else None
        request = canonical_request(messages, tool_specs, system_prompt, **kwargs)
        streamed_before = self.streamed  # a throttled attempt's events are dropped, so are their bytes
        while True:  # a throttled call is sent again once the run's pause is over
            sent_at = await self.backoff.wait()
            self.streamed = streamed_before
            # held until the stream ends, so a throttle anywhere in it can be sent again; `stored` are fresh
            # copies, whatever the agent later does to the events
            events: list[Any] = []
            stored: list[dict[str, Any]] = []
            try:
                async for event in self.inner.stream(messages, tool_specs, system_prompt, **kwargs):
                    stored.append(to_json(event))
                    self._count(stored[-1])
                    events.append(event)
            except Exception as exc:
                self.seconds += time.monotonic() - sent_at
                if not is_throttle(exc):
                    raise
                self._throttled(exc, sent_at)
                continue
            self.seconds += time.monotonic() - sent_at
            self.backoff.succeeded()
            break
        for event in events:
            yield event
        self._note_stand_in(stored)
        self.calls.append({"request": request, "events": stored, "response": assemble(stored)})

    def _count(self, event: dict[str, Any]) -> None:
        """Add an event's stored copy's size to the case's, and stop the case past `limits.STREAM`.

        Checked as the events arrive, so a model that streams without end is cut off at the cap
        instead of filling memory and then a cassette no replay would read.
        """
        text = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
        self.streamed += len(text.encode("utf-8"))
        if self.streamed > limits.STREAM.bytes:
            cap = limits.STREAM
            raise StreamTooLargeError(
                f"the model streamed more than the {limits.size_text(cap.bytes)} cap on {cap.what} "
                f"(in model call {self.asked}), so the recording stopped ({cap.fix})"
            )

    def _throttled(self, exc: Exception, sent_at: float) -> None:
        """Pause the run for a throttled call, or end the case once the call has been retried enough."""
        self.backoff.throttled(sent_at, retry_after(exc))  # counted, whatever follows: the provider sent it
        if self.throttled >= self.backoff.max_retries:
            raise ThrottledError(
                f"{provider_name(self.inner)} still throttled after {self.throttled} retries of this case's model "
                f"calls, the run pausing {self.backoff.paused:.0f} s in all; lower --concurrency, or ask the provider "
                "for a higher quota"
            ) from exc
        self.throttled += 1

    def _note_stand_in(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            fields = event.get("messageStop", {}).get("additionalModelResponseFields")
            if isinstance(fields, dict) and isinstance(fields.get(STAND_IN_FIELD), str):
                self.stand_in = fields[STAND_IN_FIELD]


def output_problem(result: Any, schema: type[BaseModel]) -> str | None:
    """Why a task's return value is not the structured output, with the fix; None when it is."""
    fix = "return result.structured_output from the task"
    if result is not None and type(result).__name__ == "AgentResult":
        return f"returned the AgentResult, not the structured output; {fix}"
    if isinstance(result, str):
        return f"returned a str ({result[:40]!r}), not the structured output; {fix}"
    try:
        schema.model_validate(result.model_dump() if isinstance(result, BaseModel) else result)
    except Exception as exc:
        first = str(exc).splitlines()[0]
        return f"returned a {type(result).__name__} that does not validate as {schema.__name__} ({first}); {fix}"
    return None


def capture_task(
    task: Callable[[Any, Model], Any],
    case: Any,
    model: Model,
    schema: type[BaseModel],
    *,
    source: str,
    model_id: str | None = None,
    note: str,
    label: str = "",
    match_on: Sequence[str] = DEFAULT_MATCH_ON,
    max_calls: int = DEFAULT_MAX_CALLS,
    record_options: RecordOptions | None = None,
    recorder: RecordingModel | None = None,
) -> dict[str, Any]:
    """Run a user's `task(case, model)` through `RecordingModel` and return the exchange data; write nothing.

    `record_options` go into the provenance, for the fix lines of later refusals; `recorder` is the
    `RecordingModel` around `model` to use (one sharing a run's back-off), which the caller may read
    afterwards (its `seconds`, `throttled`).

    The task builds its own `Agent(model=model, callback_handler=None)` and returns the structured
    output (a `schema` instance or a dict of its fields), which must validate against `schema`.

    Returns:
        The validated exchange data (format 2, `hand_authored` false, the recording time set).

    Raises:
        NoStructuredOutput: the model never produced the structured output (no `schema.__name__`
            tool call, no JSON answer) or ran into the bound on model calls.
        RecordingFailed: the task raised, returned something that is not the structured output, or
            the stream cannot be stored (the message holds the exception's type and message),
            streamed more than `limits.STREAM` or would make a cassette over `limits.EXCHANGE`.
        Each message is what the command prints, prefixed with `label`.
    """
    tool_name = schema.__name__
    recorder = recorder or RecordingModel(model, max_calls=max_calls)
    try:
        result = task(case, recorder)
    except Exception as exc:  # credentials, access, region, throttling, a bound reached, a bug in the task
        too_large = _in_chain(exc, StreamTooLargeError)
        if too_large is not None:
            raise RecordingFailed(f"{_subject(label, 'the case')} failed: {too_large}.") from exc
        limit = _in_chain(exc, ModelCallLimitError)
        if limit is not None or (isinstance(exc, StructuredOutputException) and not _answered(recorder, tool_name)):
            raise _no_structured_output(recorder, tool_name, label, limit) from exc
        raise _failed(exc, _subject(label, "the task")) from exc
    if result is None:
        raise _no_structured_output(recorder, tool_name, label, None)
    problem = output_problem(result, schema)
    if problem is not None:
        raise RecordingFailed(f"{_subject(label, 'the task')} {problem}.")
    if not recorder.calls:
        raise RecordingFailed(f"{_subject(label, 'the task')} made no model call to record.")
    described = describe_model(model)
    provenance = {
        "provider": described["provider"],
        "model_id": model_id or described["model_id"],
        "endpoint": described["endpoint"],
        "hand_authored": False,
        "recorded": datetime.now(UTC).isoformat(timespec="seconds"),
        "note": note,
        "settings": model_settings(model),
        "record_options": (record_options or RecordOptions(match_on=tuple(match_on), max_calls=max_calls)).provenance(),
    }
    if recorder.stand_in is not None:
        provenance["stand_in"] = recorder.stand_in
    if recorder.prompt_sha256 is not None:
        provenance[PROMPT_HASH_KEY] = recorder.prompt_sha256
    data = {
        "format": FORMAT,
        "provenance": provenance,
        "match_on": list(match_on),
        "structured_output_by_provider": recorder._supports_structured_output,
        "calls": recorder.calls,
    }
    try:
        parse_exchange(data, source=source, tool_name=tool_name, output_model=schema)
        check_exchange_size(data, source)
    except FixtureError as exc:
        raise _failed(exc, _subject(label, "storing the recording")) from exc
    return data


def _answered(recorder: RecordingModel, tool_name: str) -> bool:
    """Whether any call returned a `tool_name` tool use or a JSON object as its text."""
    for call in recorder.calls:
        content = call["response"]["message"].get("content", [])
        if any(block.get("toolUse", {}).get("name") == tool_name for block in content):
            return True
        try:
            answer = json.loads("".join(block.get("text", "") for block in content))
        except ValueError:
            continue
        if isinstance(answer, dict):
            return True
    return False


def _no_structured_output(
    recorder: RecordingModel, tool_name: str, label: str, limit: BaseException | None
) -> NoStructuredOutput:
    """Why no structured output came, naming tools the model called that it was not offered."""
    unoffered: dict[str, int] = {}
    for call in recorder.calls:
        offered = {spec.get("name") for spec in call["request"]["tools"]}
        for block in call["response"]["message"].get("content", []):
            name = block.get("toolUse", {}).get("name")
            if name is not None and name not in offered:
                unoffered[name] = unoffered.get(name, 0) + 1
    line = f"{_subject(label, 'the model')} never called the structured-output tool {tool_name!r}"
    if limit is not None:
        line += f" in {recorder.max_calls} model calls (the bound per case)"
    if unoffered:
        line += "; it called tools it was not offered: " + ", ".join(f"{n!r} x{c}" for n, c in unoffered.items())
    return NoStructuredOutput(line + ".")


def _in_chain(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def commit_fixture(data: dict[str, Any], path: Path | str, out: TextIO | None = None, label: str = "") -> Path:
    """Replace the fixture at `path` atomically with `data`, then print it for review."""
    out = out or sys.stdout
    path = Path(path)
    previous = read_previous(path)
    save_exchange(data, path)
    print(f"{label + ': ' if label else ''}Recorded {len(data['calls'])} model call(s) into {path}.", file=out)
    print_review(data, previous, out, label)
    return path


def print_review(data: dict[str, Any], previous: Any, out: TextIO, label: str = "") -> None:
    """Print the structured output the exchange ends with and what changed from `previous`, for a reviewer."""
    name, payload, _ = _summary(data)
    print(f"{_subject(label, 'payload')} of the {name} answer:", file=out)
    print(json.dumps(payload, indent=2, ensure_ascii=False), file=out)
    print(f"{_subject(label, 'changes')} from the previous fixture (review them before committing):", file=out)
    for line in describe_changes(previous, data):
        print(f"  {line}", file=out)


def read_previous(path: Path) -> Any:
    """The fixture currently at `path` as JSON, or None if it is absent, unreadable or over the cassette cap."""
    try:
        limits.check_file(path, limits.EXCHANGE)
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # limits.TooLarge is a ValueError
        return None


def describe_changes(previous: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """What a reviewer needs to see: provenance, the number of calls, usage and every changed payload field.

    `previous` may be in either file format (a format-1 file is read as its turns).
    """
    if not isinstance(previous, dict):
        return ["there was no readable previous fixture; everything is new"]
    lines = []
    old_prov, new_prov = previous.get("provenance") or {}, new["provenance"]
    for key in ("hand_authored", "provider", "model_id", "endpoint", "stand_in"):
        if old_prov.get(key) != new_prov.get(key):
            lines.append(f"provenance.{key}: {old_prov.get(key)!r} -> {new_prov.get(key)!r}")
    if isinstance(old_prov.get("settings"), dict) and isinstance(new_prov.get("settings"), dict):
        lines += [
            f"provenance.settings.{line}" for line in setting_differences(old_prov["settings"], new_prov["settings"])
        ]
    if previous.get("match_on", list(DEFAULT_MATCH_ON)) != new.get("match_on", list(DEFAULT_MATCH_ON)):
        lines.append(f"match_on: {previous.get('match_on', list(DEFAULT_MATCH_ON))} -> {new.get('match_on')}")
    old_name, old_payload, old_usage = _summary(previous)
    new_name, new_payload, new_usage = _summary(new)
    old_count, new_count = _call_count(previous), _call_count(new)
    if old_count != new_count:
        lines.append(f"model calls: {old_count} -> {new_count}")
    if old_usage != new_usage and old_usage is not None:
        lines.append(f"usage of the last call: {old_usage} -> {new_usage}")
    if old_payload is not None and new_payload is not None:
        lines.extend(_payload_changes(old_payload, new_payload, "payload"))
    return lines or ["no change"]


def _call_count(data: dict[str, Any]) -> int:
    return len(data.get("calls") or data.get("turns") or [])


def _summary(data: dict[str, Any]) -> tuple[str, Any, Any]:
    """(tool name or "text", payload, usage) of the answer an exchange ends with, read tolerantly."""
    if "calls" not in data:  # format 1
        tools = [t["toolUse"] for t in data.get("turns") or [] if isinstance(t, dict) and "toolUse" in t]
        if not tools:
            return "text", None, None
        return str(tools[-1].get("name")), tools[-1].get("input"), tools[-1].get("usage")
    responses = [call.get("response") or {} for call in data.get("calls") or [] if isinstance(call, dict)]
    usage = responses[-1].get("usage") if responses else None
    for response in reversed(responses):
        for block in reversed(response.get("message", {}).get("content", [])):
            if "toolUse" in block:
                return str(block["toolUse"].get("name")), block["toolUse"].get("input"), usage
    last = responses[-1].get("message", {}).get("content", []) if responses else []
    text = "".join(block.get("text", "") for block in last)
    try:
        return "JSON text", json.loads(text), usage
    except ValueError:
        return "text", None, usage


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


def report_agent_failure(exc: BaseException, err: TextIO, subject: str = "The agent call") -> None:
    """Print the exception type and message, its cause, and the notes Strands attaches.

    Strands adds the region and model id as notes, which is usually what tells a user
    whether the credentials, the model access or the region is wrong. Printed to `err`, the
    command's standard error.
    """
    print(f"{subject} failed: {type(exc).__name__}: {exc}", file=err)
    cause = exc.__cause__
    if cause is not None:
        print(f"  caused by {type(cause).__name__}: {cause}", file=err)
    for note in getattr(cause or exc, "__notes__", []):
        print(f"  {note}", file=err)
    live = _bedrock_failure(exc)
    if live is not None:
        from fieldeval.services.bedrock import describe_bedrock_error

        print(f"  {describe_bedrock_error(live)}", file=err)


def _bedrock_failure(exc: BaseException) -> BaseException | None:
    """The Bedrock error behind `exc`, if the live services can be imported and one is there."""
    try:
        from fieldeval.services.bedrock import bedrock_failure
    except ImportError:  # boto3 missing: the failure cannot have come from Bedrock
        return None
    return bedrock_failure(exc)


def _failed(exc: BaseException, subject: str) -> RecordingFailed:
    """The failure of a case as one error: what `report_agent_failure` prints, without its last newline."""
    said = io.StringIO()
    report_agent_failure(exc, said, subject)
    return RecordingFailed(said.getvalue().rstrip("\n"))


def _subject(label: str, what: str) -> str:
    """`what` as a sentence start, or after the label when one command records several fixtures."""
    return f"{label}: {what}" if label else what[0].upper() + what[1:]
