"""Execute, normalize and regenerate the walkthrough notebooks.

    python scripts/notebooks.py run [NOTEBOOK ...]        execute in replay mode, report, write nothing
    python scripts/notebooks.py outputs [NOTEBOOK ...]    execute in replay mode and store the outputs
    python scripts/notebooks.py normalize [NOTEBOOK ...]  strip run-specific metadata in place

`outputs` is the only way stored outputs change. Every run forces replay mode, so no
notebook touches the network from here; tests compare a fresh run with what is stored.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers.mode import OFFLINE_ENV

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "examples" / "notebooks"
TIMEOUT_SECONDS = 300
KERNEL_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def notebooks(names: list[str]) -> list[Path]:
    """The notebooks named, or every notebook under examples/notebooks."""
    if not names:
        return sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    return [Path(name) if Path(name).exists() else NOTEBOOK_DIR / name for name in names]


def normalize(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop what differs between runs and machines: execution metadata, kernel versions."""
    notebook.metadata = nbformat.from_dict(KERNEL_METADATA)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.cell_type == "code":
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)
    return notebook


def execute(path: Path) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel, in replay mode, from its own folder."""
    os.environ.update(OFFLINE_ENV)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=TIMEOUT_SECONDS,
        kernel_name="python3",
        # The kernel warns on every start that its local TCP sockets are unencrypted; keep its
        # errors, drop that line, so `make run` prints one line per notebook.
        extra_arguments=["--IPKernelApp.log_level=ERROR"],
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return normalize(notebook)


def failing_cell(path: Path, error: CellExecutionError) -> str:
    """The 1-based number of the code cell whose source the error quotes, for the message."""
    notebook = nbformat.read(path, as_version=4)
    code = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    for number, source in enumerate(code, start=1):
        if source and source.strip() in str(error):
            return f"{number} of {len(code)}"
    return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "outputs", "normalize"])
    parser.add_argument("notebook", nargs="*", help="notebook paths or names (default: all)")
    args = parser.parse_args(argv)
    failed = 0
    for path in notebooks(args.notebook):
        if args.command == "normalize":
            nbformat.write(normalize(nbformat.read(path, as_version=4)), path)
            continue
        started = time.perf_counter()
        try:
            executed = execute(path)
        except CellExecutionError as exc:
            failed += 1
            print(f"FAIL {path.name}: cell {failing_cell(path, exc)} raised {exc.ename}: {exc.evalue}")
            continue
        seconds = time.perf_counter() - started
        if args.command == "outputs":
            nbformat.write(executed, path)
        cells = sum(cell.cell_type == "code" for cell in executed.cells)
        verb = "stored" if args.command == "outputs" else "ran"
        print(f"ok   {path.name}: {verb} {cells} code cells in {seconds:.1f} s (replay mode)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
