"""Benchmark: `score` in one process, on 2 local workers and on a local Dask cluster, against the bare stickler loop.

    python -m bench.bench_scale                       every size below, 3 rounds (long on a loaded machine)
    python -m bench.bench_scale --sizes 20:1000       pick sizes as items:documents
    python -m bench.bench_scale --rounds 5

Data: the seeded SIMULATED invoices of `walkthroughs.simulated_large` (nothing recorded),
with N line items each and the simulated extractor's mistakes.

The floor is the bare stickler loop: `eval_for(Invoice).evaluate(truth, prediction)` over the
same documents, already read and validated, stickler as shipped. Every row is its ratio to that
floor, measured in the same interleaved rounds:

- bare loop, stickler sped up: the same loop with `helpers.harness.fast_stickler` on;
- `score_stored`, stickler as shipped: the score command's scoring step (the report Experiment
  builds, in one thread) with the speed-up held off, so the harness's own cost shows; its ratio
  to the floor is the harness's overhead (target 1.05x);
- `score_stored`: the same with the speed-up on, which is what the command runs; its ratio to the
  sped-up loop is the overhead on the fast path;
- the score command in this process (`helpers.commands.score.main`: reading and validating both files,
  scoring, printing the tables, writing `--out`), beside its own floor: reading the same files
  the same way and the bare sped-up loop;
- `--workers 2` and `--cluster local` (2 workers): `score_at_scale` as the command calls it,
  engine start-up included, with the size rule deciding (a run too small is scored in one
  process; the rows say which it chose).

Each row shows wall seconds (median of `--rounds` interleaved rounds, with the range) and the
CPU seconds of this process and its workers together (the work done, which the other load on a
shared machine does not inflate). Sizes are measured one after another, each printed when done.
The sizes include a small run (20 items, 100 documents), where start-up dominates.

Then, each in a fresh process: the start-up of the command (`--help`) and of a worker (spawned:
its imports; forked: ready, one document scored and stopped) against `import pydantic, stickler`,
and the peak resident memory (`VmHWM`) of `python -m helpers.commands.score` on 1,000 documents of 20
items to a compact results file, in one process and with `--workers 2`.

Exit code 1 if any report differs from the bare loop's scores or from one process's report.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from stickler import eval_for
from strands_evals.evaluators import StructuredOutputSimilarity

from bench.timing import MIN_ROUNDS, interleaved, median, ratio_spread, spread
from helpers.commands.score import main as score_main
from helpers.harness import fast_stickler
from helpers.harness.cases import load_cases, load_predictions
from helpers.harness.scoring import score_stored
from helpers.scale.batches import Scorer
from helpers.scale.run import score_at_scale
from walkthroughs.invoices import Invoice
from walkthroughs.simulated_large import SCHEMA, simulated_run

DEFAULT_SIZES = "1:2000,5:1000,20:1000,50:200,20:100"
FLOOR = "bare stickler loop (as shipped)"
FAST_LOOP = "bare loop, stickler sped up"
READ_FLOOR = "read both files + sped-up loop"
COMMAND = "score command, in this process"


class _Quiet:
    def start(self, total, engine):
        self.engine = engine

    def advance(self, documents, failed=0):
        pass

    def finish(self):
        pass


def write_files(pairs: list, folder: Path) -> tuple[Path, Path]:
    cases = folder / "cases.jsonl"
    predictions = folder / "predictions.jsonl"
    with cases.open("w") as case_file, predictions.open("w") as prediction_file:
        for case, output in pairs:
            truth = case.expected_output.model_dump(mode="json")
            line = {"name": case.name, "input": case.input, "expected_output": truth, "metadata": case.metadata}
            case_file.write(json.dumps(line) + "\n")
            prediction_file.write(json.dumps({"name": case.name, "output": output.model_dump(mode="json")}) + "\n")
    return cases, predictions


def runs_for(pairs: list, folder: Path, engines: dict) -> tuple[dict, dict]:
    cases = [case for case, _ in pairs]
    outputs = {case.name: output for case, output in pairs}
    spec = eval_for(Invoice)
    evaluator = StructuredOutputSimilarity(Invoice)
    case_file, prediction_file = write_files(pairs, folder)
    argv = ["--schema", SCHEMA, "--cases", str(case_file), "--predictions", str(prediction_file)]
    kept: dict = {}

    def loop():
        return [spec.evaluate(case.expected_output, output).overall_score for case, output in pairs]

    def bare():
        with fast_stickler.shipped():
            kept[FLOOR] = loop()

    def fast_loop():
        kept[FAST_LOOP] = loop()

    def shipped():
        with fast_stickler.shipped():
            kept["shipped"] = score_stored(cases, outputs, evaluator)

    def fast():
        kept["score"] = score_stored(cases, outputs, evaluator)

    def read_and_loop():
        read = load_cases(case_file, Invoice)
        predictions = load_predictions(prediction_file, Invoice, read)
        [spec.evaluate(case.expected_output, predictions[case.name]) for case in read]

    def command():
        out = folder / "run.json"
        if score_main([*argv, "--out", str(out)], out=io.StringIO()) != 0:
            raise SystemExit("the score command failed")
        kept[COMMAND] = out.read_text()

    def scaled(workers, cluster):
        def run():
            quiet = _Quiet()
            report = score_at_scale(pairs, Scorer(SCHEMA), workers=workers, cluster=cluster, progress=quiet).report
            kept[(workers, cluster)] = report
            engines[(workers, cluster)] = quiet.engine

        return run

    return kept, {
        FLOOR: bare,
        FAST_LOOP: fast_loop,
        "score_stored, stickler as shipped": shipped,
        "score_stored": fast,
        READ_FLOOR: read_and_loop,
        COMMAND: command,
        "--workers 2": scaled(2, None),
        "--cluster local (2)": scaled(2, "local"),
    }


def _cpu() -> float:
    """CPU seconds of this process and of every finished child (workers, Dask's processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(run) -> tuple[float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), _cpu()
    run()
    return time.perf_counter() - wall, _cpu() - cpu


def speed(sizes: list[tuple[int, int]], rounds: int, folder: Path) -> bool:
    """Each size in turn: its runs take turns round after round, and its rows print as soon as it is done."""
    print(f"\n== seconds per run: median of {rounds} interleaved rounds (range); load {_load()}")
    same = True
    for items, count in sizes:
        where = folder / f"{items}x{count}"
        where.mkdir()
        engines: dict = {}
        kept, runs = runs_for(list(simulated_run(count, items)), where, engines)
        wall: dict = {name: [] for name in runs}
        cpu: dict = {name: [] for name in runs}
        for _ in range(rounds):
            for name, run in runs.items():
                seconds, work = timed(run)
                wall[name].append(seconds)
                cpu[name].append(work)
        _print_size(items, count, runs, wall, cpu, engines)
        same = _check(kept, engines) and same
    print(f"\n   load average after: {_load()}; every report identical: {'yes' if same else 'NO'}")
    return same


def _print_size(items: int, count: int, runs: dict, wall: dict, cpu: dict, engines: dict) -> None:
    floor = wall[FLOOR]
    rate = f"{count / median(floor):,.0f} documents/s on the floor"
    print(f"\n{items} line items, {count:,} documents ({rate}), load {_load()}")
    print(f"  {'':<34} {'wall s':>20}  {'of the floor':>18}  {'CPU s':>6}  {'of the floor':>12}")
    floor_cpu = median(cpu[FLOOR])
    for name in runs:
        work = median(cpu[name])
        where = ""
        if name.startswith("--"):
            where = f"  [{engines[(2, None if name.startswith('--workers') else 'local')]}]"
        ratio = ratio_spread(wall[name], floor) if name != FLOOR else ""
        print(f"  {name:<34} {spread(wall[name]):>20}  {ratio:>18}  {work:6.2f}  {work / floor_cpu:11.2f}x{where}")
    print(
        f"  harness overhead: score_stored {ratio_spread(wall['score_stored'], wall[FAST_LOOP])} of the sped-up "
        f"loop; the command {ratio_spread(wall[COMMAND], wall[READ_FLOOR])} of reading the files and that loop"
    )
    for label in ("--workers 2", "--cluster local (2)"):
        print(f"  {label}: {median(wall['score_stored']) / median(wall[label]):.2f}x as fast as one process")


def _check(kept: dict, engines: dict) -> bool:
    reference = kept["shipped"].model_dump_json()
    same = True
    if kept["score"].scores != kept[FLOOR] or kept[FAST_LOOP] != kept[FLOOR]:
        print("  SCORES DIFFER from the bare loop")
        same = False
    if kept["score"].model_dump_json() != reference:
        print("  REPORT DIFFERS from stickler as shipped")
        same = False
    if _sessionless(json.loads(kept[COMMAND])) != _sessionless(json.loads(reference)):
        print("  THE COMMAND'S REPORT DIFFERS")
        same = False
    for key in ((2, None), (2, "local")):
        if kept[key].model_dump_json() != reference:
            print(f"  REPORT DIFFERS on {engines[key]}")
            same = False
    return same


def _sessionless(report: dict) -> dict:
    """A report without its cases' `session_id`, which a case read from a file draws at random."""
    return {**report, "cases": [{k: v for k, v in case.items() if k != "session_id"} for case in report["cases"]]}


WORKER_STARTUP = """
import sys, time
from helpers.scale import pool
from walkthroughs.simulated_large import SCHEMA, simulated_run
from helpers.scale.batches import Scorer
from helpers.scale.run import score_at_scale
pool.start_method = lambda: {method!r}
pairs = list(simulated_run(1, 1))
started = time.perf_counter()
score_at_scale(pairs, Scorer(SCHEMA), workers=2, fan_out="always", progress=None)
print(time.perf_counter() - started, file=sys.stderr)
"""


def startup(rounds: int) -> None:
    print(f"\n== start-up in a fresh process, seconds: median of {rounds} interleaved rounds (range)")
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "import pydantic, stickler (floor)": [python, "-c", "import pydantic, stickler"],
        "python -m helpers.commands.score --help": [python, "-m", "helpers.commands.score", "--help"],
        "import strands_evals.evaluators": [python, "-c", "import strands_evals.evaluators"],
        "a spawned worker's imports": [
            python,
            "-c",
            "import sys; sys.modules['rfc3987_syntax'] = None; import helpers.scale.batches",
        ],
    }
    seconds = interleaved(
        rounds, {name: lambda c=c: subprocess.run(c, check=True, capture_output=True) for name, c in commands.items()}
    )
    floor = seconds["import pydantic, stickler (floor)"]
    for name, values in seconds.items():
        print(f"  {name:<40} {spread(values):>20} s  {ratio_spread(values, floor)} of the floor")
    print("  2 workers started, one document scored, stopped (after the driver's imports):")
    pools: dict = {"forked": [], "spawned": []}
    for _ in range(rounds):
        for label, method in (("forked", "fork"), ("spawned", "spawn")):
            done = subprocess.run(
                [python, "-c", WORKER_STARTUP.format(method=method)], check=True, capture_output=True, text=True
            )
            pools[label].append(float(done.stderr.strip().splitlines()[-1]))
    for label, values in pools.items():
        print(f"  {label + ' workers':<40} {spread(values):>20} s")


MEMORY = """
import io, json, sys
from helpers.commands.score import main
argv = json.loads(sys.argv[1])
code = main(argv, out=io.StringIO())
status = open("/proc/self/status").read().splitlines()
peak = [int(line.split()[1]) for line in status if line.startswith("VmHWM:")][0]
import resource
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps([code, peak, child]))
"""


def memory(documents: int, items: int, folder: Path) -> None:
    print(f"\n== peak resident memory, fresh processes: score {documents:,} documents of {items} items to --results")
    root = folder / "memory"
    root.mkdir()
    write_files(list(simulated_run(documents, items)), root)
    base = ["--schema", SCHEMA, "--cases", "cases.jsonl", "--predictions", "predictions.jsonl", "--results", "r.jsonl"]
    for label, extra in (("one process", []), ("--workers 2", ["--workers", "2", "--fan-out", "always"])):
        done = subprocess.run(
            [sys.executable, "-c", MEMORY, json.dumps([*base, *extra])],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        )
        code, driver, child = json.loads(done.stdout.strip().splitlines()[-1])
        shared = "forked: includes pages shared with the driver"
        workers = f"; largest worker {child / 1024:.0f} MB ({shared})" if extra else ""
        print(f"  {label:<12} driver {driver / 1024:.0f} MB{workers}  (exit {code})")


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="items:documents pairs, comma separated")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help="interleaved rounds (at least 3)")
    parser.add_argument("--memory-documents", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    sizes = [tuple(int(part) for part in size.split(":")) for size in args.sizes.split(",")]
    print(
        f"bench_scale: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"stickler-eval {version('stickler-eval')}, strands-agents-evals {version('strands-agents-evals')}, "
        f"dask {version('dask')}; data: SIMULATED invoices (seeded)"
    )
    with tempfile.TemporaryDirectory() as folder:
        same = speed(sizes, args.rounds, Path(folder))
        startup(args.rounds)
        memory(args.memory_documents, 20, Path(folder))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
