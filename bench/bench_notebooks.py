"""Benchmark: `make run` (every notebook executed in replay mode) against its floor, in one run.

    python -m bench.bench_notebooks                 every notebook, best of 1
    python -m bench.bench_notebooks --repeat 3      best of 3 (the two are interleaved per notebook)
    python -m bench.bench_notebooks NAME.ipynb ...  pick notebooks

Run from the repository root (`make bench` does): it uses the runner of `make run`
(`scripts/notebooks.py`), so the two timings go through the same nbclient path and kernel options.

- floor: per notebook, a fresh kernel executing one cell that holds only that notebook's import
  statements (every top-level `import` / `from ... import` of its code cells). It is what any
  run of the notebook must pay: starting a kernel and loading the libraries it uses.
- real: the notebook executed top to bottom, as `make run` does.

It prints the per-notebook times, the totals and the ratio real / floor (target: at most 3x).
Times are wall-clock seconds (the work happens in the kernel processes), so other load on a
shared machine inflates both; compare the ratio, which is measured under the same load.
Exit code 1 if a notebook fails to run.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from scripts import notebooks

TARGET_RATIO = 3.0


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", nargs="*", help="notebook paths or names (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each, the best kept (default 1)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for path in notebooks.notebooks(args.notebook):
            probe = floor_notebook(path, Path(folder))
            floor, real = float("inf"), float("inf")
            try:
                for _ in range(args.repeat):  # interleaved, so drifting load hits both alike
                    floor = min(floor, timed(probe))
                    real = min(real, timed(path))
            except notebooks.NotebookFailed as exc:
                print(f"FAIL {path.name}: {exc}")
                return 1
            rows.append((path.name, len(import_lines(path)), floor, real))
            print(f"{path.name:<40} imports {rows[-1][1]:>3}  floor {floor:6.1f} s  real {real:6.1f} s  "
                  f"ratio {real / floor:5.2f}x", flush=True)  # fmt: skip
    floor_total, real_total = sum(row[2] for row in rows), sum(row[3] for row in rows)
    ratio = real_total / floor_total
    verdict = "within" if ratio <= TARGET_RATIO else "above"
    print(f"{'all ' + str(len(rows)) + ' notebooks':<40} {'':>11}  floor {floor_total:6.1f} s  "
          f"real {real_total:6.1f} s  ratio {ratio:5.2f}x ({verdict} the {TARGET_RATIO:g}x target; best of "
          f"{args.repeat})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
