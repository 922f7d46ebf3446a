"""What a saved run says about itself: schema, match threshold, comparators, and where each output came from.

`score` writes it as the top-level `"run"` object of the saved report (beside the report's own
fields, which Strands Evals' `StructuredOutputReport.from_file` reads and this key leaves alone:
pydantic ignores a key the model does not name) and as `"run"` in a results file's header. So
`report`, `compare` and `power` need nothing repeated, can refuse to compare two runs scored by
different rules (`fieldeval.compare.scoring_rules`), and can say that a run was answered by a
stand-in or written by hand. The schema is named for display and for that check: no command
imports a module because a run names it::

    "run": {"schema": "my_schema:Invoice", "schema_sha256": "...", "match_threshold": 0.7,
            "comparators": {"invoice_id": "ExactComparator@1.0", ...},
            "cases": {"INV-001": {"origin": "model", "provider": "...", "model_id": "...",
                                  "endpoint": null, "file": null,
                                  "usage": {"calls": 2, "input_tokens": 812, "output_tokens": 96,
                                            "latency_ms": 1830, "seconds": 2.1}}}}

`origin` is one of `ORIGINS`: `model` (recorded from, or called on, a model), `stand-in` (a
server that answered from a predictions file), `hand-authored` (an exchange written by hand), or
`predictions` (a predictions file, whose path `file` names). `usage` holds only the keys of
`USAGE_LIMITS`, each a number from 0 to its limit (whole but for `seconds`): a run file edited by
hand is read back only with counts a provider could have sent, so no negative token count turns
into a negative cost. `read_run_info` refuses anything else naming the field. This module imports
only pydantic.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from fieldeval.formats.errors import refused, shown, validation_problem

Origin = Literal["model", "stand-in", "hand-authored", "predictions"]
ORIGINS = ("model", "stand-in", "hand-authored", "predictions")
RUN_KEY = "run"
# What a case's usage may hold (`fieldeval.exchanges.usage.Usage.to_json`), each up to a limit no run
# comes near (a million times a large run's tokens), so an absurd value is refused, not summed.
USAGE_LIMITS: dict[str, int] = {
    "calls": 10**9,
    "input_tokens": 10**15,
    "output_tokens": 10**15,
    "latency_ms": 10**15,
    "seconds": 10**12,
}
WHOLE_USAGE = ("calls", "input_tokens", "output_tokens", "latency_ms")


RUN_FIX = "correct that field, or re-run the score that wrote the file"


class RunInfoError(ValueError):
    """A run object that is not one `score` wrote; the message names the field (`run.cases.X.usage.calls`)."""


def usage_problem(key: str, value: Any) -> str | None:
    """What is wrong with one usage value, in words that follow the field's name; None when it is in range."""
    if key not in USAGE_LIMITS:
        return f"is not a usage field; usage holds {', '.join(USAGE_LIMITS)}"
    whole = key in WHOLE_USAGE
    limit = USAGE_LIMITS[key]
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not number or (whole and value != int(value)) or not 0 <= value <= limit:
        kind = "a whole number" if whole else "a number"
        return f"is {shown(value)}; it must be {kind} from 0 to {limit:,}"
    return None


class CaseSource(BaseModel):
    """Where one case's output came from, and what its model calls cost."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    origin: Origin
    provider: str | None = None
    model_id: str | None = None
    endpoint: str | None = None
    file: str | None = None
    usage: dict[str, float | int] | None = None

    @model_validator(mode="before")
    @classmethod
    def _usage_in_range(cls, data: Any) -> Any:
        """Refuse a usage value no provider sends (checked on the raw value: `true` is not 1, nor "5" 5)."""
        usage = data.get("usage") if isinstance(data, dict) else None
        if isinstance(usage, dict):
            for key, value in usage.items():
                problem = usage_problem(key, value)
                if problem is not None:
                    raise refused(("usage", key), problem, value)
        return data


class RunInfo(BaseModel):
    """The self-description of one scored run."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str = Field(alias="schema")
    schema_sha256: str | None = None
    match_threshold: float = 0.7
    comparators: dict[str, str] = {}
    cases: dict[str, CaseSource] = {}

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def origins(self) -> list[str]:
        """One clause per origin other than a model's, e.g. `5 of 10 cases answered by a stand-in, not a model`."""
        counts: Counter[str] = Counter(source.origin for source in self.cases.values())
        total = len(self.cases)
        clauses = []
        for origin, words in (
            ("stand-in", "answered by a stand-in, not a model"),
            ("hand-authored", "hand-authored, not answered by a model"),
            ("predictions", "read from a predictions file"),
        ):
            if counts[origin]:
                clauses.append(f"{counts[origin]} of {total} cases {words}")
        models = sorted({s.model_id or "(no model id)" for s in self.cases.values() if s.origin == "model"})
        if counts["model"]:
            clauses.append(f"{counts['model']} of {total} cases answered by {', '.join(models)}")
        return clauses

    def usage_totals(self) -> dict[str, float] | None:
        """Input and output tokens (and latency, seconds where every case has them) summed over the cases."""
        usages = [source.usage for source in self.cases.values() if source.usage]
        if not usages:
            return None
        totals: dict[str, float] = {}
        for key in ("calls", "input_tokens", "output_tokens", "latency_ms", "seconds"):
            if all(key in usage for usage in usages):
                totals[key] = sum(usage[key] for usage in usages)
        return totals


def schema_fingerprint(schema: Any) -> str:
    """The sha256 of the schema's JSON schema: what says the class changed since the run was scored."""
    text = json.dumps(schema.model_json_schema(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def comparators_of(spec: Any) -> dict[str, str]:
    """`path: Comparator@threshold` for every field stickler compares, from its own `explain()`."""
    try:
        explained = spec.explain()
    except Exception:  # an explicit StructuredModel that stickler cannot explain still scores
        return {}
    return {
        path: f"{entry.get('comparator')}@{entry.get('threshold')}"
        for path, entry in explained.items()
        if isinstance(entry, dict)
    }


def cost_change(old: RunInfo | None, new: RunInfo | None) -> str | None:
    """`input tokens +12%, output tokens -38%` between two runs that both recorded usage, else None."""
    before = old.usage_totals() if old else None
    after = new.usage_totals() if new else None
    if not before or not after:
        return None
    parts = []
    for key, words in (("input_tokens", "input tokens"), ("output_tokens", "output tokens"), ("latency_ms", "latency")):
        if before.get(key) and key in after:
            parts.append(f"{words} {(after[key] - before[key]) / before[key]:+.0%}")
    return ", ".join(parts) or None


def sources_line(info: RunInfo | None) -> str:
    """Where a run's outputs came from, as one sentence (`not recorded` for a run saved before runs said)."""
    if info is None:
        return "where its outputs came from is not recorded (saved before runs said)"
    return "; ".join(info.origins()) or "no cases"


def provenance_lines(old: RunInfo | None, new: RunInfo | None, quality: str | None = None) -> list[str]:
    """Where each of two compared runs' outputs came from, and quality beside cost.

    When both runs recorded their model use, one line puts `quality` (e.g. `overall +0.027,
    currency F1 -0.111`) beside how the tokens moved, so a cheaper model is chosen knowingly.
    Runs saved by code of one's own, not by `score`, say nothing: no lines.
    """
    if old is None and new is None:
        return []
    lines = [f"old outputs: {sources_line(old)}", f"new outputs: {sources_line(new)}"]
    change = cost_change(old, new)
    if change:
        lines.append(
            f"quality beside cost, new against old: {quality}; {change}"
            if quality
            else f"model use, new against old: {change}"
        )
    return lines


def read_run_info(data: dict[str, Any] | None) -> RunInfo | None:
    """The run object of a saved report's or a results header's JSON, None when it has none.

    Raises:
        RunInfoError: Naming the first field that is not what `score` writes (a negative token
            count: `field 'run.cases.doc-1.usage.input_tokens': is -5; it must be ...`).
    """
    if not isinstance(data, dict) or not isinstance(data.get(RUN_KEY), dict):
        return None
    try:
        return RunInfo.model_validate(data[RUN_KEY])
    except ValidationError as exc:
        field, problem = validation_problem(exc, prefix=(RUN_KEY,))
        raise RunInfoError(f"field '{field}': {problem}") from None
