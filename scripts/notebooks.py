"""Execute, normalize and regenerate the walkthrough notebooks.

    python scripts/notebooks.py run [NOTEBOOK ...]        execute in replay mode, report, write nothing
    python scripts/notebooks.py outputs [NOTEBOOK ...]    execute in replay mode and store the outputs
    python scripts/notebooks.py normalize [NOTEBOOK ...]  strip run-specific metadata from the stored files

`outputs` is the only way stored outputs change. Every run forces replay mode, so no
notebook touches the network from here; tests compare a fresh run with what is stored.

`run` and `outputs` execute two notebooks at once (`--jobs N` to change it), one kernel each,
the longest ones first (`LONGEST_FIRST`). Each notebook is reported on one line, in the order
named: `ok`, or `FAIL` with the reason (a cell that raised, a kernel that died, a name that
matches no notebook, a file that could not be read or written), and the run goes on with the
next one. A notebook is written beside itself and renamed over the stored file, so a failed write
leaves the stored notebook whole.

Exit codes: 0 every notebook passed, 1 at least one failed, 2 bad command line.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from fieldeval.files import write_text_atomically
from fieldeval.mode import OFFLINE_ENV

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "examples" / "notebooks"
TIMEOUT_SECONDS = 300
# numpy's OpenBLAS runs every matrix product on one thread per core. With two kernels (or four test
# workers) already on two cores, those threads wait for each other's time slices: a 500 x 60 product,
# the bootstrap's, took 15 ms instead of 0.15 ms. Kernels, and `make test`'s runs, use one each.
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# Started before the others, longest first (seconds each in `make run`, two at a time: about 13, 6
# and 5; the other four take 1.5-3.5 each). In name order the two longest ran one after the other
# in one slot while the other slot had run out of work: `make run` took 21.6 s, against 19.7 s
# longest first (medians of three interleaved runs each, on two cores). Choosing_A_Model, added
# later, takes about 15 s on its own (`make outputs`, four scores, a compare, a power estimate and an
# audit as commands), so it starts first.
LONGEST_FIRST = (
    "Strands_Evals_Choosing_A_Model.ipynb",
    "Strands_Evals_Compare_Runs.ipynb",
    "Strands_Evals_Your_Own_Agent.ipynb",
    "Strands_Evals_Scale_Out.ipynb",
)
KERNEL_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


class NotebookFailed(Exception):
    """One notebook could not be run or stored; the message is its report line."""


def notebooks(names: list[str]) -> list[Path]:
    """The notebooks named (a path, or a name under examples/notebooks), or every notebook there."""
    if not names:
        return sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    return [Path(name) if Path(name).exists() else NOTEBOOK_DIR / name for name in names]


def normalize(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop what differs between runs and machines: execution metadata, kernel versions, stream chunking."""
    notebook.metadata = nbformat.from_dict(KERNEL_METADATA)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)
    return notebook


def coalesce_streams(outputs: list) -> list:
    """Join consecutive writes to one stream: how a kernel's prints arrive in chunks depends on load."""
    joined: list = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if output.output_type == "stream" and previous is not None and previous.output_type == "stream":
            if previous.name == output.name:
                previous.text += output.text
                continue
        joined.append(output)
    return joined


def read(path: Path) -> nbformat.NotebookNode:
    """Read a notebook, or fail with a line that says which and why."""
    if not path.is_file():
        available = ", ".join(notebook.name for notebook in notebooks([])) or "none"
        raise NotebookFailed(f"no such notebook: {path}; the notebooks are: {available}")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several types for a file that is not a notebook
        raise NotebookFailed(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc


def store(notebook: nbformat.NotebookNode, path: Path) -> bool:
    """Write beside the stored notebook and rename over it: it is the old file or the new, whole.

    Returns whether the file changed; an unchanged one is left alone (with the time stamp an open
    editor watches)."""
    text = nbformat.writes(notebook)
    text = text if text.endswith("\n") else text + "\n"
    if path.read_bytes() == text.encode("utf-8"):
        return False
    try:
        write_text_atomically(path, text)
    except OSError as exc:  # a WriteError, whose message names the file and the OS error
        raise NotebookFailed(f"{exc}; the stored notebook is unchanged") from exc
    return True


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel, in replay mode, on one BLAS thread, from its own folder."""
    os.environ.update(OFFLINE_ENV | ONE_BLAS_THREAD)
    notebook = read(path)
    code = [index for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    running = {"cell": None}

    def where() -> str:
        index = running["cell"]
        return f"cell {code.index(index) + 1} of {len(code)}" if index in code else "before its first cell"

    client = NotebookClient(
        notebook,
        timeout=TIMEOUT_SECONDS,
        kernel_name="python3",
        # The kernel warns on every start that its local TCP sockets are unencrypted; keep its
        # errors, drop that line, so `make run` prints one line per notebook.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        record_timing=False,
        # Once the last cell has run, the kernel is killed, as nbval does for `make test`. A graceful
        # shutdown first signals every process the kernel started and waits for each to end, and the
        # resource tracker that multiprocessing starts beside a forkserver (a local Dask cluster, a
        # worker pool in a kernel) ignores SIGTERM: Scale_Out's kernel took 2.6 s to stop instead of
        # 0.3 s. Every notebook removes what it creates in its own cells, and the outputs are all in.
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_start=lambda cell, cell_index: running.update(cell=cell_index),
    )
    try:
        client.execute()
    except CellTimeoutError as exc:
        raise NotebookFailed(f"{where()} ran longer than {TIMEOUT_SECONDS} s") from exc
    except CellExecutionError as exc:
        raise NotebookFailed(f"{where()} raised {exc.ename}: {exc.evalue}") from exc
    except DeadKernelError as exc:
        raise NotebookFailed(f"the kernel died in {where()} (a crash, os._exit or out of memory)") from exc
    except Exception as exc:  # a kernel that cannot start, a broken kernelspec: still one notebook's failure
        raise NotebookFailed(f"{where()}: {type(exc).__name__}: {exc}") from exc
    return normalize(notebook)


def process(command: str, path: Path) -> str:
    """Run one command on one notebook and return its report line; raise NotebookFailed."""
    if command == "normalize":
        changed = store(normalize(read(path)), path)
        return f"ok   {path.name}: {'normalized' if changed else 'already normalized'}"
    started = time.perf_counter()
    executed = execute(path)
    seconds = time.perf_counter() - started
    if command == "outputs":
        store(executed, path)
    cells = sum(cell.cell_type == "code" for cell in executed.cells)
    verb = "stored" if command == "outputs" else "ran"
    return f"ok   {path.name}: {verb} {cells} code cells in {seconds:.1f} s (replay mode)"


def start_rank(path: Path) -> int:
    """Where a notebook starts: those of `LONGEST_FIRST` in that order, then the rest as named."""
    return LONGEST_FIRST.index(path.name) if path.name in LONGEST_FIRST else len(LONGEST_FIRST)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "outputs", "normalize"])
    parser.add_argument("notebook", nargs="*", help="notebook paths or names (default: all)")
    parser.add_argument(
        "--jobs", type=int, default=2, help="notebooks executed at once, one kernel each (default 2, one per core)"
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be 1 or more")
    paths = notebooks(args.notebook)

    def report(path: Path) -> tuple[bool, str]:
        try:
            return True, process(args.command, path)
        except NotebookFailed as exc:
            return False, f"FAIL {path.name}: {exc}"

    # Kernels are separate processes, so threads are enough to keep both cores busy; each line is
    # printed in the order the notebooks were named, as soon as it and the ones before it are done.
    failed = 0
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures: dict[int, Future] = {}  # by position: a notebook named twice runs twice, as named
        for index in sorted(range(len(paths)), key=lambda index: start_rank(paths[index])):
            futures[index] = pool.submit(report, paths[index])
        for index in range(len(paths)):
            passed, line = futures[index].result()
            print(line, flush=True)
            failed += not passed
    if failed:
        print(f"{failed} of {len(paths)} notebooks failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
