"""Record your agent's exchanges into a cassette folder, live, one exchange file per case.

    python -m helpers.commands.record --schema M:Class --cases CASES.jsonl --task M:function --cassettes DIR \
        [--only NAME ...] [--record-mode all|missing|stale] [--concurrency N] [--model M:function] \
        [--match-on PART,...] [--max-calls N]

Runs `task(case, model)` for each case the record mode selects (of the `--only` cases, or all)
with a recording wrapper around the live model, up to `--concurrency` cases at once, and writes
`DIR/<case name>.json` for each case that succeeded: every request the agent sent and every
event that came back. `--record-mode missing` records only cases with no cassette; `stale` also
those whose cassette a replay would refuse, found by replaying every cassette first, offline. A
throttled provider slows the whole run down instead of failing cases. `make record` is this
command applied to the bundled offline invoice.

The model is Bedrock unless `--model module:function` names a factory returning any Strands
Model. For Bedrock, credentials come from the profile in AWS_PROFILE (or any source boto3
resolves), checked offline before any call; the region from AWS_REGION, then AWS_DEFAULT_REGION,
then the profile, then us-east-1. This module imports only the standard library at the top, so `--help` answers at once
and a missing dependency is reported as exit 1 with a message rather than as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from helpers.commands import exits

WRITES = (  # the closing paragraph of --help
    "Each case is written only after it succeeded; a failed case leaves its cassette byte for byte\n"
    "as it was, and no other file is touched."
)
EXIT_OK = exits.OK
EXIT_MISSING_DEPENDENCY = exits.MISSING_DEPENDENCY
EXIT_BAD_INPUT = exits.BAD_INPUT
# helpers.formats.exchange.DEFAULT_MATCH_ON and MATCH_PARTS, and recording.DEFAULT_MAX_CALLS (a test checks they agree).
DEFAULT_MATCH_ON = ("system", "tools", "tool_choice", "output_schema", "messages")
MATCH_PARTS = ("system", "tools", "tool_choice", "output_schema", "messages", "user_text")
DEFAULT_MAX_CALLS = 12
RECORD_MODES = ("all", "missing", "stale")  # helpers.exchanges.recorder.RECORD_MODES
DEFAULT_CONCURRENCY = 4  # helpers.exchanges.recorder.DEFAULT_CONCURRENCY, which says why
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
    parser = exits.parser("helpers.commands.record", "record", __doc__.split("\n\n")[0].strip(), note=WRITES)
    parser.add_argument("--schema", required=True, help="the output model, as module:Class")
    parser.add_argument("--cases", required=True, type=Path, help="the JSONL case file")
    parser.add_argument("--task", required=True, help="the task function task(case, model), as module:function")
    parser.add_argument("--cassettes", required=True, type=Path, help="the cassette folder (created if absent)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="record only these cases (default: every case)")
    parser.add_argument(
        "--record-mode",
        choices=RECORD_MODES,
        default="all",
        help="all: every selected case (default); missing: cases with no cassette; stale: those and every case "
        "whose cassette a replay would refuse",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=DEFAULT_CONCURRENCY,
        help=f"cases in flight at once (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        help="a function returning the Strands Model to record (default: Bedrock, see --model-id and --region)",
    )
    parser.add_argument("--model-id", help="the Bedrock model id (default: helpers.services.bedrock.MODEL_ID)")
    parser.add_argument("--region", default=None, help="overrides AWS_REGION and the profile's region (Bedrock)")
    parser.add_argument(
        "--match-on",
        metavar="PART,...",
        default=",".join(DEFAULT_MATCH_ON),
        help="the request parts a replay must match, written into each cassette: system, tools, tool_choice, "
        f"output_schema, messages, user_text (default: {','.join(DEFAULT_MATCH_ON)})",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        default=DEFAULT_MAX_CALLS,
        help=f"model calls one case may make before it ends with exit 3 (default {DEFAULT_MAX_CALLS})",
    )
    return parser


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Run the command; returns the exit code. `model_factory` replaces Bedrock in tests.

    Progress and the review of each recording go to `out` (standard output), every error to `err`
    (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    return exits.run(lambda: _main(build_parser().parse_args(argv), model_factory, out, err), err=err)


def _main(args: argparse.Namespace, model_factory: Callable[[], Any] | None, out: TextIO, err: TextIO) -> int:
    if not args.cases.is_file():
        print(f"{args.cases}: no case file here (check --cases). Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    problem = _option_problem(args)
    if problem is not None:
        print(f"{problem} Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    missing = missing_dependencies()
    if missing:
        print(exits.missing_dependency(", ".join(missing)), file=err)
        return EXIT_MISSING_DEPENDENCY
    from helpers.exchanges.record_options import RecordOptions, record_command
    from helpers.exchanges.recorder import record_cases
    from helpers.harness.cases import CaseFileError, load_cases
    from helpers.harness.schema import SchemaError, load_schema, load_task
    from helpers.outputs import OutputError

    try:
        schema = load_schema(args.schema)
        task = load_task(args.task)
        cases = load_cases(args.cases, schema)
        check_cassette_outputs(args, [case.name for case in cases])
    except (SchemaError, CaseFileError, OutputError) as exc:
        print(f"{exc}. Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    model = model_factory() if model_factory is not None else _live_model(args, out, err)
    if model is None:
        print("Nothing was written.", file=err)
        return EXIT_BAD_INPUT
    from helpers.exchanges.provenance import model_id as model_id_of
    from helpers.services.bedrock import MODEL_ID

    options = RecordOptions(model=args.model, match_on=tuple(args.match_on.split(",")), max_calls=args.max_calls)
    model_id = model_id_of(model) or (args.model_id or MODEL_ID if args.model is None else "(no model id)")
    return record_cases(
        schema,
        cases,
        task,
        args.cassettes,
        model=model,
        model_id=model_id,
        record_command=record_command(args.schema, args.cases, args.task, args.cassettes, options),
        only=args.only,
        out=out,
        err=err,
        match_on=options.match_on,
        max_calls=args.max_calls,
        model_option=args.model,
        record_mode=args.record_mode,
        concurrency=args.concurrency,
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
    inputs["the --task module"] = module_file(args.task)
    if args.model is not None:
        inputs["the --model module"] = module_file(args.model)
    refuse_overlap({f"the cassette of case {name!r}": path for name, path in selected.items()}, inputs)


def _option_problem(args: argparse.Namespace) -> str | None:
    """The first option that is out of range or contradicts another, as a message with the fix."""
    if args.concurrency < 1:
        return f"--concurrency {args.concurrency}: at least one case must be in flight; pass a count such as 4."
    if args.max_calls < 1:
        return f"--max-calls {args.max_calls}: a case needs at least one model call; pass a count such as 12."
    unknown = [part for part in args.match_on.split(",") if part not in MATCH_PARTS]
    if unknown or not args.match_on:
        return f"--match-on {args.match_on!r}: name parts from {', '.join(MATCH_PARTS)}, separated by commas."
    if args.model is not None and (args.model_id is not None or args.region is not None):
        return "--model-id and --region set up the default Bedrock model; with --model, set them in your factory."
    return None


def _live_model(args: argparse.Namespace, out: TextIO, err: TextIO) -> Any:
    """The model to record: the `--model` factory's, or Bedrock after an offline credentials check.

    Returns None once the reason it could not be built is printed.
    """
    from helpers.exchanges.recording import report_agent_failure
    from helpers.services.models import ModelFactoryError, bedrock_model, describe_live, model_from_factory

    try:
        if args.model is not None:
            model = model_from_factory(args.model)
            where = ""
        else:
            model, region = bedrock_model(args.model_id, args.region)
            where = f" in {region}, AWS profile {os.environ.get('AWS_PROFILE') or '(boto3 default chain)'}"
    except ModelFactoryError as exc:
        print(f"{exc}.", file=err)
        return None
    except Exception as exc:  # no credentials, a profile that does not exist, a region boto3 refuses
        report_agent_failure(exc, err)
        return None
    print(f"Recording with {describe_live(model)}{where}.", file=out)
    return model


if __name__ == "__main__":
    sys.exit(main())
