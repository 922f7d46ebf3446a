"""Tasks for recorder tests against the local Bedrock stand-in."""

from __future__ import annotations

from typing import Any

from strands import Agent

from fieldeval.services.bedrock import retry_strategy
from walkthroughs.invoices import Invoice
from walkthroughs.offline_invoice import prompt


def invoice_task_bounded_retries(case: Any, model: Any) -> Invoice:
    """The bundled offline-invoice task with a bounded retry strategy: two attempts, no backoff."""
    agent = Agent(model=model, callback_handler=None, retry_strategy=retry_strategy(2, initial_delay=0, max_delay=0))
    return agent(prompt(case.input), structured_output_model=Invoice).structured_output
