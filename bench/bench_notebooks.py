"""Benchmark: `make run` (every notebook executed in replay mode, two at a time) against its floor, in one run.

    python -m bench.bench_notebooks                 every notebook, 3 interleaved rounds
    python -m bench.bench_notebooks --rounds 5
    python -m bench.bench_notebooks NAME.ipynb ...  pick notebooks

Run from the repository root (`make bench` does): it uses the runner of `make run`
(`scripts/notebooks.py`), so both timings go through the same nbclient path and kernel options,
`--jobs` at a time (default 2, as `make run`).

- floor: per notebook, a fresh kernel executing one cell that holds only that notebook's import
  statements (every top-level `import` / `from ... import` of its code cells). It is what any
  run of the notebook must pay: starting a kernel and loading the libraries it uses.
- real: the notebook executed top to bottom, as `make run` does.

Each round runs every floor notebook `--jobs` at a time, then every real notebook the same way
(the wall time of the whole set, as `make run` takes it), and the rounds alternate. It prints
the median of the rounds with the range, the per-notebook medians (each notebook's own time
inside its set), and the ratio real / floor of the set (target: at most 1.8x). Wall-clock
seconds under whatever other load the machine has; the ratio is measured under the same load.
Exit code 1 if a notebook fails to run.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from bench.timing import median, ratio_spread, spread
from scripts import notebooks

TARGET_RATIO = 1.8


def import_lines(path: Path) -> list[str]:
    """Every top-level import statement of the notebook's code cells, in order, once each."""
    lines: list[str] = []
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT  # cells may `await` at top level
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        tree = compile(source, str(path), "exec", flags=flags)
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom) and ast.unparse(node) not in lines:
                lines.append(ast.unparse(node))
    return lines


def floor_notebook(path: Path, folder: Path) -> Path:
    """A one-cell notebook holding `path`'s imports, beside nothing else (its folder is temporary)."""
    probe = nbformat.v4.new_notebook()
    probe.cells = [nbformat.v4.new_code_cell("\n".join(import_lines(path)))]
    target = folder / f"floor_{path.name}"
    nbformat.write(probe, target)
    return target


def timed(path: Path) -> float:
    started = time.perf_counter()
    notebooks.execute(path)
    return time.perf_counter() - started


def timed_set(paths: list[Path], jobs: int) -> tuple[float, list[float]]:
    """Wall seconds of running `paths` `jobs` at a time (as `make run`), and each notebook's own seconds."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        each = list(pool.map(timed, paths))
    return time.perf_counter() - started, each


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", nargs="*", help="notebook paths or names (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds, at least 3 (default 3)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks at once, as `make run` (default 2)")
    args = parser.parse_args(argv)
    if args.rounds < 3:
        parser.error("--rounds must be at least 3")
    paths = notebooks.notebooks(args.notebook)
    totals: dict[str, list[float]] = {"floor": [], "real": []}
    each: dict[str, list[list[float]]] = {"floor": [], "real": []}
    with tempfile.TemporaryDirectory() as folder:
        probes = [floor_notebook(path, Path(folder)) for path in paths]
        try:
            for _ in range(args.rounds):  # alternating, so drifting load hits both alike
                for kind, run in (("floor", probes), ("real", paths)):
                    total, seconds = timed_set(run, args.jobs)
                    totals[kind].append(total)
                    each[kind].append(seconds)
        except notebooks.NotebookFailed as exc:
            print(f"FAIL {exc}")
            return 1
    for index, path in enumerate(paths):
        floor = median(round_[index] for round_ in each["floor"])
        real = median(round_[index] for round_ in each["real"])
        print(f"{path.name:<40} imports {len(import_lines(path)):>3}  floor {floor:6.1f} s  real {real:6.1f} s  "
              f"ratio {real / floor:5.2f}x  (medians, {args.jobs} at a time)")  # fmt: skip
    ratio = median(totals["real"]) / median(totals["floor"])
    verdict = "within" if ratio <= TARGET_RATIO else "above"
    print(f"all {len(paths)} notebooks, {args.jobs} at a time (as make run): floor {spread(totals['floor'], 1)} s, "
          f"real {spread(totals['real'], 1)} s, ratio {ratio_spread(totals['real'], totals['floor'])} "
          f"({verdict} the {TARGET_RATIO:g}x target; medians of {args.rounds} rounds, range)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
