"""The commands' one error wrapper, exit-code table and missing-dependency message (`fieldeval.commands.exits`)."""

import contextlib
import importlib
import io
import os
import shutil
import subprocess
import sys

import pytest

from fieldeval.commands import exits, score
from fieldeval.errors import EvalError, MissingDependency
from fieldeval.files import REPO_ROOT
from fieldeval.harness.cases import CaseFileError
from fieldeval.render import extra_missing

SAMPLE = REPO_ROOT / "examples" / "your_own_agent"
SCHEMA = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl"]
COMMANDS = {
    "score": "fieldeval.commands.score",
    "record": "fieldeval.commands.record",
    "compare": "fieldeval.commands.compare",
    "report": "fieldeval.commands.report",
    "stand-in": "fieldeval.commands.stand_in",
    "power": "fieldeval.commands.power",
    "labels": "fieldeval.commands.labels",
    "fcc-record": "walkthroughs.fcc.record",
}


def command(args, cwd, **options):
    env = {**os.environ, "EVAL_NOTEBOOKS_MODE": "replay"}
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, env=env, timeout=120, **options)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The sample scored twice from its two hand-authored prediction files: two saved runs to compare.

    Scored by the score command in this process (its own tests run it as a program); the tests
    below run compare and report as programs on what it wrote.
    """
    project = shutil.copytree(
        SAMPLE, tmp_path_factory.mktemp("exits") / "project", ignore=shutil.ignore_patterns("runs")
    )
    sys.modules.pop("purchase_order", None)  # the copy's schema module, not one another test imported
    with contextlib.chdir(project):
        for predictions, out in (("baseline_answers.jsonl", "old.json"), ("predictions_v2.jsonl", "new.json")):
            printed = io.StringIO()
            code = score.main([*SCHEMA, "--predictions", predictions, "--out", out], out=printed)
            assert code == exits.OK, printed.getvalue()
    sys.modules.pop("purchase_order", None)
    return project


@pytest.mark.parametrize(
    "args",
    [
        ["fieldeval.commands.compare", "old.json", "new.json", "--gate", "overall >= 0"],
        ["fieldeval.commands.report", "new.json", "--out", "page.html"],
    ],
    ids=["compare", "report"],
)
def test_a_closed_standard_output_ends_compare_and_report_quietly_with_141(runs, args):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte (`... | head -0`)
    try:
        done = command(args, runs, stdout=write_end, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == exits.BROKEN_PIPE == 141


def test_with_an_open_pipe_the_same_commands_exit_with_their_verdict(runs):
    done = command(
        ["fieldeval.commands.compare", "old.json", "new.json", "--gate", "overall >= 0"], runs, capture_output=True
    )
    assert done.returncode == exits.OK, done.stderr


def test_an_eval_error_ends_with_its_own_message_and_bad_input():
    out = io.StringIO()

    def body():
        raise CaseFileError("cases.jsonl, line 3: field 'name' is missing; give every case a name")

    assert exits.run(body, err=out) == exits.BAD_INPUT == 2
    assert out.getvalue() == "cases.jsonl, line 3: field 'name' is missing; give every case a name\n"


def test_a_missing_library_ends_with_1_and_names_the_extra_and_both_install_lines():
    out = io.StringIO()

    def body():
        raise extra_missing(ModuleNotFoundError("No module named 'jinja2'", name="jinja2"), "report", "the page")

    assert exits.run(body, err=out) == exits.MISSING_DEPENDENCY == 1
    message = out.getvalue()
    assert message.startswith("Missing dependency: jinja2: the page come with the report extra")
    assert "`pip install '.[report]'` from the project's checkout" in message and "`make setup`" in message


def test_a_plain_import_error_names_the_project_install_for_pip_users_first():
    out = io.StringIO()

    def body():
        raise ModuleNotFoundError("No module named 'stickler'", name="stickler")

    assert exits.run(body, err=out) == exits.MISSING_DEPENDENCY
    assert out.getvalue() == (
        "Missing dependency: stickler. Install the project with `pip install .` from the project's checkout "
        "(in the repository: `make setup`).\n"
    )


def test_ctrl_c_ends_with_130_and_one_line(capsys):
    def body():
        raise KeyboardInterrupt

    assert exits.run(body) == exits.INTERRUPTED == 130
    assert capsys.readouterr().err == "Interrupted.\n"


def test_anything_else_is_not_swallowed():
    def body():
        raise ZeroDivisionError("a bug")

    with pytest.raises(ZeroDivisionError):
        exits.run(body)


def test_every_error_the_package_raises_on_purpose_is_an_eval_error_and_keeps_its_builtin_base():
    from fieldeval.exchanges.fixtures import FixtureError
    from fieldeval.files import WriteError
    from fieldeval.formats.json import StrictJSONError
    from fieldeval.harness.schema import SchemaError
    from fieldeval.outputs import OutputError

    for error, builtin in (
        (CaseFileError, ValueError),
        (SchemaError, ValueError),
        (FixtureError, ValueError),
        (OutputError, ValueError),
        (WriteError, OSError),
        (StrictJSONError, ValueError),
        (MissingDependency, ImportError),
    ):
        assert issubclass(error, EvalError) and issubclass(error, builtin), error


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_help_lists_its_codes_from_the_one_table(name):
    done = command([COMMANDS[name], "--help"], REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())  # argparse keeps the epilog's lines; compare words
    for code, meaning in _codes(name):
        assert f"{code} {' '.join(meaning.split())}" in text
    assert "141 standard output was closed early" in text and "130 interrupted" in text
    if any(code == exits.MISSING_DEPENDENCY for code, _ in _codes(name)) and name not in ("compare", "report"):
        assert "`pip install .` from the project's checkout (in the repository: `make setup`)" in text
    if name != "fcc-record":  # the general table documents the package's commands, never an example's
        assert "fcc" not in text.lower() and "datasets server" not in text


def _codes(name: str) -> list[tuple[int, str]]:
    """A command's documented codes: the general table's, or the FCC example's own (`walkthroughs.fcc.record`)."""
    if name == "fcc-record":
        return importlib.import_module(COMMANDS[name]).CODES
    return exits.TABLE[name]


def test_the_general_table_names_only_the_package_commands():
    assert sorted(exits.TABLE) == sorted(name for name in COMMANDS if name != "fcc-record")
    with pytest.raises(KeyError):
        exits.epilog("fcc-record")


def test_a_command_own_codes_map_its_typed_errors_and_the_rest_stay_bad_input():
    class Own(EvalError):
        pass

    class Other(EvalError):
        pass

    out = io.StringIO()

    def raises(error):
        def body():
            raise error

        return body

    assert exits.run(raises(Own("own failure")), err=out, codes=((Own, 3),), user_folder=False) == 3
    assert exits.run(raises(Other("other failure")), err=out, codes=((Own, 3),), user_folder=False) == exits.BAD_INPUT
    assert out.getvalue() == "own failure\nother failure\n"


BAD_INPUTS = {
    "score": ([*SCHEMA, "--predictions", "absent.jsonl"], "--predictions absent.jsonl: no such file"),
    "record": (
        ["--schema", "purchase_order:PurchaseOrder", "--cases", "absent.jsonl", "--task", "extract:task"]
        + ["--cassettes", "cassettes"],
        "absent.jsonl: no case file here (check --cases). Nothing was written.",
    ),
    "compare": (["absent.json", "absent.json"], "absent.json: no saved report here"),
    "report": (["absent.json"], "RUN absent.json: no such file"),
    "stand-in": ([*SCHEMA, "--predictions", "absent.jsonl", "--port", "0"], "The stand-in did not start."),
    "power": (["absent.json", "--target", "total.f1"], "error: absent.json: no saved report here"),
    "labels": (["--cases", "cases.jsonl", "absent.json", "other.json"], "error: absent.json: no such file"),
    "fcc-record": (
        ["--timeout", "0", "--snapshot", "fcc/snapshot.json", "--cases", "fcc/cases.jsonl", "--exchanges", "fcc/x"],
        "Refused: timeout=0.0 is out of range",
    ),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_command_prints_a_bad_input_to_standard_error_and_nothing_to_standard_output(
    name, tmp_path, monkeypatch, capfd
):
    """`eval-score ... > table.txt`: the table file stays empty and the error stays on the screen.

    Each command's `main` runs in this process, its output read at the file descriptors; every
    `python -m` entry point is `sys.exit(main())`, and the score command (the one whose imports
    are the heaviest) also runs as a program, so an import that printed would show there.
    """
    project = shutil.copytree(SAMPLE, tmp_path / "project")
    args, message = BAD_INPUTS[name]
    monkeypatch.chdir(project)
    monkeypatch.delitem(sys.modules, "purchase_order", raising=False)  # the copy's schema module
    code = importlib.import_module(COMMANDS[name]).main(args)
    printed = capfd.readouterr()
    assert code == exits.BAD_INPUT, printed.err
    assert message in printed.err and "Traceback" not in printed.err, printed.err
    assert printed.out == ""
    assert sorted(path.name for path in project.iterdir()) == sorted(path.name for path in SAMPLE.iterdir())
    if name == "score":
        done = command([COMMANDS[name], *args], project, capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (exits.BAD_INPUT, ""), done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr, done.stderr
