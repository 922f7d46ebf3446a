"""Format-2 cassettes: every content block round-trips event for event, and a changed request is refused."""

import asyncio
import json

import pytest
from pydantic import BaseModel
from strands import Agent, tool

from fieldeval.exchanges.calls import canonical_request, normalized, request_difference
from fieldeval.exchanges.fixtures import FixtureError, load_exchange, save_exchange
from fieldeval.exchanges.recording import RecordingModel
from fieldeval.exchanges.replay import ReplayModel, RequestMismatchError
from tests.exchanges.test_recording import ScriptedModel as _Provider

USAGE = {"inputTokens": 30, "outputTokens": 12, "totalTokens": 42}


class Answer(BaseModel):
    city: str


def every_block_events() -> list[dict]:
    """One message with reasoning (text, signature, redacted bytes), cited text, two tool uses and text after them."""
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"text": "Think"}}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"text": "ing."}}, "contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"signature": "sig-1"}}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"contentBlockDelta": {"delta": {"reasoningContent": {"redactedContent": b"\x00\xffsecret"}}}},
        {"contentBlockStop": {}},
        {"contentBlockDelta": {"delta": {"text": "Per the doc"}, "contentBlockIndex": 2}},
        {
            "contentBlockDelta": {
                "delta": {
                    "citation": {
                        "title": "doc",
                        "location": {"documentChar": {"documentIndex": 0, "start": 0, "end": 3}},
                        "sourceContent": [{"text": "Oslo"}],
                    }
                },
                "contentBlockIndex": 2,
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 2}},
        *tool_block(3, "tool-a", "lookup", ['{"q": "Os', 'lo"}']),
        *tool_block(4, "tool-b", "lookup", ['{"q": "Bergen"}']),
        {"contentBlockDelta": {"delta": {"text": "Checking both."}, "contentBlockIndex": 5}},
        {"contentBlockStop": {"contentBlockIndex": 5}},
        {"messageStop": {"stopReason": "tool_use", "additionalModelResponseFields": {"note": "kept"}}},
        {"metadata": {"usage": USAGE, "metrics": {"latencyMs": 17}}},
    ]


def tool_block(index, tool_use_id, name, chunks):
    return [
        {
            "contentBlockStart": {
                "start": {"toolUse": {"toolUseId": tool_use_id, "name": name}},
                "contentBlockIndex": index,
            }
        },
        *[{"contentBlockDelta": {"delta": {"toolUse": {"input": c}}, "contentBlockIndex": index}} for c in chunks],
        {"contentBlockStop": {"contentBlockIndex": index}},
    ]


def answer_events(tool_use_id="answer-1", city="Oslo"):
    return [
        {"messageStart": {"role": "assistant"}},
        *tool_block(0, tool_use_id, "Answer", [json.dumps({"city": city})]),
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": USAGE}},
    ]


LOOKUPS: list[str] = []


@tool
def lookup(q: str) -> str:
    """Look a city up in the hand-authored gazetteer."""
    LOOKUPS.append(q)
    return {"Oslo": "capital of Norway", "Bergen": "west coast"}.get(q, "unknown")


def city_task(system_prompt="Answer with the city.", tools=(lookup,), prompt="Which city is the capital?"):
    def task(model):
        agent = Agent(model=model, callback_handler=None, system_prompt=system_prompt, tools=list(tools))
        return agent(prompt, structured_output_model=Answer).structured_output

    return task


def record(tmp_path, *scripts, task=None, match_on=None):
    recorder = RecordingModel(_Provider(*scripts))
    result = (task or city_task())(recorder)
    data = {
        "format": 2,
        "provenance": {
            "provider": "scripted",
            "model_id": "m",
            "endpoint": None,
            "hand_authored": False,
            "recorded": "2026-01-01T00:00:00+00:00",
            "note": "test",
        },
        "match_on": match_on or ["system", "tools", "tool_choice", "output_schema", "messages"],
        "structured_output_by_provider": False,
        "calls": recorder.calls,
    }
    path = save_exchange(data, tmp_path / "city.json")
    return result, recorder, load_exchange(path, tool_name="Answer", output_model=Answer)


def test_every_content_block_round_trips_event_for_event_through_a_file(tmp_path):
    _, recorder, exchange = record(tmp_path, every_block_events(), answer_events())
    assert exchange.calls[0].events == recorder.calls[0]["events"]
    replay = ReplayModel(exchange, output_tool="Answer")
    LOOKUPS.clear()
    assert city_task()(replay) == Answer(city="Oslo")
    assert LOOKUPS == ["Oslo", "Bergen"]  # the agent's own tool ran for real, twice, from one message

    async def events():
        model = ReplayModel(exchange)
        model._check_request = lambda *args: None  # only the events are under test here
        return [event async for event in model.stream([], None, None)]

    replayed = asyncio.run(events())
    assert replayed == every_block_events()  # bytes come back as bytes; nothing is dropped or reordered
    content = exchange.calls[0].response["message"]["content"]
    assert [next(iter(block)) for block in content] == [
        "reasoningContent",
        "reasoningContent",
        "citationsContent",
        "toolUse",
        "toolUse",
        "text",
    ]


def test_a_multi_turn_tool_run_replays_with_the_tool_results_in_the_next_request(tmp_path):
    _, _, exchange = record(tmp_path, every_block_events(), answer_events())
    second = exchange.calls[1].request["messages"]
    results = [block["toolResult"] for block in second[-1]["content"]]
    assert [r["toolUseId"] for r in results] == ["tool-a", "tool-b"]
    assert results[0]["content"] == [{"text": "capital of Norway"}]


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        (
            {"system_prompt": "Answer in French."},
            "model call 1 was recorded for another request: the system prompt differs (system[0].text",
        ),
        (
            {"prompt": "Which city is the largest?"},
            "model call 1 was recorded for another request: message 1 (user) differs "
            "(message 1.content[0].text at character",
        ),
        ({"tools": ()}, "model call 1 was recorded for another request: the agent no longer offers tool `lookup`"),
    ],
)
def test_each_request_difference_is_refused_in_one_line_naming_it_and_the_fix(tmp_path, changed, message):
    _, _, exchange = record(tmp_path, every_block_events(), answer_events())
    replay = ReplayModel(
        exchange, record_command="python -m fieldeval.commands.record ... --only city", output_tool="Answer"
    )
    with pytest.raises(Exception) as caught:
        city_task(**changed)(replay)
    text = str(_mismatch(caught.value))
    assert message in text and "\n" not in text
    assert 're-record it with `python -m fieldeval.commands.record ... --only city` (or relax "match_on"' in text


def _mismatch(exc):
    while exc is not None and not isinstance(exc, RequestMismatchError):
        exc = exc.__cause__ or exc.__context__
    assert exc is not None, "no RequestMismatchError in the chain"
    return exc


def test_a_changed_tool_result_in_a_later_message_is_refused_naming_that_message(tmp_path):
    _, _, exchange = record(tmp_path, every_block_events(), answer_events())

    @tool
    def lookup(q: str) -> str:  # noqa: F811 - the same tool, answering differently
        """Look a city up in the hand-authored gazetteer."""
        return "somewhere else"

    with pytest.raises(Exception) as caught:
        city_task(tools=(lookup,))(ReplayModel(exchange, output_tool="Answer"))
    assert (
        "model call 2 was recorded for another request: message 3 (user) differs "
        "(message 3.content[0].toolResult.content[0].text" in str(_mismatch(caught.value))
    )


def test_a_changed_tool_spec_and_output_schema_are_named():
    old = canonical_request(
        [], [{"name": "Answer", "inputSchema": {"json": {"a": 1}}}, {"name": "lookup", "description": "x"}]
    )
    spec = canonical_request(
        [], [{"name": "lookup", "description": "y"}, {"name": "Answer", "inputSchema": {"json": {"a": 1}}}]
    )
    schema = canonical_request(
        [], [{"name": "lookup", "description": "x"}, {"name": "Answer", "inputSchema": {"json": {"a": 2}}}]
    )
    parts = ("system", "tools", "tool_choice", "output_schema", "messages")
    assert request_difference(old, spec, parts, "Answer").startswith("tool `lookup` spec differs (lookup.description")
    assert request_difference(old, schema, parts, "Answer").startswith("the output schema (tool `Answer`) differs")
    choice = canonical_request([], [], tool_choice={"tool": {"name": "Answer"}})
    assert request_difference(canonical_request([], []), choice, parts, "Answer").startswith("the tool choice differs")


def test_volatile_ids_tool_order_and_key_order_cause_no_refusal():
    def request(first_id, order):
        messages = [
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": first_id, "name": "lookup", "input": {"q": "Oslo"}}}],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"status": "success", "toolUseId": first_id, "content": [{"text": "x"}]}}],
            },
        ]
        tools = [{"name": "lookup", "description": "d"}, {"description": "e", "name": "Answer"}]
        return canonical_request(messages, tools if order else tools[::-1])

    parts = ("system", "tools", "tool_choice", "output_schema", "messages")
    assert request_difference(request("tooluse_abc", True), request("call_9f2", False), parts, "Answer") is None
    assert normalized(request("tooluse_abc", True))["messages"][1]["content"][0]["toolResult"]["toolUseId"] == "#1"


def test_match_on_user_text_relaxes_everything_but_what_the_user_typed(tmp_path):
    _, _, exchange = record(tmp_path, every_block_events(), answer_events(), match_on=["user_text"])
    assert city_task(system_prompt="Something else entirely.")(ReplayModel(exchange, output_tool="Answer")) == Answer(
        city="Oslo"
    )
    with pytest.raises(Exception) as caught:
        city_task(prompt="Another question?")(ReplayModel(exchange, output_tool="Answer"))
    assert "user message 1 differs" in str(_mismatch(caught.value))


def test_a_response_that_disagrees_with_its_events_is_refused_naming_the_call(tmp_path):
    _, _, exchange = record(tmp_path, every_block_events(), answer_events())
    data = json.loads((tmp_path / "city.json").read_text())
    data["calls"][1]["response"]["message"]["content"][0]["toolUse"]["input"]["city"] = "Paris"
    (tmp_path / "city.json").write_text(json.dumps(data))
    with pytest.raises(
        FixtureError,
        match=r"call 2, field 'response': disagrees with the assembled events \(first difference at "
        r"response.message.content\[0\].toolUse.input.city at character 0: assembled \"Oslo\", stored \"Paris\"\)",
    ):
        load_exchange(tmp_path / "city.json")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(format=3), "field 'format': is 3; it must be 2"),
        (
            lambda d: d.update(match_on=["everything"]),
            """field 'match_on[0]': is "everything"; it must be one of system, tools""",
        ),
        (
            lambda d: d["calls"][0]["events"].append({"nonsense": {}}),
            """call 1, field 'events[21]': is {"nonsense": {}}; it must be an object with one stream event key""",
        ),
        (
            lambda d: d["calls"][0]["request"].pop("tools"),
            "call 1, field 'request.tools': is missing; it must be a list of the tool specs",
        ),
    ],
)
def test_a_malformed_format_2_file_is_refused_naming_the_field(tmp_path, edit, message):
    record(tmp_path, every_block_events(), answer_events())
    data = json.loads((tmp_path / "city.json").read_text())
    edit(data)
    (tmp_path / "city.json").write_text(json.dumps(data))
    with pytest.raises(FixtureError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_exchange(tmp_path / "city.json")


def test_a_format_2_output_that_does_not_validate_is_refused_naming_the_block_and_field(tmp_path):
    record(tmp_path, answer_events(city="Oslo"))

    class Population(BaseModel):
        city: int

    with pytest.raises(FixtureError) as caught:
        load_exchange(tmp_path / "city.json", tool_name="Answer", output_model=Population)
    assert "call 1, field 'response.message.content[0].toolUse.input.city': does not validate as Population" in str(
        caught.value
    )


def test_a_format_2_file_that_never_answers_with_the_output_tool_is_refused(tmp_path):
    record(tmp_path, answer_events())
    with pytest.raises(FixtureError, match="no call ends in the structured output: neither a `Verdict` tool use"):
        load_exchange(tmp_path / "city.json", tool_name="Verdict")
