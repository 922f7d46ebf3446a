"""The task of the "Evaluate your own agent" walkthrough: an extraction agent with one tool of its own.

The contract every command relies on: `task(case, model)` builds its own agent around the model
it is handed (live Bedrock, any model a `--model` factory returns, a recording wrapper, or the
replay of the case's cassette) and returns the structured output.

The agent has a tool a user's extraction agent plausibly has: `lookup_sku`, the suppliers'
catalogue. **The catalogue is HAND-AUTHORED**: every entry was written for the walkthrough, one
per SKU of `cases.jsonl`; none is a real supplier's. The tool runs for real when a cassette
replays, and its result is part of the next request the agent sends, so editing an entry makes
the replay refuse the changed request (re-record the cassettes after such a change).
"""

from purchase_order import PurchaseOrder
from strands import Agent, tool

CATALOGUE = {
    "FL-25": {"supplier": "Northfield Mills", "description": "Bread flour, 25 kg", "unit": "bag"},
    "YS-1": {"supplier": "Northfield Mills", "description": "Dry yeast, 1 kg", "unit": "pack"},
    "GL-M": {"supplier": "MedSupply Direct", "description": "Nitrile gloves, medium (box of 100)", "unit": "box"},
    "MS-3": {"supplier": "MedSupply Direct", "description": "Surgical masks (box of 50)", "unit": "box"},
    "PP-A4": {"supplier": "Paperworks GmbH", "description": "A4 copy paper, 80 g (box of 5 reams)", "unit": "box"},
    "TN-K": {"supplier": "Paperworks GmbH", "description": "Black toner cartridge", "unit": "piece"},
    "BN-2": {"supplier": "Paperworks GmbH", "description": "Binding combs, 12 mm (pack of 100)", "unit": "pack"},
    "FL-200": {"supplier": "Alpine Textiles Ltd", "description": "Fleece fabric, 200 gsm (per metre)", "unit": "metre"},
    "ZP-60": {"supplier": "Alpine Textiles Ltd", "description": "Zip, 60 cm", "unit": "piece"},
    "CB-ETH": {"supplier": "Bean & Leaf Traders", "description": "Coffee beans, Ethiopia (5 kg bag)", "unit": "bag"},
    "TL-EG": {"supplier": "Bean & Leaf Traders", "description": "Earl Grey loose leaf (1 kg)", "unit": "bag"},
}


@tool
def lookup_sku(sku: str) -> dict:
    """Look a SKU up in the suppliers' catalogue: who sells it, its catalogue description and unit of sale.

    Args:
        sku: The SKU exactly as printed on the purchase order.
    """
    entry = CATALOGUE.get(sku.strip())
    return {"sku": sku, "found": entry is not None, **(entry or {})}


PROMPT = """Extract the purchase order below into the PurchaseOrder structure.
Copy the PO number and SKUs exactly as printed, give the order date as YYYY-MM-DD,
and give quantities and prices as numbers. Before answering, look up every SKU with
lookup_sku, all in one step, to confirm what each line is.

<document>
{document}
</document>"""


def task(case, model):
    agent = Agent(model=model, callback_handler=None, tools=[lookup_sku])
    result = agent(PROMPT.format(document=case.input), structured_output_model=PurchaseOrder)
    return result.structured_output
