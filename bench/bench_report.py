"""Benchmark: what failures by kind cost the compact results file, and what a 10,000-document page weighs.

    python bench/bench_report.py [--documents 200] [--items 4] [--rounds 3]
    python bench/bench_report.py --items 20        the 20-line-item figure SCORING_AT_SCALE quotes
    python bench/bench_report.py --quick           20 documents and a 200-document page, one round (CI)

Data: simulated, generated here from seeds (`walkthroughs.simulated_large`: invoices with a
`--items` line items each and the simulated error rates), scored once through the harness.

Figures, each the CPU time of this process (what other load on a shared machine does not
inflate), the median of `--rounds` interleaved rounds with its range (`bench.timing`):

- scoring: `score_outputs_sync` of the same documents (what every run pays), the peer;
- rows: `rows_from_report(report)` (the per-document counts, as before), the floor;
- rows + failures: `rows_from_report(report, spec)`, which also reads each document's failures by
  kind from its counts and, where the counts and field scores leave a leaf unexplained (a list item
  below the threshold, or a list scoring below what its counts allow), walks that document for
  the leaves that pulled each item under and the partial matches;
- page: `fieldeval.report.page.render` of a run of `--page-documents` (10,000) documents with two
  wrong leaves each, against `json.dumps` of the same document rows (the part of the page that
  grows with the run); and the page's size in bytes.

Each ratio is of the medians, with the range of the same round's ratios.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.timing import MIN_ROUNDS, QUICK_NOTE, QUICK_ROUNDS, add_quick, interleaved, least_rounds, median, spread


def ranged(values: list[float]) -> str:
    """A share as `median% (min%-max%)`."""
    return f"{median(values):.0%} ({min(values):.0%}-{max(values):.0%})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--items", type=int, default=4, help="line items per document")
    parser.add_argument("--page-documents", type=int, default=10_000, help="documents of the report page")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help=f"interleaved rounds, at least {MIN_ROUNDS}")
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    if args.quick:
        args.documents, args.page_documents, args.rounds = 20, 200, QUICK_ROUNDS
        print(QUICK_NOTE)

    import stickler
    from strands_evals.evaluators import StructuredOutputSimilarity

    from fieldeval.harness.results import rows_from_report
    from fieldeval.harness.scoring import score_outputs_sync
    from fieldeval.report.page import render
    from walkthroughs.invoices import Invoice
    from walkthroughs.simulated_large import simulated_run
    from walkthroughs.simulated_report import synthetic_content

    pairs = list(simulated_run(args.documents, items=args.items))
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    evaluator = StructuredOutputSimilarity(Invoice)
    report = score_outputs_sync(cases, outputs, evaluator)
    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    content = synthetic_content(args.page_documents)
    runs = {
        "scoring": lambda: score_outputs_sync(cases, outputs, evaluator),
        "rows": lambda: list(rows_from_report(report)),
        "rows + failures": lambda: list(rows_from_report(report, spec)),
        "page": lambda: render(content),
        "json floor": lambda: json.dumps(content.documents, separators=(",", ":")),
    }
    figures = interleaved(args.rounds, runs, least_rounds(args.quick), clock=time.process_time)
    missed = sum(1 for row in rows_from_report(report, spec) if row.failures)
    shape = f"{args.documents} simulated documents of {args.items} line items"
    print(f"{shape} ({missed} with a miss); CPU seconds, the median of {args.rounds} interleaved round(s) (range)")
    for name, samples in figures.items():
        print(f"  {name:16} {spread(samples, 3)} s")
    rounds = range(args.rounds)
    slower = [figures["rows + failures"][i] / figures["rows"][i] for i in rounds]
    added = [(figures["rows + failures"][i] - figures["rows"][i]) / figures["scoring"][i] for i in rounds]
    page = [figures["page"][i] / figures["json floor"][i] for i in rounds]
    ratio = median(figures["rows + failures"]) / median(figures["rows"])
    extra = (median(figures["rows + failures"]) - median(figures["rows"])) / median(figures["scoring"])
    print(
        f"rows with failures / rows: {ratio:.1f}x ({min(slower):.1f}-{max(slower):.1f}x); "
        f"the failures add {extra:.0%} to the scoring time ({min(added):.0%}-{max(added):.0%} by round)"
    )
    page_ratio = median(figures["page"]) / median(figures["json floor"])
    print(
        f"{args.page_documents:,}-document page / json.dumps of its rows: {page_ratio:.1f}x "
        f"({min(page):.1f}-{max(page):.1f}x); {len(render(content).encode()):,} bytes"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
