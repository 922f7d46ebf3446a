"""Two packages, two audiences, a boundary stated and enforced.

The seed walkthroughs (Evaluator, Offline Agent, FuzzyEquals) reach nothing of the tool
(`fieldeval`): only Strands, Strands Evals, stickler, pandas and `helpers`. No notebook reaches a
module that serves the commands alone. `fieldeval` imports nothing of `helpers`. This test follows
every import of every notebook cell, and of each module they reach (imports inside functions
included), and fails naming the chain that got there.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT, ROOT / "examples")  # `fieldeval` and `helpers` from the project, `walkthroughs` from examples/
COMMAND_ONLY = (
    "fieldeval.commands",
    "fieldeval.flows",
    "fieldeval.report",
    "fieldeval.outputs",
    "fieldeval.exchanges.recorder",
    "fieldeval.exchanges.recording",
    "fieldeval.exchanges.provenance",
    "fieldeval.exchanges.stale",
    "fieldeval.exchanges.throttle",
    "fieldeval.exchanges.usage",
    "fieldeval.harness.agent_run",
    "fieldeval.harness.tasks",
    "fieldeval.services.models",
    "fieldeval.services.stand_in",
    "fieldeval.formats.prices",
)


def _file(module: str) -> Path | None:
    for source in SOURCES:
        path = source.joinpath(*module.split("."))
        if (path / "__init__.py").is_file():
            return path / "__init__.py"
        if path.with_suffix(".py").is_file():
            return path.with_suffix(".py")
    return None


def _imports(source: str) -> set[str]:
    """Every `fieldeval`, `helpers` and `walkthroughs` module a source names, `from M import name` as M and M.name."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name.split(".")[0] in ("fieldeval", "helpers", "walkthroughs")}


def _cells(notebook: Path) -> str:
    lines = []
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "code":
            lines += [line for line in "".join(cell["source"]).splitlines() if line.lstrip()[:1] not in ("%", "!")]
    return "\n".join(lines)


def _reached(notebook: Path) -> dict[str, str]:
    """Each module the notebook reaches, with the module that imported it."""
    reached: dict[str, str] = {}
    todo = [(name, notebook.name) for name in _imports(_cells(notebook))]
    while todo:
        module, by = todo.pop()
        path = _file(module)
        if path is None or module in reached:
            continue
        reached[module] = by
        parents = module.split(".")
        todo += [(".".join(parents[:end]), module) for end in range(1, len(parents))]
        todo += [(name, module) for name in _imports(path.read_text())]
    return reached


def _chain(reached: dict[str, str], module: str) -> str:
    chain = [module]
    while chain[-1] in reached:
        chain.append(reached[chain[-1]])
    return " <- ".join(chain)


def test_every_command_only_module_exists():
    assert [module for module in COMMAND_ONLY if _file(module) is None] == []


def test_no_notebook_reaches_a_module_of_the_commands():
    notebooks = sorted((ROOT / "examples" / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 7
    problems = []
    for notebook in notebooks:
        reached = _reached(notebook)
        assert any(module.startswith(("fieldeval", "helpers")) for module in reached), notebook  # the walk found them
        for module in reached:
            if any(module == name or module.startswith(f"{name}.") for name in COMMAND_ONLY):
                problems.append(_chain(reached, module))
    assert problems == []


SEEDS = ("Strands_Evals_Evaluator", "Strands_Evals_Offline_Agent", "Strands_Evals_FuzzyEquals")


def test_the_seed_walkthroughs_reach_nothing_of_the_tool():
    problems = []
    for name in SEEDS:
        reached = _reached(ROOT / "examples" / "notebooks" / f"{name}.ipynb")
        assert any(module.startswith("helpers") for module in reached), name  # the walk found the imports
        problems += [_chain(reached, module) for module in reached if module.split(".")[0] == "fieldeval"]
    assert problems == []


def test_the_tool_imports_nothing_of_helpers():
    importers = []
    for path in sorted((ROOT / "fieldeval").rglob("*.py")):
        if any(name.split(".")[0] == "helpers" for name in _imports(path.read_text(encoding="utf-8"))):
            importers.append(str(path.relative_to(ROOT)))
    assert importers == []
