"""Benchmark: `score` in one process, on 2 local workers and on a local Dask cluster, against the bare stickler loop.

    python -m bench.bench_scale                       every size below, 3 rounds (about 6-10 minutes on 2 cores)
    python -m bench.bench_scale --sizes 20:1000       pick sizes as items:documents
    python -m bench.bench_scale --rounds 5

Data: the seeded SIMULATED invoices of `walkthroughs.simulated_large` (nothing recorded),
with N line items each and the simulated extractor's mistakes.

The floor is the bare stickler loop: `eval_for(Invoice).evaluate(truth, prediction)` over the
same documents, already read and validated (stickler as shipped). Beside it, each as the score
command runs it on the same documents (reading and validation are the same for all, and
imports are not counted):

- `score`, stickler as shipped: `score_stored` (the report Experiment builds, scored in one
  thread) with the speed-up held off, so the harness's own cost shows (target: 1.05x);
- `score`: the same with `helpers.harness.fast_stickler` on (what the command runs);
- `--workers 2` and `--cluster local` (2 workers): `score_at_scale` as the command calls it,
  engine start-up included, with the size rule deciding (a run too small is scored in one
  process; the rows say which it chose).

Medians of `--rounds` interleaved rounds, with the range. The sizes include a small run
(20 items, 100 documents), where start-up dominates. Default sizes are chosen to finish in
minutes on 2 cores: 1:1000, 5:400, 20:1000, 50:120, small 20:100.

Then, each in a fresh process: the start-up of a worker (the imports of `helpers.scale.batches`,
with and without jsonschema's optional `rfc3987_syntax`) against `import pydantic, stickler`,
and the peak resident memory of `python -m helpers.score` on 1,000 documents of 20 items to a
compact results file, in one process and with `--workers 2` (driver and largest worker).

Exit code 1 if any report differs from the bare loop's scores or from one process's report.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from stickler import eval_for
from strands_evals.evaluators import StructuredOutputSimilarity

from bench.timing import interleaved, median, ratio_spread, spread
from helpers.harness import fast_stickler
from helpers.harness.scoring import score_stored
from helpers.scale.batches import Scorer
from helpers.scale.run import score_at_scale
from walkthroughs.invoices import Invoice
from walkthroughs.simulated_large import SCHEMA, simulated_run

DEFAULT_SIZES = "1:1000,5:400,20:1000,50:120,20:100"
FLOOR = "bare stickler loop"


class _Quiet:
    def start(self, total, engine):
        self.engine = engine

    def advance(self, documents, failed=0):
        pass

    def finish(self):
        pass


def runs_for(pairs: list, engines: dict) -> dict:
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    spec = eval_for(Invoice)
    evaluator = StructuredOutputSimilarity(Invoice)
    kept: dict = {}

    def bare():
        with fast_stickler.shipped():
            kept[FLOOR] = [spec.evaluate(case.expected_output, output).overall_score for case, output in pairs]

    def shipped():
        with fast_stickler.shipped():
            kept["shipped"] = score_stored(cases, outputs, evaluator)

    def fast():
        kept["score"] = score_stored(cases, outputs, evaluator)

    def scaled(workers, cluster):
        def run():
            quiet = _Quiet()
            report = score_at_scale(pairs, Scorer(SCHEMA), workers=workers, cluster=cluster, progress=quiet).report
            kept[(workers, cluster)] = report
            engines[(workers, cluster)] = quiet.engine

        return run

    return kept, {
        FLOOR: bare,
        "score, stickler as shipped": shipped,
        "score": fast,
        "--workers 2": scaled(2, None),
        "--cluster local (2)": scaled(2, "local"),
    }


def speed(sizes: list[tuple[int, int]], rounds: int) -> bool:
    print(f"\n== seconds per run: median of {rounds} interleaved rounds (range); load {_load()}")
    workloads = {(items, count): list(simulated_run(count, items)) for items, count in sizes}
    engines: dict = {}
    plans = {size: runs_for(pairs, engines) for size, pairs in workloads.items()}
    seconds: dict = {size: {name: [] for name in plans[size][1]} for size in workloads}
    for _ in range(rounds):  # every size and every run takes its turn in each round
        for size, (_, runs) in plans.items():
            for name, values in interleaved(1, runs, minimum=1).items():
                seconds[size][name] += values
    same = True
    for (items, count), (kept, runs) in plans.items():
        floor = seconds[(items, count)][FLOOR]
        print(f"\n{items} line items, {count:,} documents ({count / median(floor):,.0f} documents/s on the floor)")
        for name in runs:
            values = seconds[(items, count)][name]
            where = ""
            if name.startswith("--"):
                key = (2, None if name.startswith("--workers") else "local")
                where = f"  [{engines[key]}]"
            ratio = ratio_spread(values, floor) + " of the floor" if name != FLOOR else ""
            print(f"  {name:<28} {spread(values):>22} s  {ratio}{where}")
        scores = kept[FLOOR]
        reference = kept["shipped"].model_dump_json()
        if kept["score"].scores != scores or kept["score"].model_dump_json() != reference:
            print("  SCORES DIFFER from the bare loop or from stickler as shipped")
            same = False
        for key in ((2, None), (2, "local")):
            if kept[key].model_dump_json() != reference:
                print(f"  REPORT DIFFERS on {engines[key]}")
                same = False
    print(f"\n   load average after: {_load()}; every report identical: {'yes' if same else 'NO'}")
    return same


def startup(rounds: int) -> None:
    print(f"\n== start-up in a fresh process, seconds: median of {rounds} interleaved rounds (range)")
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "import pydantic, stickler (floor)": [python, "-c", "import pydantic, stickler"],
        "a worker (helpers.scale.batches)": [
            python,
            "-c",
            "import sys; sys.modules['rfc3987_syntax'] = None; import helpers.scale.batches",
        ],
        "the same, rfc3987_syntax importable": [python, "-c", "import helpers.scale.batches"],
    }
    seconds = interleaved(rounds, {name: lambda c=c: subprocess.run(c, check=True) for name, c in commands.items()})
    floor = seconds["import pydantic, stickler (floor)"]
    for name, values in seconds.items():
        print(f"  {name:<40} {spread(values):>20} s  {ratio_spread(values, floor)} of the floor")


def memory(documents: int, items: int) -> None:
    print(f"\n== peak resident memory, fresh processes: score {documents:,} documents of {items} items to --results")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        cases, predictions = [], []
        for case, output in simulated_run(documents, items):
            truth = case.expected_output.model_dump(mode="json")
            cases.append(json.dumps({"name": case.name, "input": case.input, "expected_output": truth}))
            predictions.append(json.dumps({"name": case.name, "output": output.model_dump(mode="json")}))
        (root / "cases.jsonl").write_text("\n".join(cases) + "\n")
        (root / "predictions.jsonl").write_text("\n".join(predictions) + "\n")
        base = ["--schema", SCHEMA, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]
        for label, extra in (("one process", []), ("--workers 2", ["--workers", "2", "--fan-out", "always"])):
            code = (
                "import json, resource, sys\nfrom helpers.score import main\n"
                f"main({[*base, '--results', 'run.jsonl', *extra]!r}, out=open('/dev/null', 'w'))\n"
                "print(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,"
                " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
            )
            done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
            driver, child = json.loads(done.stdout.strip().splitlines()[-1])
            workers = f"; largest worker {child / 1024:.0f} MB" if extra else ""
            print(f"  {label:<12} driver {driver / 1024:.0f} MB{workers}")


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="items:documents pairs, comma separated")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (at least 3); the median is kept")
    parser.add_argument("--memory-documents", type=int, default=1000)
    args = parser.parse_args(argv)
    sizes = [tuple(int(part) for part in size.split(":")) for size in args.sizes.split(",")]
    print(
        f"bench_scale: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"stickler-eval {version('stickler-eval')}, strands-agents-evals {version('strands-agents-evals')}, "
        f"dask {version('dask')}; data: SIMULATED invoices (seeded)"
    )
    if args.rounds < 3:
        parser.error("--rounds must be at least 3")
    same = speed(sizes, args.rounds)
    startup(args.rounds)
    memory(args.memory_documents, 20)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
