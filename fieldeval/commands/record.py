"""Record your agent's exchanges into a cassette folder, live, one exchange file per case.

    python -m fieldeval.commands.record --schema M:Class --cases CASES.jsonl --task M:function --cassettes DIR \
        [--only NAME ...] [--record-mode all|missing|stale] [--concurrency N] [--model M:function] \
        [--match-on PART,...] [--max-calls N] [--give-up-after SECONDS] [--verbose]

Runs `task(case, model)` for each case the record mode selects (of the `--only` cases, or all)
with a recording wrapper around the live model, up to `--concurrency` cases at once, and writes
`DIR/<case name>.json` for each case that succeeded: every request the agent sent and every
event that came back. `--record-mode missing` records only cases with no cassette; `stale` also
those whose cassette a replay would refuse, found by replaying every cassette first, offline. A
throttled provider slows the whole run down instead of failing cases; one that throttles every
call for `--give-up-after` seconds stops the run (exit 2), keeping every cassette written. `make
record` is this command applied to the bundled offline invoice.

The model is Bedrock unless `--model module:function` names a factory returning any Strands
Model. For Bedrock, credentials come from the profile in AWS_PROFILE (or any source boto3
resolves), checked offline before any call; the region from AWS_REGION, then AWS_DEFAULT_REGION,
then the profile, then us-east-1. `fieldeval.flows.record` is the run, step by step. This module
imports only the standard library at the top, so `--help` answers at once and a missing
dependency is reported as exit 1 with a message rather than as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from fieldeval.commands import exits
from fieldeval.commands.logs import strands_logs
from fieldeval.errors import NoStructuredOutput
from fieldeval.exchanges.throttle import GIVE_UP_AFTER, MAX_GIVE_UP_AFTER
from fieldeval.flows import Refused
from fieldeval.flows import record as flow
from fieldeval.flows.record import DEFAULT_CONCURRENCY, DEFAULT_MATCH_ON, DEFAULT_MAX_CALLS, RECORD_MODES

WRITES = (  # the closing paragraph of --help
    "Each case is written only after it succeeded; a failed case leaves its cassette byte for byte\n"
    "as it was, and no other file is touched."
)
EXIT_OK = exits.OK
EXIT_MISSING_DEPENDENCY = exits.MISSING_DEPENDENCY
EXIT_BAD_INPUT = exits.BAD_INPUT
EXIT_NO_STRUCTURED_OUTPUT = exits.NO_STRUCTURED_OUTPUT
# The recorder's errors with a code of their own; every other `EvalError` it raises is bad input (exit 2).
CODES = ((NoStructuredOutput, EXIT_NO_STRUCTURED_OUTPUT),)


def build_parser() -> argparse.ArgumentParser:
    parser = exits.parser("fieldeval.commands.record", "record", __doc__.split("\n\n")[0].strip(), note=WRITES)
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
        help=f"cases in flight at once (default {DEFAULT_CONCURRENCY}; fewer, said, if the open-file limit "
        "would not hold them)",
    )
    parser.add_argument(
        "--model",
        metavar="MODULE:FUNCTION",
        help="a function returning the Strands Model to record (default: Bedrock, see --model-id and --region)",
    )
    parser.add_argument("--model-id", help="the Bedrock model id (default: fieldeval.services.bedrock.MODEL_ID)")
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
    add_live_arguments(parser)
    return parser


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that bound a live run and show what Strands logs (`score` has the same for `--mode live`)."""
    parser.add_argument(
        "--give-up-after",
        type=float,
        default=GIVE_UP_AFTER,
        metavar="SECONDS",
        help="stop the run (exit 2, keeping what was written) once the provider has been throttling this long "
        f"with no call succeeding, above 0 and at most {MAX_GIVE_UP_AFTER:g} (default {GIVE_UP_AFTER:g})",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print Strands' own log lines (its warnings, such as one per throttled call) to standard error",
    )


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
    return exits.run(lambda: _main(build_parser().parse_args(argv), model_factory, out, err), err=err, codes=CODES)


def _main(args: argparse.Namespace, model_factory: Callable[[], Any] | None, out: TextIO, err: TextIO) -> int:
    try:
        with strands_logs(args.verbose, err):
            flow.record_run(flow.RecordRequest.from_arguments(args), model_factory, out, err)
    except Refused as exc:
        print(exits.nothing_written(exc), file=err)
        return EXIT_BAD_INPUT
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
