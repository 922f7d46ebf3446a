"""What one `compare` run does, in order: the recipe `python -m fieldeval.commands.compare` follows.

    gates = check(request)                  # 1. rules, run files and the --json path (standard library only)
    compared = compare(request, gates)      # 2. read both runs, refuse different scoring rules, pair, resample, gate
    save(request, compared)                 # 3. the --json record, when asked
    text(compared, request.top, prices)     # 4. what the command prints

`compare_run` is that recipe. Step 1 refuses with `Refused` (exit 2, nothing written); step 2
with the readers' own errors (`fieldeval.compare.params.CompareError`, an `OSError` for a file that
cannot be read), which the command also reads as bad input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fieldeval.compare.gates import GateError, GateResult, gates_table, interval_note, parse_gate
from fieldeval.compare.params import CONFIDENCE, JOINT, RESAMPLES, SEED, check_run_file
from fieldeval.flows import Refused, Request
from fieldeval.outputs import OutputError, check_outputs

if TYPE_CHECKING:
    import pandas as pd

    from fieldeval.compare.gates import Gate
    from fieldeval.compare.runs import Comparison


@dataclass(frozen=True)
class CompareRequest(Request):
    """Everything a `compare` run was asked, as the command line gave it (ranges already checked)."""

    old: Path
    new: Path
    more: Sequence[Path] = ()  # further candidates: a leaderboard (`fieldeval.flows.candidates`)
    gate: Sequence[str] = ()
    resamples: int = RESAMPLES
    seed: int = SEED
    confidence: float = CONFIDENCE
    intervals: str = JOINT
    prices: Path | None = None
    top: int = 5
    json: Path | None = None
    allow_scoring_change: bool = False


@dataclass
class Compared:
    """What step 2 produced: the comparison, each gate's result, and the per-field table the gates read."""

    comparison: Comparison
    results: list[GateResult]
    fields: pd.DataFrame
    prices: dict | None = None
    scoring: list[str] = field(default_factory=list)  # how the runs' scoring rules differ (--allow-scoring-change)

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)


def compare_run(request: CompareRequest) -> Compared:
    """The recipe: check, compare, save."""
    gates = check(request)
    compared = compare(request, gates)
    if request.json is not None:
        save(request, compared)
    return compared


# 1. Check ------------------------------------------------------------------------------------------


def check(request: CompareRequest) -> list[Gate]:
    """Parse the rules, find both runs and check the --json path, before numpy or pandas load."""
    try:
        gates = [parse_gate(rule) for rule in request.gate]
        for path in (request.old, request.new):
            check_run_file(path)
        if request.json is not None:
            inputs = {"the old run": request.old, "the new run": request.new, "--prices": request.prices}
            check_outputs({"--json": request.json}, inputs)
    except (OSError, GateError, OutputError) as exc:
        raise Refused(str(exc)) from exc
    return gates


# 2. Compare ----------------------------------------------------------------------------------------


def compare(request: CompareRequest, gates: list[Gate]) -> Compared:
    """Read both runs, refuse two scored by different rules, compare them over the cases they share, apply the gates."""
    from fieldeval.compare.gates import evaluate_gates, gated_intervals
    from fieldeval.compare.reading import read_run_file
    from fieldeval.compare.runs import compare_runs
    from fieldeval.compare.scoring_rules import check_same_scoring
    from fieldeval.formats.prices import read_prices

    old = read_run_file(request.old)
    new = read_run_file(request.new, names_like=old)  # one name lookup for both, when the names agree
    names = (str(request.old), str(request.new))
    scoring = check_same_scoring(old.info, new.info, names, request.allow_scoring_change)
    comparison = compare_runs(old, new, resamples=request.resamples, seed=request.seed, confidence=request.confidence)
    results = evaluate_gates(gates, comparison, intervals=request.intervals)
    prices = read_prices(request.prices) if request.prices is not None else None
    # once: on many paths each call re-draws evicted chunks of resampled sums; gated rows print what their gate read
    fields = comparison.field_table(gated=gated_intervals(results))
    return Compared(comparison, results, fields, prices, scoring)


# 3. Save -------------------------------------------------------------------------------------------


def save(request: CompareRequest, compared: Compared) -> None:
    """The comparison's overall row, its per-field changes and the gate results, written in one step."""
    import json

    from fieldeval.compare.gates import gate_records, gated_intervals
    from fieldeval.files import write_text_atomically

    assert request.json is not None
    comparison, results = compared.comparison, compared.results
    overall = gated_intervals(results).get("overall") or comparison.delta("overall")
    record = {
        "old": comparison.old_run.source,
        "new": comparison.new_run.source,
        "paired_cases": len(comparison.pairing.cases),
        "resamples": comparison.resamples,
        "seed": comparison.seed,
        "confidence": comparison.confidence,
        "interval_mode": request.intervals,
        "scoring_differences": compared.scoring,  # empty, unless --allow-scoring-change let different rules through
        "overall": {"delta": overall.estimate, "low": overall.low, "high": overall.high, "verdict": overall.verdict},
        "fields": compared.fields.to_dict(orient="records"),
        "gates": gate_records(results, comparison.confidence),
    }
    try:
        write_text_atomically(request.json, json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise OSError(f"--json {request.json}: could not write ({exc.strerror or exc}); nothing was written") from None


# 4. Text -------------------------------------------------------------------------------------------


def provenance(comparison: Comparison, fields: pd.DataFrame, prices: dict | None = None) -> list[str]:
    """Where each run's outputs came from, quality beside cost, and the money, given a price table."""
    from fieldeval.formats.prices import cost_line
    from fieldeval.formats.run_info import provenance_lines

    old, new = comparison.old_run.info, comparison.new_run.info
    lines = provenance_lines(old, new, comparison.headline(fields))
    if prices is not None and lines:
        lines += [f"old {cost_line(old, prices)}; new {cost_line(new, prices)}"]
    return lines


def text(
    comparison: Comparison,
    results: Sequence[GateResult],
    top: int = 5,
    fields: pd.DataFrame | None = None,
    prices: dict | None = None,
    scoring: Sequence[str] = (),
) -> str:
    """Everything the command line prints, as plain text (`fields`: the field table, if already computed;
    `scoring`: how the runs' scoring rules differ, said first)."""
    from fieldeval.compare.gates import gated_intervals
    from fieldeval.compare.scoring_rules import marked

    old_run, new_run = comparison.old_run, comparison.new_run
    gated = gated_intervals(results)
    fields = comparison.field_table(gated=gated) if fields is None else fields

    def show(table: pd.DataFrame) -> str:
        return table.to_string(index=False, float_format=lambda value: f"{value:.3f}")

    level = f"{comparison.confidence:.0%}"
    parts = [
        *([marked(list(scoring))] if scoring else []),
        f"old: {old_run.source}  new: {new_run.source}",
        f"paired {len(comparison.pairing.cases)} cases; left out {len(comparison.pairing.excluded)}",
        *provenance(comparison, fields, prices),
    ]
    if comparison.pairing.excluded:
        parts.append(show(comparison.pairing.table()))
    unreadable = [run.columns.unreadable(comparison.pairing.cases) for run in (old_run, new_run)]
    if any(unreadable):
        parts.append(
            f"outputs not readable as the schema (scored 0, no field counts): old {unreadable[0]}, new {unreadable[1]}"
        )
    parts += [
        "",
        f"Overall ({level} paired bootstrap over documents, {comparison.resamples} resamples, seed {comparison.seed})",
        show(comparison.overall_table(gated)),
        "",
        "Per field",
        show(fields),
        "",
        f"Documents that moved most (top {top})",
        show(comparison.movers(limit=top)),
    ]
    if results:
        failed = sum(not result.passed for result in results)
        parts += ["", f"Gates: {len(results) - failed} passed, {failed} failed"]
        note = interval_note(results, comparison.confidence)
        parts += [note] if note else []
        parts.append(show(gates_table(results)))
    return "\n".join(parts)


def compared_text(compared: Compared, top: int = 5) -> str:
    """What the command prints for a finished comparison."""
    return text(
        compared.comparison,
        compared.results,
        top=top,
        fields=compared.fields,
        prices=compared.prices,
        scoring=compared.scoring,
    )
