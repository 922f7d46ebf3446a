"""Check: the stickler speed-up gives byte-identical numbers on every fixture and 10,000 random documents.

    python -m bench.bench_stickler_identity                     10,000 random documents (about 5 minutes on 2 cores)
    python -m bench.bench_stickler_identity --documents 2000    fewer
    python -m bench.bench_stickler_identity --quick             every fixture and 50 random documents (CI)

`fieldeval.harness.fast_stickler.differences` scores each set twice, with stickler as shipped and
with the speed-up, and compares byte for byte the saved report (every score, verdict, reason,
field score and raw comparison with its counts), the rollups (`report.metrics()`) and each
document's `non_matches`. The sets: every fixture the project scores with stickler
(`walkthroughs.identity_runs.fixture_runs`) and `--documents` SIMULATED random `Shipment`
documents with nested lists (`random_run`), checked in chunks on two processes. It also prints
the time each side took. `tests/harness/test_fast_stickler.py` runs the same check on a small sample.

Exit code 1 if anything differs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from importlib.metadata import version

from bench.timing import QUICK_NOTE, add_quick
from fieldeval.harness import fast_stickler
from walkthroughs.identity_runs import Shipment, fixture_runs, random_run

CHUNK = 250


def check_chunk(start: int, count: int) -> tuple[list[str], float, float]:
    """Differences in random documents `start .. start + count - 1`, and the seconds each side took."""
    timings: dict[str, float] = {}
    differing = fast_stickler.differences(list(random_run(count, start=start)), Shipment, timings)
    return differing, timings["shipped"], timings["sped_up"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--processes", type=int, default=2)
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.documents = 50
        print(QUICK_NOTE)
    print(f"stickler-eval {version('stickler-eval')} (the speed-up was verified on {fast_stickler.VERIFIED_VERSION})")
    failed = False
    for name, pairs, model in fixture_runs():
        differing = fast_stickler.differences(pairs, model)
        failed |= bool(differing)
        verdict = "identical" if not differing else "DIFFER: " + ", ".join(differing)
        print(f"  {name:<42} {len(pairs):>5} documents  {verdict}")
    starts = range(0, args.documents, CHUNK)
    counts = [min(CHUNK, args.documents - start) for start in starts]
    context = multiprocessing.get_context("spawn")
    differing, shipped, fast = [], 0.0, 0.0
    with ProcessPoolExecutor(args.processes, mp_context=context) as pool:
        for chunk_differing, chunk_shipped, chunk_fast in pool.map(check_chunk, starts, counts):
            differing += chunk_differing
            shipped += chunk_shipped
            fast += chunk_fast
    failed |= bool(differing)
    verdict = "identical" if not differing else f"{len(differing)} DIFFER: {', '.join(differing[:10])}"
    print(f"  {'random documents with nested lists':<42} {args.documents:>5} documents  {verdict}")
    print(
        f"  scoring time of the random documents (one snapshot each, summed over processes): shipped {shipped:.1f} s, "
        f"sped up {fast:.1f} s ({shipped / fast:.2f}x)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
