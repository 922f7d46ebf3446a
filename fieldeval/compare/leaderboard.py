"""A leaderboard as the tables and the line `compare` prints and the report shows, one formatting of each.

`fieldeval.flows.candidates` prints them and `fieldeval.report.board` puts them on the page, so a
number is written the same way on every screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fieldeval.compare.candidates import BONFERRONI, Leaderboard, Row

if TYPE_CHECKING:
    import pandas as pd

# The largest family-wise false-verdict rate `bench/bench_candidates.py` measured at a stated 5% (COMPARING.md)
MEASURED = "5.5%"


def _seconds(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:,.2f}"


def leaderboard_table(board: Leaderboard) -> pd.DataFrame:
    """One row per run: the overall change, its verdicts counted, the worst field, tokens, cost, latency, frontier."""
    import pandas as pd

    def line(row: Row) -> dict[str, object]:
        overall = row.overall
        return {
            "run": row.run + (" (baseline)" if row.baseline else ""),
            "model": row.model_id or "not recorded",
            "overall delta": "baseline" if overall is None else f"{overall.estimate:+.3f}",
            "interval": "" if overall is None else f"[{overall.low:+.3f}, {overall.high:+.3f}]",
            "regressed": "" if row.baseline else len(row.verdicts("regressed")),
            "improved": "" if row.baseline else len(row.verdicts("improved")),
            "worst field": "" if row.baseline else (row.worst or "none fell"),
            "tokens/doc": "not recorded" if row.tokens_per_document is None else f"{row.tokens_per_document:,.0f}",
            "cost/1,000 docs": "not priced" if row.cost_per_1000 is None else f"{row.cost_per_1000:,.4f}",
            "latency p50 s": _seconds(row.latency_p50_s),
            "p95 s": _seconds(row.latency_p95_s),
            "wall s": _seconds(row.wall_s),
            "frontier": "not priced" if not row.priced else ("yes" if row.frontier else "no"),
        }

    return pd.DataFrame([line(row) for row in board.rows])


def verdict_table(board: Leaderboard) -> pd.DataFrame:
    """One row per target (overall, each field's F1, gated targets), one column per candidate: change, interval,
    verdict."""
    import pandas as pd

    rows = []
    for target in board.targets:
        line: dict[str, str] = {"target": target}
        for row in board.candidates:
            change = row.changes.get(target)
            line[row.run] = (
                "not scored"
                if change is None
                else f"{change.estimate:+.3f} [{change.low:+.3f}, {change.high:+.3f}] {change.verdict}"
            )
        rows.append(line)
    return pd.DataFrame(rows)


def family_line(board: Leaderboard) -> str:
    """What the family guarantee covers, in one sentence: the band, its level, and what the simulation measured."""
    family = board.family
    level = f"{family.level:.2%}".replace(".00%", "%")
    intervals = family.runs * family.targets
    if family.band == BONFERRONI:
        read = (
            f"{family.varying} of them vary, each the estimate +- z x its bootstrap standard error read at {level}, "
            f"Bonferroni over the {family.varying}"
        )
        holds = (
            f"all hold together at least {family.confidence:.0%} of the time; at 95%, simulated leaderboards "
            f'under no change showed a false "regressed" or "improved" in at most {MEASURED}, within 5% and its '
            "Monte Carlo error (COMPARING.md, Several candidates)"
        )
    else:
        read = f"each its percentile interval read at {level}"
        holds = "the calibrated band of one candidate"
    return (
        f"Family: {family.confidence:.0%} joint over {family.runs} candidates x {family.targets} targets "
        f"({intervals} intervals, {read}; paired bootstrap over the same {family.documents} documents and the same "
        f"resamples, {family.resamples} resamples, seed {family.seed}): {holds}"
    )
