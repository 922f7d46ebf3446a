"""The offline invoice: one case of the general path, with its task and its cassette.

The case (the hand-authored invoice text and its ground truth) is the one line of
`data/invoices/offline_invoice.jsonl`, in the case format every user brings; its cassette is
`data/exchanges/offline_invoice.json` (the cassette folder `data/exchanges`, case
`offline_invoice`). `make record` re-records it with the general recorder::

    python -m fieldeval.commands.record --schema walkthroughs.invoices:Invoice \\
        --cases data/invoices/offline_invoice.jsonl --task walkthroughs.offline_invoice:task \\
        --cassettes data/exchanges

The notebook that replays the exchange and the command that re-records it both read this
module, so the document, the answer and the question are defined once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from strands import Agent

from helpers.fixtures import DATA_DIR as REPO_DATA_DIR
from helpers.fixtures import read_cases
from walkthroughs.invoices import DATA_DIR, Invoice

CASES_PATH: Path = DATA_DIR / "offline_invoice.jsonl"
CASE_NAME = "offline_invoice"
FIXTURE_PATH: Path = REPO_DATA_DIR / "exchanges" / f"{CASE_NAME}.json"
RECORD_COMMAND = "make record"
OUTPUT_MODEL = Invoice

_PROMPT_TEMPLATE = """Extract the invoice below into the Invoice structure.
Copy identifiers exactly as printed, give amounts in dollars as numbers, and list every line item.

<document>
{document}</document>"""

# The case file's one line: the invoice text and its ground truth (read with pydantic only, so the
# offline notebook runs without Strands Evals).
((_RECORD, GROUND_TRUTH),) = read_cases(CASES_PATH, Invoice)


def document() -> str:
    """The invoice text the agent reads (hand-authored; not a real invoice)."""
    return _RECORD.input


def prompt(text: str | None = None) -> str:
    """The user message sent to the agent, with the document (default: the bundled one) embedded."""
    return _PROMPT_TEMPLATE.format(document=document() if text is None else text)


def task(case: Any, model: Any) -> Invoice:
    """The task the general `record` and `score` commands run: one structured-output agent call."""
    agent = Agent(model=model, callback_handler=None)
    # strands types structured_output as BaseModel | None whatever model is asked for; it is a Invoice here
    return agent(prompt(case.input), structured_output_model=Invoice).structured_output  # type: ignore[return-value]
