"""Benchmark: `score` in one process, on 2 local workers and on a local Dask cluster, against the bare stickler loop.

    python -m bench.bench_scale                       every size below, 3 rounds (long on a loaded machine)
    python -m bench.bench_scale --sizes 20:1000       pick sizes as items:documents
    python -m bench.bench_scale --rounds 5
    python -m bench.bench_scale --quick               20 documents of 1 item, 20 for the memory, one round (CI)

Data: the seeded SIMULATED invoices of `walkthroughs.simulated_large` (nothing recorded),
with N line items each and the simulated extractor's mistakes.

The floor is the bare stickler loop: `eval_for(Invoice).evaluate(truth, prediction)` over the
same documents, already read and validated, stickler as shipped. Every row is its ratio to that
floor, measured in the same interleaved rounds:

- bare loop, stickler sped up: the same loop with `fieldeval.harness.fast_stickler` on;
- read both files + loop: reading and validating the case and predictions files the way the
  command does, then the bare loop, stickler as shipped and sped up: the command's own floor
  ("same reading, same validation, imports aside");
- the score command in this process (`fieldeval.commands.score.main`: reading and validating both
  files, scoring, printing the tables, writing `--out`), in one process, with `--workers 2` and
  with `--cluster local` (2 Dask workers), engine start-up included, the size rule deciding (a
  run too small is scored in one process; the rows say where each ran);
- the command writing the compact `--results` file instead, in one process and with `--workers 2`:
  the file's failures by kind are work the loop does not do (each document with a list item below
  the threshold has its lists matched again), so these rows show what that costs, and what the
  workers gain on a run that carries it;
- the same two with `--fan-out always`: what the workers give when the rule keeps a run here;
- the sped-up loop split in two halves, each scored in a forked child with nothing sent or merged:
  the most any two processes gain on this machine, against which the workers' gain is read.

Each row shows wall seconds (median of `--rounds` interleaved rounds, with the range) and the
CPU seconds of this process and its workers together (the work done, which the other load on a
shared machine does not inflate). Sizes are measured one after another, each printed when done,
with the command's ratio to its floor and each fan-out's speed against the command in one process.
The sizes include a small run (20 items, 100 documents), where start-up dominates.

Then, each in a fresh process: the start-up of the command (`--help`) and of a worker (spawned:
its imports; then 2 workers started, one document scored and stopped: forked, spawned, from the
forkserver, and as a local Dask cluster from the forkserver and spawned as Dask does by default)
against `import pydantic, stickler`,
and the peak resident memory (`VmHWM`) of `python -m fieldeval.commands.score` on 1,000 documents of 20
items to a compact results file, in one process and with `--workers 2`.

Exit code 1 if any report differs from the bare loop's scores or from stickler as shipped, or the
results file the workers wrote differs from the one-process file by a byte.
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

from bench.timing import MIN_ROUNDS, QUICK_NOTE, QUICK_ROUNDS, add_quick, interleaved, median, ratio_spread, spread
from fieldeval.commands.score import main as score_main
from fieldeval.formats.leaf_diffs import LEAF_DIFFS_KEY
from fieldeval.formats.run_info import RUN_KEY
from fieldeval.harness import fast_stickler
from fieldeval.harness.cases import load_cases, load_predictions
from fieldeval.harness.scoring import score_stored
from walkthroughs.invoices import Invoice
from walkthroughs.simulated_large import SCHEMA, simulated_run

DEFAULT_SIZES = "1:2000,5:1000,20:1000,50:200,20:100"
FLOOR = "bare stickler loop (as shipped)"
FAST_LOOP = "bare loop, stickler sped up"
READ_FLOOR = "read both files + loop"
READ_FAST = "read both files + sped-up loop"
COMMAND = "score command, one process"
RESULTS = "score command, one process, --results"
RESULTS_FANNED = "--workers 2, --results"
HALVES = "sped-up loop, 2 forked halves"
FANNED = {
    "--workers 2": ["--workers", "2"],
    "--cluster local (2)": ["--cluster", "local", "--workers", "2"],
    "--workers 2, --fan-out always": ["--workers", "2", "--fan-out", "always"],
    "--cluster local (2), --fan-out always": ["--cluster", "local", "--workers", "2", "--fan-out", "always"],
}
# Each row that may fan out, and the one-process row its gain is read against.
ONE_PROCESS = {label: COMMAND for label in FANNED} | {RESULTS_FANNED: RESULTS}


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


class ClusterRunner:
    """A spawned process that runs the `--cluster` commands, so this one never runs Dask's threads.

    Dask's client leaves a thread behind (its offload pool), and a process that runs a second
    thread spawns its workers instead of forking them (`fieldeval.scale.pool.start_method`): every
    `--workers` row after the first cluster would then pay the spawned start-up, which a user's
    fresh command does not. The runner reports its own wall and CPU seconds (its Dask processes
    included), and imports everything once, before any round; the forkserver a local cluster
    starts is stopped after each command, so every round starts its workers as a fresh command does.
    """

    def __enter__(self) -> ClusterRunner:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_run_commands, args=(child,))  # not a daemon: Dask starts processes
        self.process.start()
        child.close()
        return self

    def run(self, argv: list[str]) -> tuple[int, float, float, str]:
        self.connection.send(argv)
        return self.connection.recv()

    def __exit__(self, *exc) -> None:
        self.connection.send(None)
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


def _run_commands(connection) -> None:
    """The runner's loop: run each command it is sent, reply with its exit code, seconds and output."""
    while (argv := connection.recv()) is not None:
        printed = io.StringIO()
        gc.collect()
        wall, cpu = time.perf_counter(), _cpu()
        code = score_main(argv, out=printed)
        _stop_forkserver()
        connection.send((code, time.perf_counter() - wall, _cpu() - cpu, printed.getvalue()))


def _stop_forkserver() -> None:
    """End the forkserver a local cluster left running, and wait for it.

    Its CPU (the imports, and the workers it forked and reaped) then counts among this process's
    finished children, and the next command starts its own, as a fresh `score` command does.
    `_stop` is multiprocessing's own (private) shutdown of it; without it the CPU would be missed.
    """
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is None:
        raise SystemExit("this Python's multiprocessing.forkserver has no _stop: the cluster rows' CPU cannot be read")
    stop()


def runs_for(pairs: list, folder: Path, engines: dict, runner: ClusterRunner) -> tuple[dict, dict]:
    """The timed runs of one size; `kept` collects what each produced, `engines` where each fan-out ran.

    A run returns None (timed here) or its own `(wall, cpu)` seconds (run in the cluster runner).
    """
    spec = eval_for(Invoice)
    # The sped-up rows must be sped up from the first round: the speed-up is otherwise installed
    # only by the first command that scores, after those rows have run once as shipped.
    fast_stickler.install()
    case_file, prediction_file = write_files(pairs, folder)
    argv = ["--schema", SCHEMA, "--cases", str(case_file), "--predictions", str(prediction_file)]
    kept: dict = {}

    def loop(documents):
        return [spec.evaluate(case.expected_output, output).overall_score for case, output in documents]

    def bare():
        with fast_stickler.shipped():
            kept[FLOOR] = loop(pairs)

    def fast_loop():
        kept[FAST_LOOP] = loop(pairs)

    def halves():
        """The machine's ceiling for two processes: the loop's two halves in two forked children, nothing sent."""
        middle = len(pairs) // 2
        children = []
        for part in (pairs[:middle], pairs[middle:]):
            child = os.fork()
            if child == 0:
                code = 1  # a half that raises must not pass for a fast one
                try:
                    loop(part)
                    code = 0
                finally:
                    os._exit(code)
            children.append(child)
        statuses = [os.waitpid(child, 0)[1] for child in children]  # wait for both, whichever failed
        if any(statuses):
            raise SystemExit("a forked half of the sped-up loop failed")

    def read():
        cases = load_cases(case_file, Invoice)
        predictions = load_predictions(prediction_file, Invoice, cases)
        return [(case, predictions[case.name]) for case in cases]

    def read_and_loop():
        with fast_stickler.shipped():
            loop(read())

    def read_and_fast_loop():
        loop(read())

    def command(name, extra, output="--out"):
        def run():
            out, printed, seconds = folder / "run.json", io.StringIO(), None
            if "--cluster" in extra:
                code, wall, cpu, text = runner.run([*argv, *extra, output, str(out)])
                printed.write(text)
                seconds = (wall, cpu)
            else:
                code = score_main([*argv, *extra, output, str(out)], out=printed)
            if code != 0:
                raise SystemExit(f"the score command failed:\n{printed.getvalue()}")
            kept[name] = out.read_text()
            engines[name] = _engine_line(printed.getvalue())
            return seconds

        return run

    runs = {
        FLOOR: bare,
        FAST_LOOP: fast_loop,
        HALVES: halves,
        READ_FLOOR: read_and_loop,
        READ_FAST: read_and_fast_loop,
        COMMAND: command(COMMAND, []),
    }
    runs |= {name: command(name, extra) for name, extra in FANNED.items()}
    runs |= {
        RESULTS: command(RESULTS, [], "--results"),
        RESULTS_FANNED: command(RESULTS_FANNED, FANNED["--workers 2"], "--results"),
    }
    return kept, runs


def _engine_line(printed: str) -> str:
    """Where the command ran, from its final line (`scored N documents on ENGINE; ...`)."""
    for line in printed.splitlines():
        if line.startswith("scored ") and " on " in line:
            return line.split(" on ", 1)[1].split(";")[0]
    return "?"


def _cpu() -> float:
    """CPU seconds of this process and of every finished child (workers, Dask's processes)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(run) -> tuple[float, float]:
    gc.collect()
    wall, cpu = time.perf_counter(), _cpu()
    reported = run()
    return reported if reported is not None else (time.perf_counter() - wall, _cpu() - cpu)


def speed(sizes: list[tuple[int, int]], rounds: int, folder: Path) -> bool:
    """Each size in turn: its runs take turns round after round, and its rows print as soon as it is done."""
    print(f"\n== seconds per run: median of {rounds} interleaved rounds (range); load {_load()}")
    same = True
    for items, count in sizes:
        where = folder / f"{items}x{count}"
        where.mkdir()
        engines: dict = {}
        pairs = list(simulated_run(count, items))
        with ClusterRunner() as runner:
            kept, runs = runs_for(pairs, where, engines, runner)
            wall: dict = {name: [] for name in runs}
            cpu: dict = {name: [] for name in runs}
            for _ in range(rounds):
                for name, run in runs.items():
                    seconds, work = timed(run)
                    wall[name].append(seconds)
                    cpu[name].append(work)
        _print_size(items, count, runs, wall, cpu, engines)
        same = _check(pairs, kept, engines) and same
    print(f"\n   load average after: {_load()}; every report identical: {'yes' if same else 'NO'}")
    return same


def _print_size(items: int, count: int, runs: dict, wall: dict, cpu: dict, engines: dict) -> None:
    floor = wall[FLOOR]
    rate = f"{count / median(floor):,.0f} documents/s on the floor"
    print(f"\n{items} line items, {count:,} documents ({rate}), load {_load()}")
    print(f"  {'':<38} {'wall s':>20}  {'of the floor':>18}  {'CPU s':>6}  {'of the floor':>12}")
    floor_cpu = median(cpu[FLOOR])
    for name in runs:
        work = median(cpu[name])
        where = f"  [{engines[name]}]" if name in ONE_PROCESS else ""
        ratio = ratio_spread(wall[name], floor) if name != FLOOR else ""
        print(f"  {name:<38} {spread(wall[name]):>20}  {ratio:>18}  {work:6.2f}  {work / floor_cpu:11.2f}x{where}")
    print(
        f"  the command: {ratio_spread(wall[COMMAND], wall[READ_FLOOR])} of reading the files + the loop as shipped, "
        f"{ratio_spread(wall[COMMAND], wall[READ_FAST])} of reading them + the sped-up loop"
    )
    print(
        f"  2 forked halves of the sped-up loop, nothing sent: {ratio_spread(wall[FAST_LOOP], wall[HALVES])} "
        "as fast as that loop in one process (what two processes can gain on this machine)"
    )
    for label, one in ONE_PROCESS.items():
        print(f"  {label}: {ratio_spread(wall[one], wall[label])} as fast as one process")
    print(
        f"  --results: {ratio_spread(wall[RESULTS], wall[COMMAND])} the wall time and "
        f"{ratio_spread(cpu[RESULTS], cpu[COMMAND])} the CPU time of the command writing --out (failures by kind)"
    )


# What `score --out` writes beside the report's own JSON, as data (`fieldeval.harness.reports.save_report`).
ADDED_BY_SCORE = (RUN_KEY, LEAF_DIFFS_KEY)


def _check(pairs: list, kept: dict, engines: dict) -> bool:
    """Every score is the bare loop's, and every report the command wrote is stickler-as-shipped's.

    The command's report also carries what `score` adds as data (the run's self-description,
    `"run"`, and every document's leaf diff, `"leaf_diffs"`), which a report scored here has not:
    those are compared apart, every engine's with the one process's.
    """
    with fast_stickler.shipped():
        outputs = {case.name: output for case, output in pairs}
        reference = score_stored([case for case, _ in pairs], outputs, StructuredOutputSimilarity(Invoice))
    same = True
    if reference.scores != kept[FLOOR] or kept[FAST_LOOP] != kept[FLOOR]:
        print("  SCORES DIFFER from the bare loop")
        same = False
    expected = _sessionless(json.loads(reference.model_dump_json()))
    one_process = json.loads(kept[COMMAND])
    for name in (COMMAND, *FANNED):
        written = json.loads(kept[name])
        if _sessionless({key: value for key, value in written.items() if key not in ADDED_BY_SCORE}) != expected:
            print(f"  THE REPORT DIFFERS: {name} [{engines.get(name, 'one process')}]")
            same = False
        for key in ADDED_BY_SCORE:
            if written.get(key) != one_process.get(key):
                print(f"  ITS {key!r} DIFFERS: {name} [{engines.get(name, 'one process')}] from one process")
                same = False
    if kept[RESULTS_FANNED] != kept[RESULTS]:
        print(f"  THE RESULTS FILE DIFFERS: {RESULTS_FANNED} [{engines[RESULTS_FANNED]}] from one process")
        same = False
    return same


def _sessionless(report: dict) -> dict:
    """A report without its cases' `session_id`, which a case read from a file draws at random."""
    return {**report, "cases": [{k: v for k, v in case.items() if k != "session_id"} for case in report["cases"]]}


WORKER_STARTUP = """
import sys, time
from fieldeval.scale import pool
from walkthroughs.simulated_large import SCHEMA, simulated_run
from fieldeval.scale.batches import Scorer
from fieldeval.scale.run import score_at_scale
pool.start_method = lambda: {method!r}
pairs = list(simulated_run(1, 1))
cluster = {cluster!r}
if cluster == "dask-spawn":  # Dask's default start, for comparison: every worker imports again
    import multiprocessing
    multiprocessing.get_all_start_methods = lambda: ["spawn"]
started = time.perf_counter()
score_at_scale(pairs, Scorer(SCHEMA), workers=2, cluster=cluster and "local", fan_out="always", progress=None)
print(time.perf_counter() - started, file=sys.stderr)
"""


def startup(rounds: int) -> None:
    print(f"\n== start-up in a fresh process, seconds: median of {rounds} interleaved rounds (range)")
    python = sys.executable
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "import pydantic, stickler (floor)": [python, "-c", "import pydantic, stickler"],
        "python -m fieldeval.commands.score --help": [python, "-m", "fieldeval.commands.score", "--help"],
        "import strands_evals.evaluators": [python, "-c", "import strands_evals.evaluators"],
        "a spawned worker's imports": [python, "-c", "import fieldeval.scale.worker_imports"],
    }
    seconds = interleaved(
        rounds,
        {name: lambda c=c: subprocess.run(c, check=True, capture_output=True) for name, c in commands.items()},
        minimum=min(rounds, MIN_ROUNDS),  # main refuses fewer than MIN_ROUNDS but for --quick
    )
    floor = seconds["import pydantic, stickler (floor)"]
    for name, values in seconds.items():
        print(f"  {name:<40} {spread(values):>20} s  {ratio_spread(values, floor)} of the floor")
    print("  2 workers started, one document scored, stopped (after the driver's imports):")
    starts = {
        "forked workers": ("fork", None),
        "spawned workers": ("spawn", None),
        "workers from the forkserver": ("forkserver", None),
        "local Dask cluster (forkserver)": ("fork", "forkserver"),
        "local Dask cluster (Dask's spawn)": ("fork", "dask-spawn"),
    }
    pools: dict = {label: [] for label in starts}
    for _ in range(rounds):
        for label, (method, cluster) in starts.items():
            script = WORKER_STARTUP.format(method=method, cluster=cluster)
            done = subprocess.run([python, "-c", script], check=True, capture_output=True, text=True)
            pools[label].append(float(done.stderr.strip().splitlines()[-1]))
    for label, values in pools.items():
        print(f"  {label:<40} {spread(values):>20} s")


MEMORY = """
import io, json, sys
from fieldeval.commands.score import main
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
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    if args.quick:
        args.sizes, args.rounds, args.memory_documents = "1:20", QUICK_ROUNDS, 20
        print(QUICK_NOTE)
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
