"""Tokens and latency, read from the events a provider streamed: what a case cost beside how well it did.

Every Strands stream ends in a `metadata` event holding the call's `usage` (input, output and
total tokens) and, where the provider reports it (Bedrock does), `metrics.latencyMs`. Strands'
adapters for providers that report none (OpenAI, Anthropic, Gemini, ...) write `latencyMs: 0`, so
a latency of 0 is read as not reported, and the latency of several calls is known only when each
of them reported one: "not reported" is printed, never `0.0 s` or a sum over some calls. A
cassette keeps those events, so a replay knows what the recording cost without calling anything.
Wall time is only known for a live call (`RecordingModel.seconds`); it is never read from a cassette.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """What the model calls of one case (or a whole run) cost.

    `latency_ms` is None unless every call reported one; `seconds` (wall time of live calls) is
    None for a replay or a predictions file.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int | None = None
    seconds: float | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            _latency(self, other),
            _add(self.seconds, other.seconds),
        )

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if value is not None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Usage:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})

    def describe(self) -> str:
        """`N model calls, I input and O output tokens, model latency L s, wall time W s` (what is known)."""
        parts = [f"{self.calls:,} model call(s), {self.input_tokens:,} input and {self.output_tokens:,} output tokens"]
        if self.latency_ms is not None:
            parts.append(f"model latency {self.latency_ms / 1000:,.1f} s (as the provider reports it)")
        elif self.calls:
            parts.append("model latency not reported by the provider")
        if self.seconds is not None:
            parts.append(f"wall time of the calls {self.seconds:,.1f} s")
        return ", ".join(parts)


def events_usage(calls: Iterable[Iterable[Mapping[str, Any]]]) -> Usage:
    """The usage of calls given as their event lists (each call's `metadata` events added up)."""
    total = Usage()
    for events in calls:
        inputs = outputs = 0
        latency: int | None = None
        for event in events:
            metadata = event.get("metadata")
            if not isinstance(metadata, Mapping):
                continue
            usage = metadata.get("usage") or {}
            inputs += int(usage.get("inputTokens") or 0)
            outputs += int(usage.get("outputTokens") or 0)
            reported = (metadata.get("metrics") or {}).get("latencyMs")
            if isinstance(reported, (int, float)) and not isinstance(reported, bool) and reported > 0:
                latency = (latency or 0) + int(reported)
        total += Usage(1, inputs, outputs, latency)
    return total


def exchange_usage(exchange: Any) -> Usage:
    """The usage a loaded `Exchange` recorded."""
    return events_usage(call.events for call in exchange.calls)


def data_usage(data: Mapping[str, Any], seconds: float | None = None) -> Usage:
    """The usage of exchange data just captured (format 2), with the wall time its live calls took."""
    usage = events_usage(call["events"] for call in data["calls"])
    return usage if seconds is None else usage + Usage(seconds=seconds)


def total(usages: Iterable[Usage]) -> Usage:
    result = Usage()
    for usage in usages:
        result += usage
    return result


def _latency(left: Usage, right: Usage) -> int | None:
    """The latency of two usages' calls together: known only when known for each side that made calls."""
    if not left.calls:
        return right.latency_ms if right.calls else _add(left.latency_ms, right.latency_ms)
    if not right.calls:
        return left.latency_ms
    return None if left.latency_ms is None or right.latency_ms is None else left.latency_ms + right.latency_ms


def _add(left: Any, right: Any) -> Any:
    if left is None:
        return right
    return left if right is None else left + right
