"""Any provider: the sample's tool-using agent recorded through Strands' real OpenAIModel and the openai client,
against a local OpenAI-compatible chat-completions server, then replayed offline."""

import io
import json

import pytest

from fieldeval.commands import record, score
from fieldeval.exchanges.fixtures import load_exchange
from fieldeval.exchanges.replay import ReplayModel
from tests.commands.streams import outcome
from tests.sample_project import FOLDER, sample_project
from tests.servers.openai import OpenAIServer, text_step, tool_calls_step

BASE = ["--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl"]
KEY = "sk-local-never-stored"
FACTORY = f'''
import os

from strands.models.openai import OpenAIModel


def local():
    client_args = {{"base_url": os.environ["LOCAL_OPENAI_URL"], "api_key": "{KEY}", "timeout": 5, "max_retries": 0}}
    return OpenAIModel(client_args=client_args, model_id="llama-3.2-local", params={{"temperature": 0}})


def not_a_model():
    return "gpt"
'''


@pytest.fixture(autouse=True)
def openai_client():
    """The real openai client, imported when a test here runs rather than when the file is collected."""
    pytest.importorskip("openai")


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The sample folder with its first case only and a model factory of the user's, no cassettes."""
    return sample_project(tmp_path, monkeypatch, FACTORY, cases=1)


def answer() -> dict:
    return json.loads((FOLDER / "baseline_answers.jsonl").read_text(encoding="utf-8").splitlines()[0])["output"]


def script(server):
    lookups = [("call_a1", "lookup_sku", {"sku": "FL-25"}), ("call_a2", "lookup_sku", {"sku": "YS-1"})]
    server.script = [
        tool_calls_step(lookups, reasoning="Two SKUs to check."),
        tool_calls_step([("call_b1", "PurchaseOrder", answer())], pieces=7),
    ]


@pytest.mark.local_servers
def test_record_through_the_openai_client_then_replay_with_no_socket(project, monkeypatch, network_guard):
    with OpenAIServer() as server:
        monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
        script(server)
        out = io.StringIO()
        argv = [*BASE, "--task", "extract:task", "--cassettes", "cassettes", "--model", "models:local"]
        assert record.main(argv, out=out) == 0, out.getvalue()
    host = server.url.removeprefix("http://")
    assert f"Recording with OpenAIModel llama-3.2-local at {host} (a local endpoint" in out.getvalue()
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 2
    assert server.requests[0]["auth"] == f"Bearer {KEY}"  # the real client sent the key ...
    text = (project / "cassettes" / "po-1001.json").read_text(encoding="utf-8")
    assert KEY not in text  # ... and no file holds it
    exchange = load_exchange(project / "cassettes" / "po-1001.json", tool_name="PurchaseOrder")
    assert exchange.provenance["provider"] == "strands.models.openai.OpenAIModel"
    assert exchange.provenance["model_id"] == "llama-3.2-local" and exchange.endpoint == host
    first = exchange.calls[0].response["message"]["content"]
    assert [next(iter(block)) for block in first] == ["reasoningContent", "toolUse", "toolUse"]
    assert first[0]["reasoningContent"]["reasoningText"]["text"] == "Two SKUs to check."
    sent = server.requests[1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]  # the tool results went back
    fragments = [e for e in exchange.calls[1].events if "contentBlockDelta" in e]
    assert len(fragments) == 7  # the answer's arguments exactly as streamed

    model = ReplayModel(exchange, output_tool="PurchaseOrder")
    with network_guard.refusing_all():
        from extract import task

        output = task(type("Case", (), {"input": json.loads((project / "cases.jsonl").read_text())["input"]}), model)
    assert output.model_dump(mode="json") == answer() and model.unused_turns == 0


@pytest.mark.local_servers
def test_score_live_takes_the_model_from_the_factory(project, monkeypatch):
    monkeypatch.delenv("EVAL_NOTEBOOKS_MODE", raising=False)
    with OpenAIServer() as server:
        monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
        script(server)
        out = io.StringIO()
        argv = [*BASE, "--task", "extract:task", "--mode", "live", "--model", "models:local", "--out", "live.json"]
        assert score.main(argv, out=out) == 0, out.getvalue()
    host = server.url.removeprefix("http://")
    assert f"Scoring 1 case(s) live with OpenAIModel llama-3.2-local at {host} (a local endpoint" in out.getvalue()
    assert "Overall score 1.000; 1 of 1 case(s) pass." in out.getvalue()


@pytest.mark.local_servers
def test_a_model_answering_in_text_only_ends_with_exit_3_after_the_forced_retry(project, monkeypatch):
    with OpenAIServer() as server:
        monkeypatch.setenv("LOCAL_OPENAI_URL", server.url + "/v1")
        server.script = [text_step("I cannot read this order."), text_step("Still cannot.")]
        argv = [*BASE, "--task", "extract:task", "--cassettes", "cassettes", "--model", "models:local"]
        code, printed = outcome(record.main, argv)
        assert code == 3, printed
    assert len(server.requests) == 2
    assert "never called the structured-output tool 'PurchaseOrder'" in printed
    assert not (project / "cassettes").exists() or not list((project / "cassettes").iterdir())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("models:not_a_model", "--model 'models:not_a_model' returned a str, not a Strands Model"),
        ("models:nothing", "--model 'models:nothing'"),
        ("nomodule:local", "no module named 'nomodule'"),
    ],
)
def test_a_bad_factory_is_bad_input_before_any_call(project, spec, message):
    argv = [*BASE, "--task", "extract:task", "--cassettes", "cassettes", "--model", spec]
    code, printed = outcome(record.main, argv)
    assert code == 2
    assert message in printed and "Nothing was written." in printed
