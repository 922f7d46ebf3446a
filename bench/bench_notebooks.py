"""Benchmark: `make run` against its floor, both run by `make run`'s own command, in one run.

    python -m bench.bench_notebooks                 every notebook, 3 interleaved rounds
    python -m bench.bench_notebooks --rounds 5
    python -m bench.bench_notebooks NAME.ipynb ...  pick notebooks
    python -m bench.bench_notebooks --quick         the quickest notebook, one round (CI)

Run from the repository root (`make bench-notebooks` does).

- real: `python scripts/notebooks.py run [NAME ...]`, the command `make run` runs, in a fresh
  process: every notebook in a fresh kernel, in replay mode, two at a time.
- floor: the same command on stand-in notebooks, one per notebook, each a single cell holding
  that notebook's magics (`%matplotlib inline`) and every top-level `import` / `from ... import`
  of its code cells. It is what any run of the notebooks must pay, however fast their cells: the
  command's own start, a kernel per notebook, and the libraries each notebook loads, two at a
  time as `make run` does.

Each round times the floor, then the real run, and the rounds alternate, so drifting load falls
on both alike. It prints, for each, the median wall seconds of the rounds with their range and the
median CPU seconds (user + system of the command and the kernels it started); per notebook, the
median of the seconds the command reports for it (each notebook's own time, beside another); and
the ratio real / floor of the wall medians, with the range of the per-round ratios (target: at
most 1.8x). The load average is printed before and after: on a shared machine wall seconds move
with it, the ratio much less. Exit code 1 if a notebook fails to run.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from bench.timing import MIN_ROUNDS, QUICK_NOTE, QUICK_ROUNDS, add_quick, median, ratio_spread, spread
from scripts import notebooks

TARGET_RATIO = 1.8
QUICK_NOTEBOOK = "Strands_Evals_Offline_Agent.ipynb"  # the quickest to run (about 3 s of cells), for --quick
COMMAND = [sys.executable, str(notebooks.ROOT / "scripts" / "notebooks.py"), "run"]
REPORTED = re.compile(r"^ok\s+(?P<name>\S+): ran \d+ code cells in (?P<seconds>[\d.]+) s")


def floor_cell(path: Path) -> str:
    """The notebook's magics and top-level import statements, in order, once each: one cell's source."""
    magics: list[str] = []
    imports: list[str] = []
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # cells may `await` at top level
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        magics += [line for line in lines if line.startswith("%") and line not in magics]
        source = "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))
        for node in compile(source, str(path), "exec", flags=flags).body:
            if isinstance(node, ast.Import | ast.ImportFrom) and ast.unparse(node) not in imports:
                imports.append(ast.unparse(node))
    return "\n".join(magics + imports)


def floor_notebook(path: Path, folder: Path) -> Path:
    """A one-cell notebook of `path`'s magics and imports, under `path`'s own name in `folder`."""
    probe = nbformat.v4.new_notebook()
    probe.cells = [nbformat.v4.new_code_cell(floor_cell(path))]
    target = folder / path.name
    nbformat.write(probe, target)
    return target


def run_command(paths: list[Path]) -> tuple[float, float, dict[str, float]]:
    """Wall and CPU seconds of `scripts/notebooks.py run PATHS`, and the seconds it reports per notebook.

    CPU is user + system of the command and every process it waited for (its kernels).

    Raises:
        SystemExit: If the command fails; its output is printed.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([*COMMAND, *map(str, paths)], cwd=notebooks.ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        print(done.stdout + done.stderr, end="")
        raise SystemExit(1)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    each = {match["name"]: float(match["seconds"]) for match in map(REPORTED.match, done.stdout.splitlines()) if match}
    return wall, cpu, each


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", nargs="*", help="notebook paths or names (default: all)")
    parser.add_argument(
        "--rounds", type=int, default=MIN_ROUNDS, help=f"interleaved rounds, at least {MIN_ROUNDS} (default)"
    )
    add_quick(parser)
    args = parser.parse_args(argv)
    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    if args.quick:
        args.notebook, args.rounds = args.notebook or [QUICK_NOTEBOOK], QUICK_ROUNDS
        print(QUICK_NOTE)
    paths = notebooks.notebooks(args.notebook)
    print(f"load average before: {load()}; {os.cpu_count()} cores; timing `python scripts/notebooks.py run`")
    wall: dict[str, list[float]] = {"floor": [], "real": []}
    cpu: dict[str, list[float]] = {"floor": [], "real": []}
    each: dict[str, list[dict[str, float]]] = {"floor": [], "real": []}
    with tempfile.TemporaryDirectory() as folder:
        runs = {"floor": [floor_notebook(path, Path(folder)) for path in paths], "real": paths}
        for _ in range(args.rounds):  # alternating, so drifting load hits both alike
            for kind, run in runs.items():
                seconds, used, reported = run_command(run)
                wall[kind].append(seconds)
                cpu[kind].append(used)
                each[kind].append(reported)
    for path in paths:
        floor, real = (median(round_[path.name] for round_ in each[kind]) for kind in ("floor", "real"))
        print(f"{path.name:<40} floor {floor:5.1f} s  real {real:5.1f} s  ratio {real / floor:5.2f}x  (medians)")
    for kind in ("floor", "real"):
        print(f"{kind:>5}: wall {spread(wall[kind], 1)} s, CPU {spread(cpu[kind], 1)} s (user + system)")
    ratio = median(wall["real"]) / median(wall["floor"])
    verdict = "within" if ratio <= TARGET_RATIO else "above"
    walls, cpus = ratio_spread(wall["real"], wall["floor"]), ratio_spread(cpu["real"], cpu["floor"])
    print(f"make run / floor: {walls} wall ({verdict} the {TARGET_RATIO:g}x target), {cpus} CPU; medians, range")
    print(f"load average after: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
