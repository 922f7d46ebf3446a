"""`ReplayModel`: a Strands model provider that streams a stored exchange, offline.

Each call to `stream` replays the next recorded turn as the events Bedrock's converse-stream
yields, so the real `Agent` structured-output path (buffering the tool-input fragments,
parsing them, validating the Pydantic model) runs exactly as it does against the live model.
A replay that runs out of turns raises at once: an agent that silently loops on a stub looks
like a passing test while proving nothing. An exchange bound to a prompt (`provenance.prompt_sha256`)
refuses to answer any other prompt, and `check_finished` reports recorded turns the agent never
asked for, which mean the agent stopped earlier than the recording did.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

from strands.models import Model
from strands.types.streaming import StreamEvent

from helpers.exchanges.fixtures import Exchange, FixtureError, prompt_sha256


class ReplayExhaustedError(RuntimeError):
    """The agent asked for a turn the exchange does not hold."""


class PromptMismatchError(FixtureError):
    """The agent sent a prompt other than the one the exchange was recorded for."""


class UnusedTurnsError(FixtureError):
    """The agent finished before it asked for every recorded turn."""


def prompt_text(messages: Any) -> str | None:
    """The text of the first user message: the prompt an exchange is bound to."""
    for message in messages or []:
        if isinstance(message, dict) and message.get("role") == "user":
            return "".join(block["text"] for block in message.get("content", []) if "text" in block)
    return None


class AgentLoopModel(Model):
    """A provider that only serves the agent loop, as replay and recording both need.

    The deprecated `Agent.structured_output` path bypasses the loop, so neither a replay nor a
    recording of it would match what `agent(prompt, structured_output_model=Model)` does.
    """

    async def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):  # type: ignore[override]
        raise NotImplementedError(
            f"{type(self).__name__} serves the agent loop only; call agent(prompt, structured_output_model=Model)"
        )
        yield  # pragma: no cover - makes this an async generator, as the base class declares


class ReplayModel(AgentLoopModel):
    """Streams the turns of one `Exchange`, in order, one turn per model call.

    Attributes:
        tool_specs_offered: For each call, the tool specs the agent offered the model.
        turns_used: How many recorded turns have been streamed so far.
    """

    def __init__(self, exchange: Exchange, *, record_command: str | None = None):
        self.exchange = exchange
        self.record_command = record_command
        self.tool_specs_offered: list[list[dict[str, Any]]] = []
        self.turns_used = 0
        self.config: dict[str, Any] = {"model_id": f"replay of {exchange.label}"}

    @property
    def unused_turns(self) -> int:
        """Recorded turns the agent has not asked for (yet)."""
        return len(self.exchange.turns) - self.turns_used

    def check_finished(self) -> None:
        """Raise `UnusedTurnsError` if the agent stopped before the recording did."""
        if self.unused_turns:
            recorded = len(self.exchange.turns)
            raise UnusedTurnsError(
                f"{self.exchange.label}: the agent finished after turn {self.turns_used}, but the exchange "
                f"records {recorded} turns; turns {self.turns_used + 1} to {recorded} were never replayed "
                f"(remove them, or {self._fix()} if the agent's behaviour changed)"
            )

    def _fix(self) -> str:
        return f"re-record it with `{self.record_command}`" if self.record_command else "re-record the exchange"

    def _check_prompt(self, messages: Any) -> None:
        expected = self.exchange.prompt_sha256
        if expected is None:
            return
        sent = prompt_text(messages)
        if sent is None:  # a direct stream call with no conversation (tests) has no prompt to check
            return
        actual = prompt_sha256(sent)
        if actual != expected:
            raise PromptMismatchError(
                f"{self.exchange.label}: recorded for another prompt (provenance.prompt_sha256 {expected[:12]}..., "
                f"the prompt the agent sent hashes to {actual[:12]}...); the exchange belongs to "
                f"another document or an older prompt: {self._fix()}"
            )

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    async def stream(  # type: ignore[override]
        self,
        messages: Any,
        tool_specs: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream the next recorded turn; raise `ReplayExhaustedError` if there is none."""
        if self.turns_used == 0:
            self._check_prompt(messages)
        recorded = len(self.exchange.turns)
        asked = self.turns_used + 1
        if asked > recorded:
            raise ReplayExhaustedError(
                f"{self.exchange.label}: the agent asked for turn {asked}, but the exchange records "
                f"{recorded} turn{'s' if recorded != 1 else ''}; the agent wanted another model call the "
                f"recording never made ({self._fix()} if the agent's behaviour changed)"
            )
        self.tool_specs_offered.append(copy.deepcopy(tool_specs or []))
        self.turns_used = asked
        for event in turn_events(self.exchange.turns[asked - 1]):
            yield event


def turn_events(turn: dict[str, Any]) -> Iterator[StreamEvent]:
    """The converse-stream events for one fixture turn, in the order Bedrock sends them.

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


@contextmanager
def strands_log(level: int = logging.WARNING) -> Iterator[list[str]]:
    """Collect what Strands logs at `level` or above, as `LEVEL logger: message` lines.

    A replay of a malformed stream makes Strands log warnings; a notebook prints the list
    instead of letting the records reach stderr, so the cell's output is the same every run.
    """
    lines: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(f"{record.levelname} {record.name}: {record.getMessage()}")

    logger = logging.getLogger("strands")
    handler, propagate, previous_level = _Collect(level), logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(level)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(previous_level)
