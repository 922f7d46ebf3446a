"""Tasks for recorder tests against the local Bedrock stand-in."""

from __future__ import annotations

from typing import Any

from strands import Agent, ModelRetryStrategy

from helpers.examples.invoices import Invoice
from helpers.examples.offline_invoice import prompt


def invoice_task_bounded_retries(case: Any, model: Any) -> Invoice:
    """The bundled offline-invoice task with a bounded retry strategy: two attempts, no backoff."""
    retry = ModelRetryStrategy(max_attempts=2, initial_delay=0, max_delay=0)
    agent = Agent(model=model, callback_handler=None, retry_strategy=retry)
    return agent(prompt(case.input), structured_output_model=Invoice).structured_output
