"""Benchmark: what failures by kind cost the compact results file, and what a 10,000-document page weighs.

    python bench/bench_report.py [--documents 200] [--items 4] [--rounds 3]

Data: simulated, generated here from seeds (`walkthroughs.simulated_large`: invoices with a
`--items` line items each and the simulated error rates), scored once through the harness.

Figures, each the median of `--rounds` interleaved rounds with its range:

- scoring: `score_outputs_sync` of the same documents (what every run pays), the peer;
- rows: `rows_from_report(report)` (the per-document counts, as before), the floor;
- rows + failures: `rows_from_report(report, spec)`, which also reads each document's failures by
  kind from its counts and, where the counts and field scores leave a leaf unexplained (a list item
  below the threshold, or a list scoring below what its counts allow), walks that document for
  the leaves that pulled each item under and the partial matches;
- page: `helpers.report.page.render` of a run of 10,000 documents with two wrong leaves each,
  against `json.dumps` of the same document rows (the part of the page that grows with the run);
  and the page's size in bytes.

Ratios are of wall time measured in this process, in the same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def median_range(samples: list[float]) -> str:
    return f"{statistics.median(samples):.3f} s (range {min(samples):.3f}-{max(samples):.3f})"


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--items", type=int, default=4, help="line items per document")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import stickler
    from strands_evals.evaluators import StructuredOutputSimilarity

    from helpers.harness.results import rows_from_report
    from helpers.harness.scoring import score_outputs_sync
    from helpers.report.page import render
    from walkthroughs.invoices import Invoice
    from walkthroughs.simulated_large import simulated_run
    from walkthroughs.simulated_report import synthetic_content

    pairs = list(simulated_run(args.documents, items=args.items))
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    evaluator = StructuredOutputSimilarity(Invoice)
    report = score_outputs_sync(cases, outputs, evaluator)
    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    content = synthetic_content(10_000)
    figures: dict[str, list[float]] = {"scoring": [], "rows": [], "rows + failures": [], "page": [], "json floor": []}
    for _ in range(args.rounds):  # interleaved: each round measures every figure once
        figures["scoring"].append(timed(lambda: score_outputs_sync(cases, outputs, evaluator)))
        figures["rows"].append(timed(lambda: list(rows_from_report(report))))
        figures["rows + failures"].append(timed(lambda: list(rows_from_report(report, spec))))
        figures["page"].append(timed(lambda: render(content)))
        figures["json floor"].append(timed(lambda: json.dumps(content.documents, separators=(",", ":"))))
    missed = sum(1 for row in rows_from_report(report, spec) if row.failures)
    shape = f"{args.documents} simulated documents of {args.items} line items"
    print(f"{shape} ({missed} with a miss), {args.rounds} rounds")
    for name, samples in figures.items():
        print(f"  {name:16} {median_range(samples)}")
    ratio = statistics.median(figures["rows + failures"]) / statistics.median(figures["rows"])
    page = statistics.median(figures["page"]) / statistics.median(figures["json floor"])
    extra = (statistics.median(figures["rows + failures"]) - statistics.median(figures["rows"])) / statistics.median(
        figures["scoring"]
    )
    print(f"rows with failures / rows: {ratio:.1f}x; the failures add {extra:.0%} to the scoring time")
    print(f"10,000-document page / json.dumps of its rows: {page:.1f}x; {len(render(content).encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
