"""The task of the "Evaluate your own agent" walkthrough: one structured-output agent call per case.

The contract every command relies on: `task(case, model)` builds its own agent around the model
it is handed (live Bedrock, a recording wrapper, or the replay of the case's cassette) and
returns the structured output.
"""

from purchase_order import PurchaseOrder
from strands import Agent

PROMPT = """Extract the purchase order below into the PurchaseOrder structure.
Copy the PO number and SKUs exactly as printed, give the order date as YYYY-MM-DD,
and give quantities and prices as numbers.

<document>
{document}
</document>"""


def task(case, model):
    agent = Agent(model=model, callback_handler=None)
    result = agent(PROMPT.format(document=case.input), structured_output_model=PurchaseOrder)
    return result.structured_output
