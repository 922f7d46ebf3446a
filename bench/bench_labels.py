"""Benchmark: how many seeded label errors the label audit finds within a review budget, beside cost alone.

    python -m bench.bench_labels                 300 documents, label errors in 1%, 2% and 5% of leaves
    python -m bench.bench_labels --documents 1000
    python -m bench.bench_labels --quick         40 documents, 2% only (CI)

Data: simulated by `walkthroughs.simulated_labels` (no model is called): invoices with label errors
seeded into a share of their leaves, read by four runs that misread 3%, 6%, 10% and 15% of the
leaves, each error drawn independently, amounts read within their tolerance half the time. Each
run is scored by `eval-score` (`fieldeval.commands.score.main`, in this process, with
`walkthroughs.invoices:Invoice`) and the saved runs are audited by `eval-labels`' own flow
(`fieldeval.flows.labels.labels_run`, with `--schema`).

For a review budget of K leaves (K = the number of seeded errors, and twice that) it prints the
precision (seeded errors among the leaves reviewed) and recall (seeded errors found) of the
audit's ranking, beside ranking every leaf any run lost points on by its cost summed over the
runs. The last scenario is where consensus fails: on 5% of documents every run returns the due
date as the invoice date (one shared error) against a correct label; those leaves are suspects
as well, and the audit cannot tell them from label errors. It exits 1 if the audit's checks fail
(no suspect lies outside what the runs lost points on).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.timing import QUICK_NOTE, add_quick
from fieldeval.attribution.labels import read_run
from fieldeval.commands import exits, score
from fieldeval.flows.labels import LabelsRequest, labels_run
from walkthroughs.simulated_labels import DOCUMENTS, LABEL_ERROR_RATES, PROFILES, SHARED, simulate

SCHEMA = "walkthroughs.invoices:Invoice"


def scored(folder: Path, documents: int, rate: float, shared: float) -> tuple[Path, list[Path], frozenset, int]:
    """The simulated set written and each run scored by the score command; the case file, runs, seeded, leaves."""
    simulated = simulate(documents, rate, PROFILES, shared)
    cases, predictions = simulated.write(folder)
    runs = []
    for index, answers in enumerate(predictions):
        run = folder / f"run{index}.json"
        printed = io.StringIO()
        argv = ["--schema", SCHEMA, "--cases", str(cases), "--predictions", str(answers), "--out", str(run)]
        if score.main(argv, out=printed) != exits.OK:
            raise SystemExit(f"scoring failed:\n{printed.getvalue()}")
        runs.append(run)
    return cases, runs, simulated.seeded, simulated.leaves


def by_cost(runs: list[Path]) -> list[tuple[str, str]]:
    """Every leaf any run lost points on, ranked by its cost summed over the runs (then by case and path)."""
    costs: dict[tuple[str, str], float] = {}
    for path in runs:
        for document in read_run(path).diffs.documents:
            for leaf in document.leaves:
                if not leaf.path.endswith("]") and leaf.kind != "unreadable":
                    key = (document.name, leaf.path)
                    costs[key] = costs.get(key, 0.0) + (leaf.cost or 0.0)
    return sorted(costs, key=lambda key: (-costs[key], key))


def at(ranking: list[tuple[str, str]], seeded: frozenset, budget: int) -> tuple[float, float]:
    """Precision and recall of the first `budget` leaves of a ranking (precision over the leaves it has)."""
    reviewed = ranking[:budget]
    hits = sum(1 for leaf in reviewed if leaf in seeded)
    return (hits / len(reviewed) if reviewed else 0.0), (hits / len(seeded) if seeded else 0.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=DOCUMENTS, help="simulated invoices (default %(default)s)")
    add_quick(parser)
    args = parser.parse_args()
    documents = 40 if args.quick else args.documents
    scenarios = [(rate, 0.0) for rate in ((0.02,) if args.quick else LABEL_ERROR_RATES)]
    scenarios.append((0.02, SHARED))
    if args.quick:
        print(QUICK_NOTE)
    print(
        f"{documents} simulated invoices; {len(PROFILES)} runs misreading "
        f"{', '.join(f'{p:.0%}' for p in PROFILES)} of leaves; review budget K in leaves"
    )
    columns = f"{'label errors':>12} {'shared':>6} {'seeded':>6} {'suspects':>8} {'K':>4}"
    print(f"{columns}   {'audit P / R':>13}   {'cost P / R':>13}")
    failed = False
    for rate, shared in scenarios:
        with tempfile.TemporaryDirectory(prefix="bench-labels-") as folder:
            started = time.perf_counter()
            cases, runs, seeded, leaves = scored(Path(folder), documents, rate, shared)
            scoring = time.perf_counter() - started
            started = time.perf_counter()
            audited = labels_run(LabelsRequest(cases=cases, runs=runs, schema=SCHEMA))
            auditing = time.perf_counter() - started
            ranking = [(row["case"], row["path"]) for row in map(json.loads, audited.lines)]
            costly = by_cost(runs)
            failed |= not set(ranking) <= set(costly)
            for budget in (len(seeded), 2 * len(seeded)):
                audit_p, audit_r = at(ranking, seeded, budget)
                cost_p, cost_r = at(costly, seeded, budget)
                print(
                    f"{rate:>12.0%} {shared:>6.0%} {len(seeded):>6} {len(ranking):>8} {budget:>4}   "
                    f"{audit_p:>5.2f} / {audit_r:>5.2f}   {cost_p:>5.2f} / {cost_r:>5.2f}"
                )
            print(f"{'':>12} ({leaves} leaves; scoring {scoring:.1f} s, audit {auditing:.2f} s, one draw)")
    print(
        "audit: eval-labels' ranking (runs agreeing against the label, then cost); cost: every leaf a run lost "
        "points on, by its summed cost; P = seeded errors among the K reviewed, R = seeded errors found"
    )
    if failed:
        print("FAILED: a suspect lies outside what the runs lost points on", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
