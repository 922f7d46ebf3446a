"""Re-make the hand-authored cassettes of examples/your_own_agent/ from their hand-authored answers.

    .venv/bin/python scripts/author_sample_cassettes.py

The answers (`baseline_answers.jsonl`, each with its deliberate mistake) and the catalogue look-ups
the agent makes first (`baseline_tool_calls.jsonl`) are written by hand. This runs the sample's
real task (`extract:task`, with its `lookup_sku` tool) through the real `BedrockModel` against the
local stand-in (`fieldeval.services.stand_in`) on 127.0.0.1:8765, records with the general
recorder, and then marks each cassette hand-authored, with the mistake it carries, because no
model produced any of it. It is the "try recording with no cloud" path of
examples/your_own_agent/REFERENCE.md, plus that last relabelling step.
"""

from __future__ import annotations

import json
import sys

from fieldeval.exchanges.fixtures import save_exchange
from fieldeval.exchanges.recorder import record_cases
from fieldeval.files import REPO_ROOT
from fieldeval.harness.cases import load_cases, load_predictions
from fieldeval.harness.schema import load_schema, load_task
from fieldeval.services.stand_in import StandIn, read_tool_calls, stand_in_model

FOLDER = REPO_ROOT / "examples" / "your_own_agent"
PORT = 8765  # fixed, so the endpoint each cassette names does not change between re-makes
RECORD = (
    "python -m fieldeval.commands.record --schema purchase_order:PurchaseOrder --cases cases.jsonl --task extract:task "
    "--cassettes cassettes --model fieldeval.services.stand_in:model"
)
MISTAKES = {
    "po-1001": "no deliberate error",
    "po-1002": "order_date left out (the document writes it day/month/year)",
    "po-1003": "the TN-K quantity read as 5 instead of 6",
    "po-1004": "the supplier without 'Ltd', and the lines in reverse order",
    "po-1005": "the buyer taken from the sender line (the supplier's name)",
}


def main() -> int:
    schema = load_schema("purchase_order:PurchaseOrder", directory=FOLDER)
    task = load_task("extract:task", directory=FOLDER)
    cases = load_cases(FOLDER / "cases.jsonl", schema)
    answers = load_predictions(FOLDER / "baseline_answers.jsonl", schema, cases)
    calls = read_tool_calls(FOLDER / "baseline_tool_calls.jsonl", [case.name for case in cases])
    stand_in = StandIn(
        [(case.name, case.input) for case in cases],
        {name: output.model_dump(mode="json") for name, output in answers.items()},
        tool_name=schema.__name__,
        label="baseline_answers.jsonl",
        tool_calls=calls,
        port=PORT,
    )
    with stand_in:
        record_cases(  # a case that fails raises, with the message to read, and nothing below runs
            schema,
            cases,
            task,
            FOLDER / "cassettes",
            model=stand_in_model(stand_in.url),
            model_id="local-stand-in",
            record_command=RECORD,
            model_option="fieldeval.services.stand_in:model",  # what a re-recording's fix line must repeat
        )
    for case in cases:
        path = FOLDER / "cassettes" / f"{case.name}.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        data["provenance"].update(
            hand_authored=True,
            recorded=None,
            note=(
                "Hand-authored for the walkthrough: the answer (baseline_answers.jsonl) and the catalogue look-ups "
                "(baseline_tool_calls.jsonl) were written by hand, served by the local stand-in and recorded through "
                "the real BedrockModel client by scripts/author_sample_cassettes.py; it measures no model. "
                f"Deliberate error: {MISTAKES[case.name]}. The token usage is counted as characters / 4."
            ),
        )
        save_exchange(data, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
