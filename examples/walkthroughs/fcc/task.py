"""The FCC extraction task, in the contract every recorder and scorer here takes: `task(case, model)`.

It builds its own `Agent` around the model it is handed (live Bedrock, a recording wrapper, or
the replay of that case's exchange) and returns the structured output. The notebook shows the
same function in a cell; `tests/walkthroughs/test_fcc.py` checks the two agree.

    python -m fieldeval.commands.record --schema walkthroughs.fcc.schema:FccInvoice \\
        --cases data/fcc/cases.jsonl --task walkthroughs.fcc.task:extract --cassettes data/exchanges/fcc
"""

from __future__ import annotations

from strands import Agent
from strands.models import Model
from strands_evals import Case

from walkthroughs.fcc.schema import FccInvoice


def extract(case: Case, model: Model) -> FccInvoice:
    agent = Agent(model=model, callback_handler=None)
    # strands types structured_output as BaseModel | None whatever model is asked for; it is a FccInvoice here
    return agent(case.input, structured_output_model=FccInvoice).structured_output  # type: ignore[return-value]
