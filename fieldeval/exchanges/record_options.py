"""The options of `record` a cassette keeps, and the one command line that records a cassette folder.

Every fix line a refusal prints is built here, from the options the cassette was recorded with,
so that running it as printed records the same provider with the same matching.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fieldeval.formats.exchange import DEFAULT_MATCH_ON

# Model calls one case may make: a tool run of a few rounds and the structured-output retry fit
# many times over; a model looping on a tool it was not offered is stopped after this many.
DEFAULT_MAX_CALLS = 12


@dataclass(frozen=True)
class RecordOptions:
    """The options of `record` that shape a cassette, kept in it so that a re-recording repeats them.

    A fix line that left them out would record an OpenAI cassette from Bedrock, or turn a
    `user_text` cassette back to the default matching.
    """

    model: str | None = None  # the --model factory; None is the default Bedrock model
    match_on: tuple[str, ...] = DEFAULT_MATCH_ON
    max_calls: int = DEFAULT_MAX_CALLS

    @classmethod
    def of(cls, exchange: Any) -> RecordOptions:
        """The options an exchange was recorded with (the defaults where it does not say)."""
        recorded = exchange.provenance.get("record_options") or {}
        return cls(
            model=recorded.get("model"),
            match_on=tuple(exchange.match_on),
            max_calls=recorded.get("max_calls") or DEFAULT_MAX_CALLS,
        )

    def provenance(self) -> dict[str, Any]:
        return {"model": self.model, "max_calls": self.max_calls}

    def args(self) -> list[str]:
        """The command-line words that give these options, leaving out every default."""
        words = ["--model", self.model] if self.model is not None else []
        if tuple(self.match_on) != tuple(DEFAULT_MATCH_ON):
            words += ["--match-on", ",".join(self.match_on)]
        if self.max_calls != DEFAULT_MAX_CALLS:
            words += ["--max-calls", str(self.max_calls)]
        return words


def record_command(
    schema: str,
    cases: Path | str,
    task: str,
    cassettes: Path | str,
    options: RecordOptions | None = None,
    *,
    record_mode: str | None = None,
) -> str:
    """The command that records this cassette folder, for provenance notes and replay errors."""
    parts = ["python", "-m", "fieldeval.commands.record", "--schema", schema, "--cases", str(cases)]
    parts += ["--task", task, "--cassettes", str(cassettes)]
    parts += (options or RecordOptions()).args()
    if record_mode is not None:
        parts += ["--record-mode", record_mode]
    return shlex.join(parts)
