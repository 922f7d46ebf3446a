"""ReplayModel: Bedrock-shaped events, the real Agent path, and failing fast on exhaustion."""

import asyncio
import copy
import dataclasses

import pytest
from strands import Agent
from strands.tools.structured_output.structured_output_tool import StructuredOutputTool
from strands.types.exceptions import EventLoopException

from fieldeval.exchanges.fixtures import Exchange, load_exchange, prompt_sha256
from fieldeval.exchanges.replay import (
    PromptMismatchError,
    ReplayExhaustedError,
    ReplayModel,
    UnusedTurnsError,
    turn_events,
)
from helpers.replay import strands_log
from walkthroughs import offline_invoice
from walkthroughs.invoices import Invoice

EXCHANGE = load_exchange(offline_invoice.FIXTURE_PATH, tool_name="Invoice")
USAGE = {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14}


def collect(model: ReplayModel, tool_specs=None) -> list[dict]:
    async def run():
        return [event async for event in model.stream([], tool_specs)]

    return asyncio.run(run())


def with_turns(turns: list[dict], label: str = "test exchange") -> Exchange:
    """A copy of the bundled exchange with other turns, bound to no prompt so any prompt replays it."""
    provenance = {k: v for k, v in EXCHANGE.provenance.items() if k != "prompt_sha256"}
    return dataclasses.replace(EXCHANGE, source=label, provenance=provenance, turns=turns)


def run_agent(model: ReplayModel):
    return Agent(model=model, callback_handler=None)(offline_invoice.prompt(), structured_output_model=Invoice)


def test_tool_turn_streams_bedrock_converse_stream_events():
    tool_use = EXCHANGE.tool_uses()[0]
    events = collect(ReplayModel(EXCHANGE))
    assert [next(iter(e)) for e in events] == (
        ["messageStart", "contentBlockStart"]
        + ["contentBlockDelta"] * len(tool_use["inputChunks"])
        + ["contentBlockStop", "messageStop", "metadata"]
    )
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert events[1]["contentBlockStart"]["start"] == {
        "toolUse": {"toolUseId": tool_use["toolUseId"], "name": "Invoice"}
    }
    deltas = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in events[2:-3]]
    assert deltas == tool_use["inputChunks"]
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    assert events[-1] == {"metadata": {"usage": tool_use["usage"]}}


def test_text_turn_streams_text_deltas_and_end_turn():
    events = list(turn_events({"text": {"chunks": ["Hel", "lo"], "usage": USAGE}}))
    assert [next(iter(e)) for e in events] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert events[1]["contentBlockDelta"]["delta"] == {"text": "Hel"}
    assert events[4] == {"messageStop": {"stopReason": "end_turn"}}


def test_the_agent_parses_the_replayed_stream_into_the_model():
    model = ReplayModel(EXCHANGE)
    result = run_agent(model)
    assert result.stop_reason == "tool_use"
    assert result.structured_output == Invoice.model_validate(EXCHANGE.tool_uses()[0]["input"])
    assert model.turns_used == 1
    assert model.tool_specs_offered == [[StructuredOutputTool(Invoice).tool_spec]]
    assert result.metrics.accumulated_usage["outputTokens"] == EXCHANGE.tool_uses()[0]["usage"]["outputTokens"]


def test_asking_for_an_unrecorded_turn_raises_at_once_naming_both_counts():
    model = ReplayModel(EXCHANGE)
    collect(model)
    with pytest.raises(ReplayExhaustedError, match=r"asked for turn 2, but the exchange records 1 turn\b"):
        collect(model)
    assert model.turns_used == 1 and len(model.tool_specs_offered) == 1


def test_truncated_chunks_fail_fast_instead_of_looping():
    turn = copy.deepcopy(EXCHANGE.turns[0])
    turn["toolUse"]["inputChunks"].pop()
    model = ReplayModel(with_turns([turn]))
    with strands_log() as log, pytest.raises(EventLoopException) as caught:
        run_agent(model)
    assert isinstance(caught.value.__cause__, ReplayExhaustedError)
    assert model.turns_used == 1
    assert any("failed to parse tool input json" in line for line in log)


def test_content_block_start_without_tool_use_fails_fast():
    turn = copy.deepcopy(EXCHANGE.turns[0])
    del turn["toolUse"]["name"], turn["toolUse"]["toolUseId"]
    assert list(turn_events(turn))[1] == {"contentBlockStart": {"start": {}, "contentBlockIndex": 0}}
    model = ReplayModel(with_turns([turn]))
    with strands_log() as log, pytest.raises(EventLoopException) as caught:
        run_agent(model)
    assert "asked for turn 2, but the exchange records 1 turn" in str(caught.value.__cause__)
    assert any("incomplete tool use block" in line for line in log)


def test_a_conversation_that_answers_in_text_first_replays():
    text_turn = {"text": {"chunks": ["The invoice is from ", "Northwind."], "usage": USAGE}}
    with_preamble = copy.deepcopy(EXCHANGE.turns[0])
    with_preamble["text"] = {"chunks": ["Calling ", "the tool."]}
    model = ReplayModel(with_turns([text_turn, with_preamble]))
    agent = Agent(model=model, callback_handler=None)
    result = agent(offline_invoice.prompt(), structured_output_model=Invoice)
    assert model.turns_used == 2  # the text answer, then the forced structured-output call
    assert result.structured_output.invoice_id == "NW-2026-0417"
    replies = [m["content"] for m in agent.messages if m["role"] == "assistant"]
    assert replies[0] == [{"text": "The invoice is from Northwind."}]
    assert replies[1][0] == {"text": "Calling the tool."} and replies[1][1]["toolUse"]["name"] == "Invoice"


def test_text_only_exchange_replays_without_structured_output():
    model = ReplayModel(with_turns([{"text": {"chunks": ["Hel", "lo"], "usage": USAGE}}]))
    agent = Agent(model=model, callback_handler=None)
    result = agent("hi")
    assert result.stop_reason == "end_turn" and str(result).strip() == "Hello"
    assert model.tool_specs_offered == [[]]


def test_strands_log_restores_the_logger():
    import logging

    logger = logging.getLogger("strands")
    before = (list(logger.handlers), logger.propagate, logger.level)
    with strands_log() as lines:
        logging.getLogger("strands.event_loop").warning("seen %s", 1)
    assert lines == ["WARNING strands.event_loop: seen 1"]
    assert (list(logger.handlers), logger.propagate, logger.level) == before


def test_the_deprecated_structured_output_path_is_refused_with_the_call_to_use():
    async def first_event():
        async for event in ReplayModel(EXCHANGE).structured_output(Invoice, []):
            return event

    with pytest.raises(NotImplementedError, match=r"ReplayModel serves the agent loop only; call agent\(prompt"):
        asyncio.run(first_event())


def test_the_bundled_exchange_is_bound_to_the_offline_invoice_prompt():
    assert EXCHANGE.prompt_sha256 == prompt_sha256(offline_invoice.prompt())


def test_an_exchange_refuses_a_prompt_it_was_not_recorded_for():
    model = ReplayModel(EXCHANGE, record_command="make record")
    with pytest.raises(Exception) as caught:
        Agent(model=model, callback_handler=None)("another document", structured_output_model=Invoice)
    error = caught.value if isinstance(caught.value, PromptMismatchError) else caught.value.__cause__
    assert isinstance(error, PromptMismatchError)
    assert "data/exchanges/offline_invoice.json" in str(error) and "recorded for another prompt" in str(error)
    assert "`make record`" in str(error)
    assert model.turns_used == 0


def test_unused_turns_after_the_structured_output_are_reported():
    turns = EXCHANGE.turns + [{"text": {"chunks": ["Done", "."], "usage": USAGE}}]
    model = ReplayModel(dataclasses.replace(EXCHANGE, turns=turns), record_command="make record")
    run_agent(model)
    assert model.unused_turns == 1
    with pytest.raises(UnusedTurnsError, match=r"offline_invoice.json: .*finished after turn 1.*records 2 turns"):
        model.check_finished()
    complete = ReplayModel(EXCHANGE)
    run_agent(complete)
    complete.check_finished()
