"""`ReplayModel`: a Strands model provider that streams a stored exchange, offline.

Each call to `stream` compares the request the agent sent with the recorded one (on the parts the
cassette's `match_on` names, see `fieldeval.exchanges.calls`) and then yields the recorded
`StreamEvent`s, event for event, so the real `Agent` path (buffering tool-input fragments, running
the agent's own tools, parsing and validating the Pydantic model) runs exactly as it did against
the live model. A request that differs is refused with one line naming what differs and the
command that re-records the case: a replay proves something only if it refuses a request it was
not recorded for. A replay that runs out of calls raises at once: an agent that silently loops on
a stub looks like a passing test while proving nothing. `check_finished` reports recorded calls
the agent never asked for, which mean the agent stopped earlier than the recording did.

A format-1 exchange records no request; it is bound to the text of the first user message by
`provenance.prompt_sha256` and refuses any other prompt.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator
from typing import Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import Messages
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolSpec

from fieldeval.errors import EvalError
from fieldeval.exchanges.calls import canonical_request, from_json, request_difference
from fieldeval.exchanges.fixtures import Exchange, FixtureError, prompt_sha256
from fieldeval.exchanges.fixtures import turn_events as turn_events  # where the offline notebook imports it from

T = TypeVar("T", bound=BaseModel)


class ReplayExhaustedError(EvalError, RuntimeError):
    """The agent asked for a model call the exchange does not hold."""


class PromptMismatchError(FixtureError):
    """The agent sent a prompt other than the one a format-1 exchange was recorded for."""


class RequestMismatchError(FixtureError):
    """The agent sent a request other than the recorded one, on the parts the cassette matches."""


class UnusedTurnsError(FixtureError):
    """The agent finished before it asked for every recorded call."""


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

    async def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError(
            f"{type(self).__name__} serves the agent loop only; call agent(prompt, structured_output_model=Model)"
        )
        yield  # pragma: no cover - makes this an async generator, as the base class declares


class ReplayModel(AgentLoopModel):
    """Streams the calls of one `Exchange`, in order, one recorded call per model call.

    It claims what the recorded provider claimed (`structured_output_by_provider`), so the
    agent sends the requests it sent when recording.

    Attributes:
        tool_specs_offered: For each call, the tool specs the agent offered the model.
        turns_used: How many recorded calls have been streamed so far.
    """

    def __init__(self, exchange: Exchange, *, record_command: str | None = None, output_tool: str | None = None):
        self.exchange = exchange
        self.record_command = record_command
        self.output_tool = output_tool
        self.tool_specs_offered: list[list[ToolSpec]] = []
        self.turns_used = 0
        self.config: dict[str, Any] = {"model_id": f"replay of {exchange.label}"}
        self._supports_structured_output = exchange.structured_output_by_provider

    @property
    def unused_turns(self) -> int:
        """Recorded calls the agent has not asked for (yet)."""
        return len(self.exchange.calls) - self.turns_used

    def check_finished(self) -> None:
        """Raise `UnusedTurnsError` if the agent stopped before the recording did."""
        if self.unused_turns:
            recorded = len(self.exchange.calls)
            unit = "turns" if self.exchange.format == 1 else "model calls"
            raise self._refusal(
                UnusedTurnsError,
                f"the agent finished after {self._unit(1)} {self.turns_used}, but the exchange records {recorded} "
                f"{unit}; {unit} {self.turns_used + 1} to {recorded} were never replayed",
                f"remove them, or {self._fix()} if the agent's behaviour changed",
            )

    def _unit(self, count: int) -> str:
        unit = "turn" if self.exchange.format == 1 else "model call"
        return unit if count == 1 else unit + "s"

    def _refusal(self, kind: type[Exception], reason: str, fix: str) -> Exception:
        """`kind` with the whole message, and `reason` alone (no file, no command) for grouping like refusals."""
        refusal = kind(f"{self.exchange.label}: {reason}; {fix}")
        refusal.reason = reason  # type: ignore[attr-defined]
        return refusal

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
            raise self._refusal(
                PromptMismatchError,
                f"recorded for another prompt (provenance.prompt_sha256 {expected[:12]}..., the prompt the agent "
                f"sent hashes to {actual[:12]}...)",
                f"the exchange belongs to another document or an older prompt: {self._fix()}",
            )

    def _check_request(self, number: int, recorded: dict[str, Any], sent: dict[str, Any]) -> None:
        difference = request_difference(recorded, sent, self.exchange.match_on, self.output_tool)
        if difference is not None:
            raise self._refusal(
                RequestMismatchError,
                f"model call {number} was recorded for another request: {difference}",
                f'{self._fix()} (or relax "match_on" in the cassette)',
            )

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        return dict(self.config)

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Check the request, then stream the next recorded call; raise `ReplayExhaustedError` if there is none."""
        calls = self.exchange.calls
        asked = self.turns_used + 1
        if asked > len(calls):
            unit = self._unit(len(calls))
            raise self._refusal(
                ReplayExhaustedError,
                f"the agent asked for {self._unit(1)} {asked}, but the exchange records {len(calls)} {unit}",
                f"the agent wanted another model call the recording never made ({self._fix()} if the agent's "
                "behaviour changed)",
            )
        call = calls[asked - 1]
        if call.request is None:
            if asked == 1:
                self._check_prompt(messages)
        else:
            sent = canonical_request(messages, tool_specs, system_prompt, **kwargs)
            self._check_request(asked, call.request, sent)
        self.tool_specs_offered.append(copy.deepcopy(tool_specs or []))
        self.turns_used = asked
        for event in from_json(call.events):  # a fresh copy: what the agent does to it never reaches the cassette
            yield event
