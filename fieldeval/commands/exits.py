"""The commands' one exit-code table, their one error wrapper, and the one missing-dependency message.

Every command documents its codes from `TABLE` (rendered into its `--help` by `epilog`) and runs
its body through `run`, so a message written for the user (`fieldeval.errors.EvalError`), a closed
pipe (`score ... | head`), Ctrl-C and a missing library end the same way in each. Every
command prints its errors and refusals to standard error and its results (tables, summaries,
"Saved ...") to standard output, so `eval-score ... > table.txt` keeps the file clean and the
error on the screen. Standard library only: each command imports this before parsing its arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from fieldeval.errors import INSTALL, EvalError, missing_dependency

OK = 0
MISSING_DEPENDENCY = 1  # score, record, stand-in: a library does not import
GATE_FAILED = 1  # compare, report: the run was read and a gate failed
BAD_INPUT = 2  # every command: an argument, a file, a schema, a task or a live call that failed
NO_STRUCTURED_OUTPUT = 3  # record: the model never produced the structured output
INTERNAL = 3  # compare, report: a bug, never a gate result
INTERRUPTED = 128 + 2  # Ctrl-C (SIGINT), as a shell reports it
BROKEN_PIPE = 128 + 13  # standard output closed early (SIGPIPE), as `cat` or `grep` report it

_MISSING = f"a dependency is missing: the message names it and its install line, {INSTALL}"
_BAD = "bad input: the message names the file, the line or case, the field and the fix"
_COMMON = [
    (INTERRUPTED, "interrupted (Ctrl-C)"),
    (BROKEN_PIPE, "standard output was closed early (`... | head`): the command stopped quietly"),
]

# Each command's codes, in the order its --help lists them.
TABLE: dict[str, list[tuple[int, str]]] = {
    "score": [
        (OK, "scored: the report was written to --out and/or the results file to --results, the tables printed"),
        (MISSING_DEPENDENCY, f"{_MISSING}; for --cluster: pip install '.[cluster]'"),
        (
            BAD_INPUT,
            f"{_BAD}: a file, schema, task or cassette that does not load, a replay that does not match its "
            "cassette, a task that raised, a live run that gave up on a provider throttling every call for "
            "--give-up-after seconds, or a Dask scheduler that does not answer; nothing was written",
        ),
    ],
    "record": [
        (
            OK,
            "recorded: each case's cassette was replaced atomically (hand_authored false, recording time set); "
            "the payload and what changed from the previous cassette are printed for review",
        ),
        (MISSING_DEPENDENCY, f"{_MISSING} (strands-agents, boto3)"),
        (
            BAD_INPUT,
            f"{_BAD} (a case file, schema, task, --model factory or --only name that does not load, a task that "
            "returns something other than the structured output), or the agent call failed: bad or absent "
            "credentials, no model access, wrong region, or any runtime error; the exception type and message "
            "are printed; or the run gave up on a provider that throttled every call for --give-up-after seconds "
            "(the cassettes recorded before are kept)",
        ),
        (
            NO_STRUCTURED_OUTPUT,
            "the model never produced the structured output for a case (no call of the structured-output tool, "
            "no JSON answer), or it used up --max-calls model calls trying",
        ),
    ],
    "compare": [
        (
            OK,
            "every gate passed (or no gate was given); with several candidates, the recommended run passes every "
            "gate (or no gate was given)",
        ),
        (
            GATE_FAILED,
            "a gate failed; with several candidates, the recommended run failed a gate, or gates were given and "
            "no run could be recommended (none could be priced)",
        ),
        (
            BAD_INPUT,
            f"{_BAD}: an argument out of range, a malformed rule, a missing, foreign or malformed file, "
            "nothing to pair, two runs scored by different rules (schema fingerprint, comparators or match "
            "threshold; --allow-scoring-change compares them anyway), an output that is an input; with several "
            "candidates also a run named twice, candidates pairing different cases with the baseline, or "
            "--intervals per-field",
        ),
        (INTERNAL, "an internal error: a bug in this command, never a gate result"),
    ],
    "report": [
        (OK, "written; every gate passed (or none was given)"),
        (GATE_FAILED, "written; a gate failed"),
        (
            BAD_INPUT,
            f"{_BAD}: an argument, a rule, a missing or malformed file, a --schema that does not import, two runs "
            "scored by different rules (as compare), an output that is an input, or the report extra missing "
            "(pip install '.[report]'); nothing was written",
        ),
        (INTERNAL, "an internal error: a bug in this command, never a gate result"),
    ],
    "power": [
        (OK, "estimated"),
        (BAD_INPUT, f"{_BAD}: an argument out of range, a missing or malformed file, a target the baseline lacks"),
        (INTERNAL, "an internal error: a bug in this command"),
    ],
    "labels": [
        (OK, "audited: the suspects were printed, or written to --out (none found is not an error)"),
        (
            BAD_INPUT,
            f"{_BAD}: fewer than two runs, a run named twice, a missing or malformed file, a run saved without "
            "leaf diffs, runs scored by different rules (schema, comparators, match threshold) or against another "
            "case set or other labels, a --schema other than the runs', an output that is an input; nothing was "
            "written",
        ),
        (INTERNAL, "an internal error: a bug in this command"),
    ],
    "stand-in": [  # it serves until Ctrl-C, which ends it with 130 like every command
        (MISSING_DEPENDENCY, _MISSING),
        (BAD_INPUT, f"{_BAD}: a file or schema that does not load, a port in use; the stand-in did not start"),
    ],
}


def epilog(command: str, note: str = "", codes: Sequence[tuple[int, str]] | None = None) -> str:
    """The `Exit codes:` block of a command's --help, from `TABLE` (`note`: a closing paragraph).

    `codes` replaces `TABLE[command]` for a command outside the package (an example's own), which
    documents its codes where it lives; Ctrl-C and a closed pipe end it as every command.
    """
    lines = ["Exit codes:"]
    for code, meaning in [*(TABLE[command] if codes is None else codes), *_COMMON]:
        lines.append(  # an option named in a meaning (--allow-scoring-change) stays whole on its line
            textwrap.fill(meaning, 100, initial_indent=f"  {code}  ", subsequent_indent=" " * 5, break_on_hyphens=False)
        )
    return "\n".join(lines) + (f"\n{note}" if note else "") + "\n"


def parser(
    module: str,
    command: str,
    description: str,
    *,
    before: str = "",
    note: str = "",
    cls: type[argparse.ArgumentParser] = argparse.ArgumentParser,
    codes: Sequence[tuple[int, str]] | None = None,
) -> argparse.ArgumentParser:
    """A command's argument parser: named `python -m MODULE`, its help ending in its exit codes.

    `before` is help text shown above the codes, `note` a paragraph after them, `codes` a command's
    own codes instead of `TABLE[command]` (see `epilog`); `cls` an ArgumentParser subclass, for a
    command whose refusals add a sentence of their own.
    """
    return cls(
        prog=f"python -m {module}",
        description=description,
        epilog=(f"{before}\n\n" if before else "") + epilog(command, note, codes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def parse(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None, check: Callable[[argparse.Namespace], None]
) -> argparse.Namespace:
    """Parse a command's arguments and range-check them before anything heavy loads.

    `check` raises `ValueError` for the first value out of range; that ends the command the way
    argparse's own errors do (the usage line, the message, exit 2), so every argument error reads alike.
    """
    args = parser.parse_args(argv)
    try:
        check(args)
    except ValueError as exc:
        parser.error(str(exc))
    return args


def code_of(exc: BaseException, codes: Sequence[tuple[type[BaseException], int]] = ()) -> int:
    """The exit code of an error the wrapper catches: the command's own `codes`, a missing library, or bad input.

    Library code raises typed errors and knows no exit code; `codes` pairs an error type with the
    code its command documents, the first match winning.
    """
    for kind, code in codes:
        if isinstance(exc, kind):
            return code
    if isinstance(exc, ImportError) or getattr(exc, "missing", False):
        return MISSING_DEPENDENCY
    return BAD_INPUT


def run(
    body: Callable[[], int],
    *,
    err: TextIO | None = None,
    extra: str | None = None,
    refused: tuple[type[BaseException], ...] = (),
    note: str = "",
    internal: str | None = None,
    user_folder: bool = True,
    codes: Sequence[tuple[type[BaseException], int]] = (),
) -> int:
    """Run a command's body and return its exit code, ending every command's errors the same way.

    With `user_folder` (score, record, the stand-in), the working folder is on the import path
    while the body runs, after everything else, so the modules a task imports from its folder are
    found (`fieldeval.harness.import_path`). `report`, `compare` and `power` read data and pass
    False: with the folder on the path, a library's optional import (pandas tries `pyarrow`) would
    run a `pyarrow.py` that lies in the folder a colleague's run file was opened in. Their one
    import, `report --schema`, puts the folder on the path for that import only.

    - argparse's own exit (`--help` 0, a malformed argument 2) is returned, not raised;
    - a closed standard output (`| head`) stops quietly with `BROKEN_PIPE`, and standard output
      is pointed at /dev/null so Python's own flush at exit cannot raise the same error again;
    - Ctrl-C ends with `INTERRUPTED` and one line, not a traceback;
    - an error of a `refused` type (what the command reads as bad input: a foreign or malformed
      file) prints `refuse` (with `note`) and ends with `BAD_INPUT`;
    - an `EvalError` (its message already names the file, the field and the fix) is printed and
      ends with `code_of` it: the command's own `codes` (record's exit 3 for `NoStructuredOutput`),
      else 1 for a missing library, else 2; any other missing library prints `missing_dependency`
      (naming `extra`, the extra the command's optional parts come with) and ends with 1;
    - with `internal` (the command's name, for commands whose exit 1 is a failed gate), anything
      else, a missing library included, is a bug: one line and `INTERNAL`, so a crash never reads
      as a failed gate. Without it, a bug keeps its traceback.

    Every message goes to `err`: standard error, unless a test passes its own stream.
    """
    from fieldeval.harness.import_path import folder_on_path

    try:
        with folder_on_path(Path.cwd()) if user_folder else contextlib.nullcontext():
            return body()
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else BAD_INPUT
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE
    except KeyboardInterrupt as exc:  # a command may say what it stopped (`KeyboardInterrupt("Interrupted: ...")`)
        print(str(exc) or "Interrupted.", file=err or sys.stderr)
        return INTERRUPTED
    except refused as exc:
        return refuse(exc, note=note, err=err)
    except EvalError as exc:
        print(str(exc), file=err or sys.stderr)
        return code_of(exc, codes)
    except ImportError as exc:
        if internal is not None:
            return _bug(internal, exc, err)
        print(missing_dependency(exc.name or str(exc), extra), file=err or sys.stderr)
        return MISSING_DEPENDENCY
    except Exception as exc:
        if internal is None:
            raise
        return _bug(internal, exc, err)


def _bug(command: str, exc: BaseException, err: TextIO | None) -> int:
    print(
        f"error: internal error in {command} ({type(exc).__name__}: {exc}); this is a bug in the command, "
        "not a gate result or a problem with your files",
        file=err or sys.stderr,
    )
    return INTERNAL


def refuse(problem: object, *, note: str = "", err: TextIO | None = None) -> int:
    """Print one bad-input line (`error: ...`, then `note`, e.g. "; nothing was written") and return `BAD_INPUT`."""
    print(f"error: {problem}{note}", file=err or sys.stderr)
    return BAD_INPUT


def nothing_written(problem: object) -> str:
    """A refusal of `score` or `record` and the promise after it: on its own line when the message has several."""
    message = str(problem).rstrip("\n")
    return f"{message}{chr(10) if chr(10) in str(problem) else ' '}Nothing was written."


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): nothing to flush
        pass
