"""The live path without the cloud: the real BedrockModel and Agent against a local ConverseStream.

`tests/servers/bedrock.py` speaks Bedrock's wire protocol (AWS event-stream framing, decoded by
botocore) on 127.0.0.1; boto3's endpoint override points the bedrock-runtime client at it, with
static dummy credentials. Every wait is bounded by small client timeouts, and every server
thread is stopped by its fixture.
"""

from __future__ import annotations

import json
import time

import pytest
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from pydantic import BaseModel
from strands import Agent, ModelRetryStrategy
from strands.types.exceptions import ModelThrottledException

from fieldeval.services.bedrock import MODEL_ID, describe_bedrock_error, live_model, retry_strategy
from tests.servers.bedrock import BedrockServer, bedrock_environment, event, exception, tool_use_stream

FAST = Config(connect_timeout=0.5, read_timeout=0.5, retries={"mode": "standard", "total_max_attempts": 1})
INPUT = {"invoice_id": "INV-1", "vendor_name": "Acme Corporation", "total_amount": 150.0}


class Invoice(BaseModel):
    invoice_id: str
    vendor_name: str
    total_amount: float


@pytest.fixture
def bedrock(monkeypatch, no_aws_credentials, local_servers):
    with BedrockServer() as server:
        for name, value in bedrock_environment(server.url).items():
            monkeypatch.setenv(name, value)
        yield server


def run_agent(retries: ModelRetryStrategy | None = None):
    """One structured-output call through the real Agent and BedrockModel; (result or error, seconds)."""
    agent = Agent(model=live_model(client_config=FAST), callback_handler=None, retry_strategy=retries)
    started = time.monotonic()
    try:
        outcome = agent("Extract the invoice.", structured_output_model=Invoice)
    except Exception as exc:
        outcome = exc
    return outcome, time.monotonic() - started


def test_the_encoder_writes_messages_botocore_decodes():
    buffer = EventStreamBuffer()
    buffer.add_data(event("messageStart", {"role": "assistant"}) + exception("throttlingException", "slow down"))
    first, second = list(buffer)
    assert first.headers == {
        ":event-type": "messageStart",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert json.loads(first.payload) == {"role": "assistant"}
    assert second.headers[":message-type"] == "exception" and json.loads(second.payload) == {"message": "slow down"}


def test_a_good_stream_split_mid_token_yields_the_structured_output(bedrock):
    stream = tool_use_stream("Invoice", INPUT, pieces=5)
    pieces = [json.loads(payload_of(m))["delta"]["toolUse"]["input"] for m in stream[2:-3]]
    assert not all(_ends_a_token(p) for p in pieces[:-1])  # at least one chunk ends mid-token
    bedrock.script = [("stream", stream)]
    result, _ = run_agent()
    assert result.structured_output == Invoice(**INPUT)
    (request,) = bedrock.requests
    assert request["path"] == f"/model/{MODEL_ID.replace(':', '%3A')}/converse-stream"
    assert [t["toolSpec"]["name"] for t in request["body"]["toolConfig"]["tools"]] == ["Invoice"]
    assert request["body"]["inferenceConfig"]["temperature"] == 0.0


def test_throttling_in_the_stream_ends_bounded_with_a_message_naming_bedrock(bedrock):
    throttled = ("stream", [event("messageStart", {"role": "assistant"}), exception("throttlingException", "Slow")])
    bedrock.script = [throttled] * 2
    error, seconds = run_agent(retry_strategy(max_attempts=2, initial_delay=0, max_delay=0))
    assert isinstance(error, ModelThrottledException)
    assert len(bedrock.requests) == 2 and seconds < 5
    assert "Amazon Bedrock failed" in describe_bedrock_error(error) and "throttling" in describe_bedrock_error(error)


def test_access_denied_names_bedrock_and_the_fix(bedrock):
    bedrock.script = [("error", 403, "AccessDeniedException", "You don't have access to the model.")]
    error, seconds = run_agent()
    message = describe_bedrock_error(error)
    assert "Amazon Bedrock failed (AccessDeniedException" in message and "enable access to the model" in message
    assert len(bedrock.requests) == 1 and seconds < 5


def test_a_stream_broken_mid_message_names_bedrock(bedrock):
    bedrock.script = [("broken", tool_use_stream("Invoice", INPUT)[:3], 20)]
    error, seconds = run_agent()
    assert isinstance(error, Exception) and seconds < 5
    assert "stream from Bedrock broke off" in describe_bedrock_error(error)


@pytest.mark.parametrize("step", [("stall", 10), ("hang", tool_use_stream("Invoice", INPUT)[:3], 10)])
def test_a_server_that_stops_answering_ends_within_the_read_timeout(bedrock, step):
    bedrock.script = [step]
    error, seconds = run_agent()
    assert isinstance(error, Exception) and seconds < 5  # read_timeout 0.5 s, one attempt
    assert "Bedrock did not answer in time" in describe_bedrock_error(error)


def payload_of(message: bytes) -> bytes:
    """The payload of one encoded message, as botocore decodes it."""
    buffer = EventStreamBuffer()
    buffer.add_data(message)
    return next(iter(buffer)).payload


def _ends_a_token(piece: str) -> bool:
    return piece.endswith(('"', ",", ":", " ", "{", "}"))
