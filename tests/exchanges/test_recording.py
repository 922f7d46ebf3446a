"""RecordingModel against a scripted provider, and the record command's exit codes, offline."""

import asyncio
import io
import json
import os
import shlex
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from strands import Agent
from strands.models import Model

from fieldeval.commands import record
from fieldeval.errors import NoStructuredOutput, RecordingFailed
from fieldeval.exchanges import recording
from fieldeval.exchanges.fixtures import load_exchange, prompt_sha256
from fieldeval.exchanges.recording import (
    RecordingModel,
    capture_task,
    commit_fixture,
    describe_changes,
)
from fieldeval.exchanges.replay import ReplayModel
from tests.commands.streams import outcome
from walkthroughs import offline_invoice

USAGE = {"inputTokens": 1200, "outputTokens": 150, "totalTokens": 1350, "cacheReadInputTokens": 0}
CORRECT = offline_invoice.GROUND_TRUTH.model_dump(mode="json")


class ScriptedModel(Model):
    """A fake provider: each call streams the next scripted event list, or raises it."""

    def __init__(self, *scripts):
        self.scripts = list(scripts)
        self.calls = 0

    def update_config(self, **config):
        pass

    def get_config(self):
        return {}

    async def structured_output(self, *args, **kwargs):
        raise NotImplementedError
        yield

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        script = self.scripts[self.calls]
        self.calls += 1
        for event in script:
            if isinstance(event, Exception):
                raise event
            yield event


def tool_events(chunks, name="Invoice", usage=USAGE, blocks=1):
    events = [{"messageStart": {"role": "assistant"}}]
    for index in range(blocks):
        events.append(
            {
                "contentBlockStart": {
                    "start": {"toolUse": {"toolUseId": f"tooluse_{index}", "name": name}},
                    "contentBlockIndex": index,
                }
            }
        )
        events += [
            {"contentBlockDelta": {"delta": {"toolUse": {"input": c}}, "contentBlockIndex": index}} for c in chunks
        ]
        events.append({"contentBlockStop": {"contentBlockIndex": index}})
    events.append({"messageStop": {"stopReason": "tool_use"}})
    events.append({"metadata": {"usage": dict(usage), "metrics": {"latencyMs": 812}}})
    return events


def text_events(text):
    return [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": 0}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
        {"metadata": {"usage": dict(USAGE)}},
    ]


def split(text, size=37):
    return [text[i : i + size] for i in range(0, len(text), size)]


CORRECT_CHUNKS = [""] + split(json.dumps(CORRECT))


def stream(model, limit=None):
    async def run():
        seen = []
        generator = model.stream([{"role": "user", "content": [{"text": "hi"}]}], None, None)
        async for event in generator:
            seen.append(event)
            if limit is not None and len(seen) == limit:
                await generator.aclose()
                break
        return seen

    return asyncio.run(run())


# --- RecordingModel -------------------------------------------------------------------------


def test_passes_every_event_through_and_keeps_the_request_and_events_exactly():
    events = tool_events(CORRECT_CHUNKS)
    model = RecordingModel(ScriptedModel(events))
    assert stream(model) == events
    (call,) = model.calls
    assert call["events"] == events
    assert call["request"] == {
        "system": [],
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "tools": [],
        "tool_choice": None,
        "output_schema": None,
    }
    tool_use = call["response"]["message"]["content"][0]["toolUse"]
    assert tool_use == {"toolUseId": "tooluse_0", "name": "Invoice", "input": CORRECT}
    assert call["response"]["stopReason"] == "tool_use" and call["response"]["usage"] == USAGE


def test_commits_one_call_per_completed_stream_and_none_for_a_broken_one():
    model = RecordingModel(
        ScriptedModel(tool_events(CORRECT_CHUNKS), text_events("Done."), tool_events(CORRECT_CHUNKS))
    )
    stream(model)
    stream(model)
    assert [call["response"]["stopReason"] for call in model.calls] == ["tool_use", "end_turn"]
    stream(model, limit=4)  # the consumer stops half way
    assert len(model.calls) == 2


def test_a_provider_error_mid_stream_commits_nothing():
    events = tool_events(CORRECT_CHUNKS)
    model = RecordingModel(ScriptedModel(events[:5] + [RuntimeError("connection reset")]))
    with pytest.raises(RuntimeError, match="connection reset"):
        stream(model)
    assert model.calls == []


def test_keeps_several_tool_uses_in_one_message_and_text_after_them():
    events = tool_events(CORRECT_CHUNKS, blocks=2)
    events[-2:-2] = [
        {"contentBlockDelta": {"delta": {"text": "Both done."}, "contentBlockIndex": 2}},
        {"contentBlockStop": {"contentBlockIndex": 2}},
    ]
    model = RecordingModel(ScriptedModel(events))
    stream(model)
    content = model.calls[0]["response"]["message"]["content"]
    assert [next(iter(block)) for block in content] == ["toolUse", "toolUse", "text"]
    assert [block["toolUse"]["toolUseId"] for block in content[:2]] == ["tooluse_0", "tooluse_1"]


def test_the_bound_on_model_calls_stops_the_next_call_before_it_reaches_the_provider():
    inner = ScriptedModel(*[text_events("again")] * 5)
    model = RecordingModel(inner, max_calls=2)
    stream(model)
    stream(model)
    with pytest.raises(recording.ModelCallLimitError, match="model call 3, over the bound of 2 per case"):
        stream(model)
    assert inner.calls == 2


# --- the record command ---------------------------------------------------------------------


@pytest.fixture
def fixture_copy(tmp_path):
    """The bundled offline fixture, copied into a cassette folder of its own."""
    path = tmp_path / "cassettes" / "offline_invoice.json"
    path.parent.mkdir()
    path.write_bytes(offline_invoice.FIXTURE_PATH.read_bytes())
    return path


def make_record_argv(cassettes):
    """What `make record` runs, pointed at another cassette folder."""
    return [
        "--schema",
        "walkthroughs.invoices:Invoice",
        "--cases",
        str(offline_invoice.CASES_PATH),
        "--task",
        "walkthroughs.offline_invoice:task",
        "--cassettes",
        str(cassettes),
    ]


def run_command(fixture, *scripts, argv=()):
    """The exit code and what it printed about the outcome (`tests.commands.streams.outcome`)."""
    return outcome(
        record.main, [*make_record_argv(fixture.parent), *argv], model_factory=lambda: ScriptedModel(*scripts)
    )


def test_success_replaces_the_fixture_and_prints_payload_and_changes(fixture_copy):
    code, printed = run_command(fixture_copy, tool_events(CORRECT_CHUNKS))
    assert code == record.EXIT_OK
    exchange = load_exchange(fixture_copy, tool_name="Invoice")
    provenance = exchange.provenance
    assert provenance["hand_authored"] is False
    assert provenance["model_id"] == "us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert datetime.fromisoformat(provenance["recorded"]).tzinfo is not None
    assert exchange.format == 2 and exchange.calls[0].events == tool_events(CORRECT_CHUNKS)
    assert provenance["provider"] == "test_recording.ScriptedModel" and provenance["endpoint"] is None
    assert json.dumps(CORRECT, indent=2) in printed
    assert "provenance.hand_authored: True -> False" in printed
    assert "payload.vendor_name: 'Northwind Holdings Inc.' -> 'Northwind Office Supply'" in printed
    assert "payload.invoice_date: added '2026-04-17'" in printed
    assert 'payload.line_items: added {"description": "Cable management kit", "sku": "NW-0087"' in printed
    assert "usage of the last call: {'inputTokens': 912" in printed
    replayed = ReplayModel(exchange)
    result = Agent(model=replayed, callback_handler=None)(
        offline_invoice.prompt(), structured_output_model=offline_invoice.OUTPUT_MODEL
    )
    assert result.structured_output == offline_invoice.GROUND_TRUTH


def test_agent_failure_exits_2_with_type_and_message_and_leaves_the_fixture(fixture_copy):
    before = fixture_copy.read_bytes()
    code, printed = run_command(fixture_copy, [RuntimeError("AccessDeniedException: no access to the model")])
    assert code == record.EXIT_BAD_INPUT == 2
    assert "RuntimeError: AccessDeniedException: no access to the model" in printed
    assert fixture_copy.read_bytes() == before


def test_a_task_returning_the_agent_result_exits_2_before_anything_is_written(fixture_copy, monkeypatch):
    def returns_the_result(case, model):
        return Agent(model=model, callback_handler=None)(
            offline_invoice.prompt(case.input), structured_output_model=offline_invoice.OUTPUT_MODEL
        )

    monkeypatch.setattr(offline_invoice, "task", returns_the_result)
    before = fixture_copy.read_bytes()
    code, printed = run_command(fixture_copy, tool_events(CORRECT_CHUNKS))
    assert code == 2, printed
    assert "returned the AgentResult, not the structured output; return result.structured_output" in printed
    assert fixture_copy.read_bytes() == before


def test_no_structured_output_tool_call_exits_3(fixture_copy):
    before = fixture_copy.read_bytes()
    code, printed = run_command(fixture_copy, text_events("I see no invoice."), text_events("Still none."))
    assert code == record.EXIT_NO_STRUCTURED_OUTPUT == 3
    assert "never called the structured-output tool 'Invoice'" in printed
    assert fixture_copy.read_bytes() == before


def test_structured_output_given_as_json_text_is_recorded_and_replays(fixture_copy):
    code, printed = run_command(fixture_copy, text_events("Here it is."), text_events(json.dumps(CORRECT)))
    assert code == 0, printed
    exchange = load_exchange(fixture_copy, tool_name="Invoice", output_model=offline_invoice.OUTPUT_MODEL)
    assert exchange.final_output("Invoice") == CORRECT and exchange.tool_uses() == []
    replayed = ReplayModel(exchange, output_tool="Invoice")
    result = offline_invoice.task(SimpleNamespace(input=offline_invoice.document()), replayed)
    assert result == offline_invoice.GROUND_TRUTH and replayed.unused_turns == 0


def test_a_model_calling_a_tool_it_was_not_offered_ends_with_exit_3_within_the_bound(fixture_copy):
    before = fixture_copy.read_bytes()
    looping = tool_events(['{"q": 1}'], name="web_search")
    scripted = ScriptedModel(*[looping] * 300)
    code, printed = outcome(
        record.main, [*make_record_argv(fixture_copy.parent), "--max-calls", "5"], model_factory=lambda: scripted
    )
    assert code == 3, printed
    assert scripted.calls == 5
    assert "never called the structured-output tool 'Invoice' in 5 model calls (the bound per case)" in printed
    assert "it called tools it was not offered: 'web_search' x5" in printed
    assert fixture_copy.read_bytes() == before


def test_a_tool_call_that_never_validates_exits_2_with_the_reason(fixture_copy):
    before = fixture_copy.read_bytes()
    invalid = tool_events(['{"invoice_id": "NW-2026-0417"}'])
    refusal = text_events("I cannot fill the other fields.")
    code, printed = run_command(fixture_copy, invalid, refusal, refusal)  # answered, then the forced retry
    assert code == 2, printed
    assert "StructuredOutputException" in printed and f"{fixture_copy} was left unchanged." in printed
    assert fixture_copy.read_bytes() == before


def test_a_write_that_fails_exits_2_and_leaves_the_fixture(fixture_copy, monkeypatch):
    before = fixture_copy.read_bytes()

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    code, printed = run_command(fixture_copy, tool_events(CORRECT_CHUNKS))
    assert code == 2 and f"offline_invoice: cannot write {fixture_copy}: disk full.\n" in printed, printed
    assert fixture_copy.read_bytes() == before
    assert sorted(p.name for p in fixture_copy.parent.iterdir()) == [fixture_copy.name]


def test_missing_dependency_exits_1_and_leaves_the_fixture(fixture_copy, monkeypatch):
    before = fixture_copy.read_bytes()
    monkeypatch.setitem(sys.modules, "boto3", None)
    code, printed = run_command(fixture_copy, tool_events(CORRECT_CHUNKS))
    assert code == record.EXIT_MISSING_DEPENDENCY == 1
    assert "Missing dependency: boto3" in printed and "make setup" in printed
    assert fixture_copy.read_bytes() == before


def test_the_command_reports_a_missing_strands_as_exit_1_not_a_traceback(fixture_copy, tmp_path):
    blocked = tmp_path / "blocked" / "strands"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("strands is not installed")\n', encoding="utf-8")
    before = fixture_copy.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(blocked.parent)}
    done = subprocess.run(
        [sys.executable, "-m", "fieldeval.commands.record", *make_record_argv(fixture_copy.parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "Missing dependency: strands-agents" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert fixture_copy.read_bytes() == before


def test_absent_credentials_exit_2_before_any_call(fixture_copy, no_aws_credentials):
    before = fixture_copy.read_bytes()
    code, printed = outcome(record.main, make_record_argv(fixture_copy.parent))
    assert code == record.EXIT_BAD_INPUT == 2
    assert "The agent call failed: CredentialsError: no AWS credentials found" in printed
    assert "AWS_PROFILE" in printed and "Nothing was written." in printed
    assert fixture_copy.read_bytes() == before


def test_help_lists_the_exit_codes(capsys):
    assert record.main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "python -m fieldeval.commands.record" in text
    for line in ("0  recorded", "1  a dependency is missing", "2  bad input", "3  the model never produced"):
        assert line in text


def test_describe_changes_reads_a_reordered_list_as_one_line():
    def fixture(items):
        tool = {
            "name": "Invoice",
            "toolUseId": "t",
            "inputChunks": ["{}"],
            "input": {"line_items": items},
            "usage": USAGE,
        }
        return {"provenance": {"hand_authored": False, "model_id": "m"}, "turns": [{"toolUse": tool}]}

    changes = describe_changes(fixture([{"sku": "A"}, {"sku": "B"}]), fixture([{"sku": "B"}, {"sku": "A"}]))
    assert changes == ["payload.line_items: same items, different order"]
    assert describe_changes(fixture([{"sku": "A"}]), fixture([{"sku": "A"}])) == ["no change"]


def test_describe_changes_without_a_previous_fixture():
    assert describe_changes(None, {"provenance": {}, "turns": []}) == [
        "there was no readable previous fixture; everything is new"
    ]


# --- capture and commit, the two steps a multi-fixture recorder calls separately -------------


def capture(*scripts, source, label=""):
    """What `capture_task` returns, or the error it raised and its message (what the command prints)."""
    try:
        captured = capture_task(
            offline_invoice.task,
            SimpleNamespace(input=offline_invoice.document()),
            ScriptedModel(*scripts),
            offline_invoice.OUTPUT_MODEL,
            source=source,
            model_id="scripted",
            note="scripted capture",
            label=label,
        )
    except RecordingFailed as exc:
        return exc, f"{exc}\n"
    return captured, ""


def test_capture_returns_the_fixture_data_bound_to_the_prompt_and_writes_nothing(tmp_path):
    target = tmp_path / "doc-1.json"
    captured, printed = capture(tool_events(CORRECT_CHUNKS), source=str(target))
    assert printed == "" and list(tmp_path.iterdir()) == []
    assert captured["provenance"]["prompt_sha256"] == prompt_sha256(offline_invoice.prompt())
    assert captured["provenance"]["hand_authored"] is False and captured["provenance"]["model_id"] == "scripted"
    assert captured["calls"][0]["events"] == tool_events(CORRECT_CHUNKS)


def test_capture_prefixes_its_messages_with_the_label(tmp_path):
    source = str(tmp_path / "doc-1.json")
    error, printed = capture(text_events("No."), text_events("Still no."), source=source, label="doc-1")
    assert type(error) is NoStructuredOutput
    assert printed.startswith("doc-1: the model never called the structured-output tool 'Invoice'")
    error, printed = capture([RuntimeError("throttled")], source=source, label="doc-1")
    assert type(error) is RecordingFailed and printed.startswith("doc-1: the task failed: RuntimeError: throttled")
    assert isinstance(error.__cause__, RuntimeError)  # the task's own error stays in the chain


def test_a_task_that_returns_something_else_than_the_schema_is_refused(tmp_path):
    def task(case, model):
        offline_invoice.task(case, model)
        return "a summary"

    with pytest.raises(RecordingFailed) as refused:
        capture_task(
            task,
            SimpleNamespace(input=offline_invoice.document()),
            ScriptedModel(tool_events(CORRECT_CHUNKS)),
            offline_invoice.OUTPUT_MODEL,
            source=str(tmp_path / "x.json"),
            model_id="m",
            note="n",
        )
    assert type(refused.value) is RecordingFailed
    assert "returned a str ('a summary'), not the structured output" in str(refused.value)
    assert "return result.structured_output from the task" in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_commit_replaces_the_file_and_prints_the_review(fixture_copy):
    captured, _ = capture(tool_events(CORRECT_CHUNKS), source=str(fixture_copy))
    out = io.StringIO()
    assert commit_fixture(captured, fixture_copy, out) == fixture_copy
    assert json.loads(fixture_copy.read_text(encoding="utf-8")) == captured
    printed = out.getvalue()
    assert printed.startswith(f"Recorded 1 model call(s) into {fixture_copy}.\nPayload of the Invoice answer:\n")
    assert "Changes from the previous fixture" in printed and "provenance.hand_authored: True -> False" in printed


def test_make_record_is_the_general_recorder_on_the_offline_invoice():
    repo = Path(offline_invoice.__file__).parents[2]
    makefile = (repo / "Makefile").read_text(encoding="utf-8").splitlines()
    recipe = makefile[makefile.index(next(line for line in makefile if line.startswith("record:"))) + 1]
    words = shlex.split(recipe)
    assert words[:3] == ["$(BIN)/python", "-m", "fieldeval.commands.record"]
    in_repo = [str(repo / word) if word.startswith("data/") else word for word in words[3:]]
    assert in_repo == make_record_argv(offline_invoice.FIXTURE_PATH.parent)


def test_the_command_repeats_the_library_defaults_it_cannot_import_before_the_dependency_check():
    from fieldeval.exchanges import recorder
    from fieldeval.flows import record as flow
    from fieldeval.formats import exchange
    from fieldeval.harness import agent_run

    assert flow.DEFAULT_MATCH_ON == exchange.DEFAULT_MATCH_ON and flow.MATCH_PARTS == exchange.MATCH_PARTS
    assert flow.DEFAULT_MAX_CALLS == recording.DEFAULT_MAX_CALLS
    assert flow.RECORD_MODES == recorder.RECORD_MODES
    assert flow.DEFAULT_CONCURRENCY == agent_run.DEFAULT_CONCURRENCY == recorder.DEFAULT_CONCURRENCY
