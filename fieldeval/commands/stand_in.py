"""Start a local stand-in for Bedrock that answers your cases from a predictions file, to try recording with no cloud.

    python -m fieldeval.commands.stand_in --schema M:Class --cases CASES.jsonl --predictions PREDICTIONS.jsonl \\
        [--tool-calls CALLS.jsonl] [--port 8765]

Then, from another terminal in the same folder, record through the real `BedrockModel` client:

    EVAL_STAND_IN_URL=http://127.0.0.1:8765 python -m fieldeval.commands.record --schema M:Class --cases CASES.jsonl \\
        --task M:function --cassettes DIR --model fieldeval.services.stand_in:model

The stand-in listens on 127.0.0.1 only and speaks Bedrock's ConverseStream wire protocol
(`fieldeval.services.stand_in`). It answers each case with its line of the predictions file (the
format `score --predictions` reads) as a call of the structured-output tool; a case listed in
`--tool-calls` (`{"name": case, "calls": [{"name": tool, "input": {...}}]}` per line) first calls
those tools of your agent, all in one message, so a task with tools records several turns.
Cassettes recorded this way say so (`provenance.stand_in` and the endpoint), and `score` and the
notebooks never count them as recorded from a model. Stop it with Ctrl-C (exit 130). Exit codes: see --help
(`fieldeval.commands.exits`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from fieldeval.commands import exits

URL_VARIABLE = "EVAL_STAND_IN_URL"  # fieldeval.services.stand_in's, without importing it for --help


def build_parser() -> argparse.ArgumentParser:
    parser = exits.parser(
        "fieldeval.commands.stand_in",
        "stand-in",
        __doc__.split("\n\n")[0].strip(),
        before="\n\n".join(__doc__.split("\n\n")[2:4]).strip(),
    )
    parser.add_argument("--schema", required=True, help="the output model, as module:Class")
    parser.add_argument("--cases", required=True, type=Path, help="the JSONL case file")
    parser.add_argument("--predictions", required=True, type=Path, help="the answers, one {name, output} per case")
    parser.add_argument("--tool-calls", type=Path, help="tool calls to make before answering, per case (optional)")
    parser.add_argument("--port", type=int, default=8765, help="the port on 127.0.0.1 (default 8765; 0 for any)")
    return parser


def main(argv: list[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command; returns the exit code once the server is stopped.

    Where it listens goes to `out` (standard output), why it did not start to `err` (standard error).
    """
    out, err = out or sys.stdout, err or sys.stderr
    return exits.run(lambda: _serve(build_parser().parse_args(argv), out, err), err=err)


def _serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        stand_in = build(args)
    except (ValueError, OSError) as exc:
        print(f"{exc}. The stand-in did not start.", file=err)
        return exits.BAD_INPUT
    try:  # from here on, Ctrl-C (even while the first lines print) ends with 130 like every command's
        print(
            f"Stand-in for Bedrock ConverseStream at {stand_in.url}, answering {len(stand_in.predictions)} case(s) "
            f"from {args.predictions}; no model is called.\nRecord against it from another terminal:\n"
            f"  {URL_VARIABLE}={stand_in.url} python -m fieldeval.commands.record --schema {args.schema} "
            f"--cases {args.cases} "
            "--task YOUR_MODULE:task --cassettes DIR --model fieldeval.services.stand_in:model\nStop it with Ctrl-C.",
            file=out,
            flush=True,
        )
        stand_in.serve_forever()  # returns only when stopped
    except KeyboardInterrupt:
        raise KeyboardInterrupt("Interrupted: the stand-in stopped listening.") from None
    finally:
        stand_in.server.server_close()
    return exits.OK


def build(args: argparse.Namespace) -> Any:
    """The stand-in for the files `args` names, checked before it listens."""
    from fieldeval.harness.cases import load_cases, load_predictions
    from fieldeval.harness.schema import load_schema
    from fieldeval.services.stand_in import StandIn, read_tool_calls

    schema = load_schema(args.schema)
    cases = load_cases(args.cases, schema)
    predictions = load_predictions(args.predictions, schema, cases)
    names = [case.name for case in cases]
    tool_calls = read_tool_calls(args.tool_calls, names) if args.tool_calls else {}
    answers = {name: output.model_dump(mode="json") for name, output in predictions.items()}
    return StandIn(
        [(case.name, case.input) for case in cases],
        answers,
        tool_name=schema.__name__,
        label=args.predictions.name,
        tool_calls=tool_calls,
        port=args.port,
    )


if __name__ == "__main__":
    sys.exit(main())
