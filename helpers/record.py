"""Re-record the offline invoice exchange against Bedrock (`make record`).

    python -m helpers.record [--fixture PATH] [--model-id ID] [--region REGION]

Credentials come from the profile in AWS_PROFILE (or any source boto3 resolves); the region
from AWS_REGION, then AWS_DEFAULT_REGION, then the profile, then us-east-1.

The exit codes are in `EXIT_CODES` (and `--help`); `make record-fcc` uses the same ones.

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
# The value in helpers.exchanges.recording, which cannot be imported before the dependency check.
EXIT_MISSING_DEPENDENCY = 1
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
    parser.add_argument(
        "--fixture", type=Path, help="the fixture to replace (default: data/exchanges/offline_invoice.json)"
    )
    parser.add_argument("--model-id", help="the Bedrock model id (default: helpers.services.bedrock.MODEL_ID)")
    parser.add_argument("--region", default=None, help="overrides AWS_REGION and the profile's region")
    return parser


def main(
    argv: list[str] | None = None,
    *,
    model_factory: Callable[[], Any] | None = None,
    out: TextIO | None = None,
) -> int:
    """Run the command; returns the exit code. `model_factory` replaces Bedrock in tests."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)
    missing = missing_dependencies()
    if missing:
        print(f"Missing dependency: {', '.join(missing)}. Install the project with `make setup`.", file=out)
        return EXIT_MISSING_DEPENDENCY
    from helpers.examples import offline_invoice
    from helpers.exchanges.recording import EXIT_AGENT_FAILED, record_structured_output
    from helpers.services.bedrock import MODEL_ID

    fixture = args.fixture or offline_invoice.FIXTURE_PATH
    model_id = args.model_id or MODEL_ID
    model = model_factory() if model_factory is not None else _bedrock(model_id, args.region, out)
    if model is None:
        print(f"{fixture} was left unchanged.", file=out)
        return EXIT_AGENT_FAILED
    return record_structured_output(
        model,
        offline_invoice.prompt(),
        offline_invoice.OUTPUT_MODEL,
        fixture,
        model_id=model_id,
        note=(
            f"Recorded from {model_id} by `{offline_invoice.RECORD_COMMAND}`: the chunks and "
            "usage are exactly as Bedrock streamed them."
        ),
        out=out,
    )


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
