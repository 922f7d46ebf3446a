"""What `compare BASELINE CANDIDATE CANDIDATE ...` does with two or more candidates: one leaderboard.

    gates = check(request)                  # 1. rules, every run file, the --json path (standard library only)
    chosen = choose(request, gates)         # 2. read each run once, refuse other rules, build the board, gate each
    save(request, chosen)                   # 3. the --json verdicts, when asked
    text(chosen)                            # 4. what the command prints

With one candidate `compare` is `fieldeval.flows.compare`, unchanged. The leaderboard itself (the
family band, the frontier, the recommendation) is `fieldeval.compare.candidates`; this module only
reads, gates, writes and prints. Refusals are `Refused` (step 1) or the readers' own errors, as in
`fieldeval.flows.compare`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fieldeval.compare.gates import GateError, GateResult, parse_gate
from fieldeval.compare.params import JOINT, PER_FIELD, check_run_file
from fieldeval.flows import Refused
from fieldeval.outputs import OutputError, check_outputs

if TYPE_CHECKING:
    import pandas as pd

    from fieldeval.compare.candidates import Leaderboard
    from fieldeval.compare.gates import Gate
    from fieldeval.flows.compare import CompareRequest


@dataclass
class Chosen:
    """The leaderboard, each candidate's gate results (by run, in order), and how the runs' scoring differs."""

    board: Leaderboard
    results: dict[str, list[GateResult]]
    scoring: list[str]

    @property
    def passed(self) -> bool:
        """Whether the recommended run passes every gate: what the exit code reports.

        With no gate, True. With gates and no recommendation (nothing could be priced), False: no run
        was chosen to pass them. The baseline, when recommended, is gated against itself.
        """
        if not any(self.results.values()):
            return True
        recommended = self.board.recommended
        return recommended is not None and all(result.passed for result in self.results[recommended])


def runs(request: CompareRequest) -> list[Path]:
    """The baseline, then every candidate, as given."""
    return [request.old, request.new, *request.more]


# 1. Check ------------------------------------------------------------------------------------------


def check(request: CompareRequest) -> list[Gate]:
    """Parse the rules, find every run, refuse a run named twice and the --json path overlapping an input."""
    try:
        gates = [parse_gate(rule) for rule in request.gate]
        paths = runs(request)
        for path in paths:
            check_run_file(path)
        seen: dict[Path, Path] = {}
        for path in paths:
            key = path.resolve()
            if key in seen:
                raise Refused(
                    f"{path} is named twice (as {seen[key]} and {path}); name each run once: the leaderboard "
                    "and --json know a run by its path"
                )
            seen[key] = path
        if request.intervals == PER_FIELD:
            raise Refused(
                f"--intervals {PER_FIELD} reads each field's own interval, and with several candidates every "
                "verdict and gate reads the family's joint band (one guarantee over every candidate and field); "
                "drop --intervals, or compare one candidate at a time"
            )
        if request.json is not None:
            inputs: dict[str, Path | None] = {"the baseline run": request.old, "--prices": request.prices}
            inputs.update({f"the candidate run {path}": path for path in paths[1:]})
            check_outputs({"--json": request.json}, inputs)
    except (OSError, GateError, OutputError) as exc:
        raise Refused(str(exc)) from exc
    return gates


# 2. Choose -----------------------------------------------------------------------------------------


def choose(request: CompareRequest, gates: list[Gate]) -> Chosen:
    """Read every run once, refuse one scored by other rules than the baseline, build the board, gate each run."""
    from fieldeval.compare import candidates
    from fieldeval.compare.gates import evaluate_gates, interval_targets
    from fieldeval.compare.reading import read_run_file
    from fieldeval.compare.runs import compare_runs
    from fieldeval.compare.scoring_rules import check_same_scoring
    from fieldeval.formats.prices import read_prices

    prices = read_prices(request.prices) if request.prices is not None else None
    baseline = read_run_file(request.old)
    others = [read_run_file(path, names_like=baseline) for path in runs(request)[1:]]  # one name lookup for all
    scoring = []
    for path, run in zip(runs(request)[1:], others, strict=True):
        differences = check_same_scoring(
            baseline.info, run.info, (str(request.old), str(path)), request.allow_scoring_change
        )
        scoring += differences
    board = candidates.build(
        baseline,
        others,
        resamples=request.resamples,
        seed=request.seed,
        confidence=request.confidence,
        prices=prices,
        gated=[gate.target for gate in gates],
    )
    results: dict[str, list[GateResult]] = {}
    family = board.family.runs * board.family.targets
    if gates:
        ends = interval_targets(gates)
        for row, comparison in zip(board.candidates, board.comparisons, strict=True):
            band = {target: row.changes[target] for target in ends if target in row.changes}
            results[row.run] = evaluate_gates(gates, comparison, intervals=JOINT, band=band, family=family)
        itself = compare_runs(
            baseline, baseline, resamples=request.resamples, seed=request.seed, confidence=request.confidence
        )
        results = {board.baseline.run: evaluate_gates(gates, itself, intervals=JOINT), **results}
    return Chosen(board, results, list(dict.fromkeys(scoring)))


# 3. Save -------------------------------------------------------------------------------------------


def save(request: CompareRequest, chosen: Chosen) -> None:
    """The leaderboard's verdicts (`Leaderboard.to_json`) with each run's gate results, written in one step."""
    import json

    from fieldeval.compare.gates import gate_records
    from fieldeval.files import write_text_atomically

    assert request.json is not None
    record = chosen.board.to_json()
    confidence = chosen.board.family.confidence
    for entry in [record["baseline"], *record["candidates"]]:
        entry["gates"] = gate_records(chosen.results.get(entry["run"], []), confidence)
    record["scoring_differences"] = chosen.scoring
    record["passed"] = chosen.passed
    try:
        write_text_atomically(request.json, json.dumps(record, indent=2) + "\n")
    except OSError as exc:
        raise OSError(f"--json {request.json}: could not write ({exc.strerror or exc}); nothing was written") from None


# 4. Text -------------------------------------------------------------------------------------------


def text(chosen: Chosen) -> str:
    """Everything the command prints for several candidates."""
    from fieldeval.compare.gates import runs_gates
    from fieldeval.compare.leaderboard import family_line, leaderboard_table, verdict_table
    from fieldeval.compare.scoring_rules import marked

    board = chosen.board

    def show(table: pd.DataFrame) -> str:
        return table.to_string(index=False, float_format=lambda value: f"{value:.3f}")

    first = board.comparisons[0]
    parts = [
        *([marked(chosen.scoring)] if chosen.scoring else []),
        f"baseline: {board.baseline.run}  candidates: {', '.join(row.run for row in board.candidates)}",
        f"paired {len(first.pairing.cases)} cases, the same in every run; left out {len(first.pairing.excluded)}",
        *([show(first.pairing.table())] if first.pairing.excluded else []),
        family_line(board),
        "",
        "Leaderboard",
        show(leaderboard_table(board)),
    ]
    unpriced = [f"{row.run}: {row.cost_note}" for row in board.rows if not row.priced]
    if unpriced:
        parts.append(f"not priced, so not placed: {'; '.join(unpriced)}")
    dominated = [f"{row.run} by {', '.join(row.dominated_by)}" for row in board.rows if row.dominated_by]
    if dominated:
        parts.append(f"off the frontier (costs no less, no better on any target): {'; '.join(dominated)}")
    parts += [
        "",
        "Changes against the baseline (family intervals)",
        show(verdict_table(board)),
        "",
        f"Recommended: {board.reason}",
    ]
    table, line = runs_gates(chosen.results, board.recommended, chosen.passed)
    if table is not None:
        parts += [
            "",
            "Gates, on each run (interval ends read from the family band; the baseline against itself)",
            show(table),
            line,
        ]
    return "\n".join(parts)
