"""`ReplayModel`: a Strands model provider that streams a stored exchange to the real `Agent`, offline.

The walkthroughs' exchange (`data/exchanges/offline_invoice.json`) holds one assistant message per
turn, as Bedrock's converse-stream sends it: text in chunks, a tool use whose input arrives in
fragments. `turn_events` turns a stored turn back into those events, and `ReplayModel.stream`
yields them, so Strands buffers the fragments, parses and validates the Pydantic model exactly as
it would live. The replay refuses what it was not recorded for: a prompt other than the one the
exchange's `provenance.prompt_sha256` names, and a model call past the last recorded turn (an agent
that loops on a stub looks like a passing test while proving nothing).

The tool (`fieldeval.exchanges`) records and replays a team's cassettes, every request whole; this
is the small replay a reader can follow line by line.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from strands.models import Model
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from helpers.fixtures import REPO_ROOT


class ExchangeError(ValueError):
    """A stored exchange that does not load; the message names the file and the fix."""


class ReplayExhaustedError(RuntimeError):
    """The agent asked for a model call the exchange does not hold."""


class PromptMismatchError(ValueError):
    """The agent sent a prompt other than the one the exchange was recorded for."""


@dataclass(frozen=True)
class Exchange:
    """A stored exchange: where it came from, its provenance, and its turns (one assistant message each)."""

    source: str
    provenance: dict[str, Any]
    turns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The source as a reader sees it: a path relative to the repository, or the label given."""
        path = Path(self.source)
        return path.relative_to(REPO_ROOT).as_posix() if path.is_relative_to(REPO_ROOT) else self.source

    def describe(self) -> str:
        """One line saying where the data came from, for a notebook's first output."""
        if self.provenance.get("hand_authored"):
            return (
                f"{self.label}: HAND-AUTHORED to the Bedrock converse-stream wire shape; "
                "it demonstrates the mechanism and measures no model."
            )
        return f"{self.label}: recorded from {self.provenance.get('model_id')} at {self.provenance.get('recorded')}."

    def tool_uses(self) -> list[dict[str, Any]]:
        """Every `toolUse` block of the turns, in order."""
        return [turn["toolUse"] for turn in self.turns if "toolUse" in turn]


def load_exchange(path: Path | str, *, tool_name: str, record_command: str) -> Exchange:
    """The exchange stored at `path`, each tool use checked to call `tool_name`."""
    fix = f"restore it from version control or re-record it with `{record_command}`"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExchangeError(f"{path}: no exchange here; record it with `{record_command}`") from None
    except ValueError as exc:
        raise ExchangeError(f"{path}: not JSON ({exc}); {fix}") from None
    if not isinstance(data, dict) or not isinstance(data.get("provenance"), dict) or "turns" not in data:
        raise ExchangeError(f"{path}: not an exchange of turns (it needs `provenance` and `turns`); {fix}")
    exchange = Exchange(source=str(path), provenance=data["provenance"], turns=data["turns"])
    for number, block in enumerate(exchange.tool_uses(), start=1):
        if block.get("name") != tool_name:
            raise ExchangeError(f"{path}: tool use {number} calls {block.get('name')!r}, not {tool_name!r}; {fix}")
    return exchange


def turn_events(turn: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The converse-stream events of one stored turn, in the order Bedrock sends them.

    Bedrock sends no `contentBlockStart` for text. A tool use missing its name or id starts with
    an empty `start`, which is what a malformed stream looks like to Strands.
    """
    blocks = [("text", turn["text"])] if "text" in turn else []
    blocks += [("toolUse", turn["toolUse"])] if "toolUse" in turn else []
    yield {"messageStart": {"role": "assistant"}}
    for index, (kind, block) in enumerate(blocks):
        if kind == "toolUse":
            named = block.get("name") and block.get("toolUseId")
            start = {"toolUse": {"toolUseId": block["toolUseId"], "name": block["name"]}} if named else {}
            yield {"contentBlockStart": {"start": start, "contentBlockIndex": index}}
        for chunk in block["chunks" if kind == "text" else "inputChunks"]:
            delta = {"text": chunk} if kind == "text" else {"toolUse": {"input": chunk}}
            yield {"contentBlockDelta": {"delta": delta, "contentBlockIndex": index}}
        yield {"contentBlockStop": {"contentBlockIndex": index}}
    yield {"messageStop": {"stopReason": "tool_use" if "toolUse" in turn else "end_turn"}}
    usage = blocks[-1][1].get("usage")
    if usage is not None:
        yield {"metadata": {"usage": dict(usage)}}


class ReplayModel(Model):
    """Streams the turns of one `Exchange`, one turn per model call.

    Attributes:
        tool_specs_offered: For each call, the tool specs the agent offered the model.
        turns_used: How many turns have been streamed so far.
    """

    def __init__(self, exchange: Exchange):
        self.exchange = exchange
        self.tool_specs_offered: list[list[ToolSpec]] = []
        self.turns_used = 0
        self.config: dict[str, Any] = {"model_id": f"replay of {exchange.label}"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError("ReplayModel serves the agent loop only: agent(prompt, structured_output_model=M)")
        yield  # pragma: no cover - makes this an async generator, as the base class declares

    async def stream(
        self, messages: Any, tool_specs: list[ToolSpec] | None = None, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[StreamEvent, None]:
        """Check the call, then stream the next stored turn."""
        asked, recorded = self.turns_used + 1, len(self.exchange.turns)
        if asked > recorded:
            raise ReplayExhaustedError(
                f"{self.exchange.label}: the agent asked for turn {asked}, but the exchange records {recorded} "
                f"turn{'s' if recorded != 1 else ''}; the agent wanted another model call the recording never "
                "made (re-record the exchange if the agent's behaviour changed)"
            )
        if asked == 1:
            self._check_prompt(messages)
        self.tool_specs_offered.append(copy.deepcopy(tool_specs or []))
        self.turns_used = asked
        for event in turn_events(copy.deepcopy(self.exchange.turns[asked - 1])):
            yield event  # type: ignore[misc]  # the converse-stream shapes StreamEvent describes

    def _check_prompt(self, messages: Any) -> None:
        expected = self.exchange.provenance.get("prompt_sha256")
        first = next((m for m in messages or [] if m.get("role") == "user"), None)
        if expected is None or first is None:
            return
        sent = hashlib.sha256("".join(b["text"] for b in first["content"] if "text" in b).encode()).hexdigest()
        if sent != expected:
            raise PromptMismatchError(
                f"{self.exchange.label}: recorded for another prompt (provenance.prompt_sha256 {expected[:12]}..., "
                f"the prompt the agent sent hashes to {sent[:12]}...); re-record the exchange"
            )


@contextmanager
def strands_log(level: int = logging.WARNING) -> Iterator[list[str]]:
    """What Strands logs at `level` or above while the block runs, as `LEVEL logger: message` lines.

    A replay of a malformed stream makes Strands log warnings; a notebook prints the list instead
    of letting the records reach stderr, so the cell prints the same every run.
    """
    lines: list[str] = []
    handler = logging.Handler(level)
    handler.emit = lambda record: lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")  # type: ignore[method-assign]
    logger = logging.getLogger("strands")
    propagate, previous_level = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(level)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(previous_level)
