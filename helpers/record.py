"""Record your agent's exchanges into a cassette folder, live, one exchange file per case.

    python -m helpers.record --schema M:Class --cases CASES.jsonl --task M:function --cassettes DIR [--only NAME ...]

Runs `task(case, model)` for each case (or each `--only` case) with a recording wrapper around
the live Bedrock model, and writes `DIR/<case name>.json` for each case that succeeded, bound to
the prompt the task sent. `make record` is this command applied to the bundled offline invoice.

Credentials come from the profile in AWS_PROFILE (or any source boto3 resolves), checked offline
before any call; the region from AWS_REGION, then AWS_DEFAULT_REGION, then the profile, then
us-east-1. This module imports only the standard library at the top, so `--help` answers at once
and a missing dependency is reported as exit 1 with a message rather than as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

EXIT_CODES = """\
Exit codes:
  0  recorded: each case's cassette was replaced atomically (hand_authored false, recording
     time set); the payload and what changed from the previous cassette are printed for review
  1  a dependency is missing (strands-agents, boto3): run `make setup`
  2  bad input (a case file, schema, task or --only name that does not load), or the agent
     call failed: bad or absent credentials, no model access, wrong region, or any runtime
     error; the exception type and message are printed
  3  the model never called the structured-output tool for a case
Each case is written only after it succeeded; a failed case leaves its cassette byte for byte
as it was, and no other file is touched.
"""
# The values in helpers.exchanges.recording, which cannot be imported before the dependency check.
EXIT_OK = 0
EXIT_MISSING_DEPENDENCY = 1
EXIT_BAD_INPUT = 2
REQUIRED = {"strands": "strands-agents", "boto3": "boto3", "botocore": "botocore", "pydantic": "pydantic"}


def missing_dependencies() -> list[str]:
    """The packages a live recording needs that do not import."""
    missing = []
    for module, package in REQUIRED.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    return missing


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.record",
        description=__doc__.split("\n\n")[0].strip(),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--schema", required=True, help="the output model, as module:Class")
    parser.add_argument("--cases", required=True, type=Path, help="the JSONL case file")
    parser.add_argument("--task", required=True, help="the task function task(case, model), as module:function")
    parser.add_argument("--cassettes", required=True, type=Path, help="the cassette folder (created if absent)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="record only these cases (default: every case)")
    parser.add_argument("--model-id", help="the Bedrock model id (default: helpers.services.bedrock.MODEL_ID)")
    parser.add_argument("--region", default=None, help="overrides AWS_REGION and the profile's region")
    return parser


def record_cases(
    schema: Any,
    cases: Sequence[Any],
    task: Callable[[Any, Any], Any],
    cassettes: Path | str,
    *,
    model: Any,
    model_id: str,
    record_command: str,
    only: Sequence[str] | None = None,
    out: TextIO | None = None,
) -> int:
    """Record each case (or each `only` case) through `model` into its cassette; returns the exit code.

    Each case is captured, then written atomically, before the next one runs, so a failure later
    on keeps what already succeeded; a failed case leaves its cassette byte for byte. Paths that
    would collide are refused before anything runs.

    Args:
        schema: The pydantic output model.
        cases: The Strands Evals cases (`helpers.harness.cases.load_cases`).
        task: `task(case, model)`, returning the structured output.
        model: The provider to record (Bedrock, or a stand-in in tests).
        record_command: Named in each cassette's provenance note and in replay errors.
    """
    from helpers.exchanges.cassettes import CassetteError, cassette_paths
    from helpers.exchanges.recording import EXIT_AGENT_FAILED, capture_task, commit_fixture, report_agent_failure

    out = out or sys.stdout
    try:
        paths = cassette_paths(cassettes, [case.name for case in cases])
    except CassetteError as exc:
        print(f"{exc}. Nothing was written.", file=out)
        return EXIT_BAD_INPUT
    unknown = [name for name in only or [] if name not in paths]
    if unknown:
        print(
            f"--only {', '.join(map(repr, unknown))}: no such case in the case file; "
            f"the cases are {', '.join(map(repr, paths))}. Nothing was written.",
            file=out,
        )
        return EXIT_BAD_INPUT
    selected = [case for case in cases if not only or case.name in only]
    note = (
        f"Recorded from {model_id} by `{record_command}`: the chunks and usage are exactly as the provider "
        "streamed them."
    )
    failures: list[tuple[str, int]] = []
    for case in selected:
        path = paths[case.name]
        captured = capture_task(
            task, case, model, schema, source=str(path), model_id=model_id, note=note, label=case.name, out=out
        )
        if isinstance(captured, int):
            print(f"{case.name}: {path} was left unchanged.", file=out)
            failures.append((case.name, captured))
            continue
        try:
            commit_fixture(captured, path, out, label=case.name)
        except OSError as exc:  # a full disk, a read-only folder: the atomic write kept the old file
            report_agent_failure(exc, out, subject=f"{case.name}: writing {path}")
            print(f"{case.name}: {path} was left unchanged.", file=out)
            failures.append((case.name, EXIT_AGENT_FAILED))
    recorded = len(selected) - len(failures)
    print(f"Recorded {recorded} of {len(selected)} case(s) into {cassettes}.", file=out)
    if failures:
        print(f"Failed: {', '.join(name for name, _ in failures)} (their cassettes are unchanged).", file=out)
        return failures[0][1]
    return EXIT_OK


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the command; returns the exit code. `model_factory` replaces Bedrock in tests."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    if not args.cases.is_file():
        print(f"{args.cases}: no case file here (check --cases). Nothing was written.", file=out)
        return EXIT_BAD_INPUT
    missing = missing_dependencies()
    if missing:
        print(f"Missing dependency: {', '.join(missing)}. Install the project with `make setup`.", file=out)
        return EXIT_MISSING_DEPENDENCY
    from helpers.harness.cases import CaseFileError, load_cases
    from helpers.harness.schema import SchemaError, load_schema, load_task
    from helpers.outputs import OutputError
    from helpers.services.bedrock import MODEL_ID

    try:
        schema = load_schema(args.schema)
        task = load_task(args.task)
        cases = load_cases(args.cases, schema)
        check_cassette_outputs(args, [case.name for case in cases])
    except (SchemaError, CaseFileError, OutputError) as exc:
        print(f"{exc}. Nothing was written.", file=out)
        return EXIT_BAD_INPUT
    model_id = args.model_id or MODEL_ID
    model = model_factory() if model_factory is not None else _bedrock(model_id, args.region, out)
    if model is None:
        print("Nothing was written.", file=out)
        return EXIT_BAD_INPUT
    return record_cases(
        schema,
        cases,
        task,
        args.cassettes,
        model=model,
        model_id=model_id,
        record_command=record_command(args.schema, args.cases, args.task, args.cassettes),
        only=args.only,
        out=out,
    )


def check_cassette_outputs(args: argparse.Namespace, names: Sequence[str]) -> None:
    """Refuse, before any call, a cassette file that is an input of the run, a symlink, a device or a folder."""
    from helpers.exchanges.cassettes import CassetteError, cassette_paths
    from helpers.outputs import OutputError, check_folder, check_output, module_file, refuse_overlap

    check_folder(args.cassettes, "--cassettes")
    try:
        paths = cassette_paths(args.cassettes, names)
    except CassetteError as exc:
        raise OutputError(str(exc)) from exc
    selected = {name: path for name, path in paths.items() if not args.only or name in args.only}
    for name, path in selected.items():
        check_output(path, f"the cassette of case {name!r}")
    inputs = {"--cases": args.cases, "the --schema module": module_file(args.schema)}
    refuse_overlap(
        {f"the cassette of case {name!r}": path for name, path in selected.items()},
        inputs | {"the --task module": module_file(args.task)},
    )


def record_command(schema: str, cases: Path | str, task: str, cassettes: Path | str) -> str:
    """The command that records this cassette folder, for provenance notes and replay errors."""
    parts = ["python", "-m", "helpers.record", "--schema", schema, "--cases", str(cases)]
    parts += ["--task", task, "--cassettes", str(cassettes)]
    return shlex.join(parts)


def _bedrock(model_id: str, region: str | None, out: TextIO) -> Any:
    """The live model after an offline credentials check, or None once the reason is printed."""
    from helpers.exchanges.recording import report_agent_failure
    from helpers.services.bedrock import check_credentials, live_model, resolve_region

    try:
        check_credentials()
        region = region or resolve_region()
        model = live_model(model_id=model_id, region=region)
    except Exception as exc:  # no credentials, a profile that does not exist, a region boto3 refuses
        report_agent_failure(exc, out)
        return None
    profile = os.environ.get("AWS_PROFILE") or "(boto3 default chain)"
    print(f"Recording with {model_id} in {region}, AWS profile {profile}.", file=out)
    return model


if __name__ == "__main__":
    sys.exit(main())
