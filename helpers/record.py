"""Re-record the offline invoice exchange against Bedrock (`make record`).

    python -m helpers.record [--fixture PATH] [--model-id ID] [--region REGION]

Credentials come from the profile in AWS_PROFILE (or any source boto3 resolves); the region
from AWS_REGION, then AWS_DEFAULT_REGION, then the profile, then us-east-1.

The exit codes are in `EXIT_CODES` (and `--help`); the record commands share them.

This module imports only the standard library at the top, so a missing dependency is
reported as exit 1 with a message rather than as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

EXIT_CODES = """\
Exit codes:
  0  recorded: the fixture was replaced atomically (hand_authored false, recording time set);
     the payload and what changed from the previous fixture are printed for review
  1  a dependency is missing (strands-agents, boto3): run `make setup`
  2  the agent call failed: bad or absent credentials, no model access, wrong region, or any
     runtime error; the exception type and message are printed
  3  the model never called the structured-output tool
On every failure the existing fixture is left byte for byte as it was.
"""
# Same values as helpers.recording, which cannot be imported before the dependency check.
EXIT_MISSING_DEPENDENCY = 1
EXIT_AGENT_FAILED = 2
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


def run_record_command(
    record: Callable[[Any, str], int],
    *,
    model_id: str | None = None,
    region: str | None = None,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
) -> int:
    """The shared skeleton of every record command: dependencies, credentials, model, record.

    Args:
        record: Called with the model provider and the model id; returns the exit code
            (usually that of `helpers.recording.record_structured_output`).
        model_id: The Bedrock model to record (default `helpers.bedrock.MODEL_ID`).
        region: Overrides the resolved region.
        model_factory: Builds the provider instead of Bedrock (tests pass a scripted fake);
            when given, the credentials check is skipped.
        out: Where to print (stdout by default).
    """
    out = out or sys.stdout
    missing = missing_dependencies()
    if missing:
        print(f"Missing dependency: {', '.join(missing)}. Install the project with `make setup`.", file=out)
        return EXIT_MISSING_DEPENDENCY
    from helpers.bedrock import MODEL_ID, CredentialsError, check_credentials, live_model, resolve_region

    model_id = model_id or MODEL_ID
    if model_factory is not None:
        return record(model_factory(), model_id)

    try:
        check_credentials()
        region = region or resolve_region()
        model = live_model(model_id=model_id, region=region)
    except CredentialsError as exc:
        print(f"The agent call failed before it started: CredentialsError: {exc}", file=out)
        return EXIT_AGENT_FAILED
    profile = os.environ.get("AWS_PROFILE") or "(boto3 default chain)"
    print(f"Recording with {model_id} in {region}, AWS profile {profile}.", file=out)
    return record(model, model_id)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.record",
        description=__doc__.split("\n\n")[0].strip(),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--fixture", type=Path, help="the fixture to replace (default: data/exchanges/offline_invoice.json)"
    )
    parser.add_argument("--model-id", help="the Bedrock model id (default: helpers.bedrock.MODEL_ID)")
    parser.add_argument("--region", default=None, help="overrides AWS_REGION and the profile's region")
    return parser


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
) -> int:
    args = build_parser().parse_args(argv)

    def record(model: Any, model_id: str) -> int:
        from helpers import offline_invoice
        from helpers.recording import record_structured_output

        return record_structured_output(
            model,
            offline_invoice.prompt(),
            offline_invoice.OUTPUT_MODEL,
            args.fixture or offline_invoice.FIXTURE_PATH,
            model_id=model_id,
            note=(
                f"Recorded from {model_id} by `{offline_invoice.RECORD_COMMAND}`: the chunks and "
                "usage are exactly as Bedrock streamed them."
            ),
            out=out,
        )

    return run_record_command(record, model_id=args.model_id, region=args.region, model_factory=model_factory, out=out)


if __name__ == "__main__":
    sys.exit(main())
