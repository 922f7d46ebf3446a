"""`make lab`: JupyterLab on a working copy of the walkthroughs, so the lab never changes the committed ones.

    python scripts/lab.py [JUPYTER LAB OPTION ...]   refresh .lab/, then serve it on 127.0.0.1
    python scripts/lab.py --refresh-only             refresh .lab/ and stop

What it guarantees:

- The lab serves `.lab/` (ignored by git), never `examples/notebooks/`: an autosave, a cleared
  output or an edit lands in the working copy. `make outputs` stays the one way stored
  outputs change.
- Each `make lab` refreshes the working copy from `examples/notebooks/`. A file you have not
  edited there since the last refresh is replaced by the committed one (outputs you made by
  running cells go with it; a fresh run reproduces them). A notebook whose cells you edited,
  or any other file you changed, is kept as it is, and the line printed for it says where the
  committed version is; delete your copy to get the committed one at the next `make lab`.
  Files you create in `.lab/` are never touched.
- The copies open trusted, so styled tables keep their colours: they are signed into a trust
  database inside `.lab/` (not your personal one), which the lab is pointed at.
- The lab's kernels get the environment tests and `make run` use (warnings silenced, the width
  `report.display()` renders at) but keep your `EVAL_NOTEBOOKS_MODE`, so a live run stays possible.
- `READ_FIRST.md`, at the top of the file browser, says which notebook to read first.

Notebooks run with `.lab/` as their working directory; they find the repository's data through
`helpers` and `fieldeval` (installed from this checkout), so they run there exactly as in `examples/notebooks/`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import nbformat
from nbformat.sign import NotebookNotary

from fieldeval.files import write_bytes_atomically, write_text_atomically
from fieldeval.mode import ENV_VAR, OFFLINE_ENV

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "examples" / "notebooks"
LAB = ROOT / ".lab"
TRUST = ".trust"  # in the working copy: the notary's secret and signature database, for this checkout only
STATE = ".refreshed.json"  # in the working copy: what each file held when last copied, to tell edits apart
SKIP = {".ipynb_checkpoints", "__pycache__"}
FIRST = "Strands_Evals_Evaluator.ipynb"  # the README's "read first"
READ_FIRST = """# Read first

This folder is your working copy of the walkthroughs (`examples/notebooks/` in the repository),
made by `make lab`. Edit and run anything here: the committed notebooks are not touched.

{order}

What happens to your edits: each `make lab` refreshes this folder from the committed notebooks.
A notebook whose cells you edited (or any other file you changed) is kept as it is; every other
file is replaced by the committed version, outputs included (running it again reproduces them).
To get the committed version of a file you edited, delete it here and run `make lab` again.
Files you create here are never touched. Stored outputs change only through `make outputs`,
which runs the committed notebooks, never these copies.

The repository's README.md has the rest: modes, re-recording, comparing runs in CI.
"""


def title(path: Path) -> str:
    """A notebook's first heading, which says what it teaches."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            return cell.source.strip().splitlines()[0].lstrip("# ").strip()
    return path.stem


def read_first(lab: Path) -> str:
    """READ_FIRST.md for the notebooks the working copy holds: which to open first, what the others teach."""
    books = sorted(path for path in lab.glob("*.ipynb"))
    first = [path for path in books if path.name == FIRST]
    order = [f"Start with **{path.name}**: {title(path)}. Then, in any order:\n" for path in first]
    order += [f"- `{path.name}`: {title(path)}" for path in books if path.name != FIRST]
    return READ_FIRST.format(order="\n".join(order))


def lab_environment(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The lab's environment: the kernels' warning silencing and Rich width, not the forced replay mode."""
    environment = dict(os.environ if environ is None else environ)
    environment.update({name: value for name, value in OFFLINE_ENV.items() if name != ENV_VAR})
    return environment


def notary(lab: Path = LAB) -> NotebookNotary:
    """The trust database the working copy is signed into and the lab checks against."""
    return NotebookNotary(data_dir=str(lab / TRUST))


def server_command(*options: str, lab: Path = LAB) -> list[str]:
    """The `jupyter lab` command line `make lab` runs (tests start the same server)."""
    jupyter = str(Path(sys.executable).with_name("jupyter"))
    root = ["--allow-root"] if os.geteuid() == 0 else []  # refused as root unless told it is deliberate
    trust = f"--NotebookNotary.data_dir={lab / TRUST}"
    return [jupyter, "lab", "--ip=127.0.0.1", "--no-browser", f"--notebook-dir={lab}", trust, *root, *options]


def fingerprint(path: Path) -> str:
    """What counts as your edit: a notebook's cell types and sources (not outputs, not metadata,
    which opening and running change), or any other file's bytes."""
    if path.suffix == ".ipynb":
        try:
            cells = [[cell.cell_type, cell.source] for cell in nbformat.read(path, as_version=4).cells]
        except Exception:  # a file that no longer parses was certainly edited
            return "unreadable:" + hashlib.sha256(path.read_bytes()).hexdigest()
        content = json.dumps(cells).encode("utf-8")
    else:
        content = path.read_bytes()
    return hashlib.sha256(content).hexdigest()


def committed_files(committed: Path) -> list[Path]:
    """Every file of the committed folder, as paths relative to it."""
    files = [path for path in committed.rglob("*") if path.is_file()]
    return sorted(path.relative_to(committed) for path in files if not SKIP & set(path.parts))


def refresh(committed: Path = COMMITTED, lab: Path = LAB) -> list[str]:
    """Bring the working copy up to date with the committed notebooks; one line per file kept or copied."""
    (lab / TRUST).mkdir(parents=True, exist_ok=True)
    state_file = lab / STATE
    state = json.loads(state_file.read_text(encoding="utf-8")) if state_file.exists() else {}
    lines, signer = [], notary(lab)
    for relative in committed_files(committed):
        source, copy, name = committed / relative, lab / relative, relative.as_posix()
        if copy.exists() and fingerprint(copy) != state.get(name):
            changed = "; the committed one has changed since" if fingerprint(source) != state.get(name) else ""
            lines.append(f"kept {copy}: you edited it (the committed version is {source}{changed})")
            continue
        content = source.read_bytes()
        if not copy.exists() or copy.read_bytes() != content:
            write_bytes_atomically(copy, content)
            lines.append(f"copied {name}")
        if copy.suffix == ".ipynb":
            signer.sign(nbformat.read(copy, as_version=4))
        state[name] = fingerprint(copy)
    write_text_atomically(lab / "READ_FIRST.md", read_first(lab))
    write_text_atomically(state_file, json.dumps(state, indent=1, sort_keys=True) + "\n")
    return lines


def main(argv: list[str]) -> int:
    for line in refresh():
        print(line)
    print(f"Serving the working copy {LAB}/ (ignored by git): examples/notebooks/ stays as committed.")
    if argv == ["--refresh-only"]:
        return 0
    command = server_command(*argv)
    sys.stdout.flush()
    os.execve(command[0], command, lab_environment())
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
