"""The general recorder end to end through the real boto3 client, against a local ConverseStream.

`python -m fieldeval.commands.record` runs in process exactly as `make record` runs it (no model stand-in:
its own credentials check, `live_model`, the bundled task), with boto3's endpoint override
pointing bedrock-runtime at `tests/servers/bedrock.py` and static dummy credentials. The live
model's client timeouts are shrunk so a stalled server costs a second, not minutes.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from botocore.config import Config

from fieldeval.commands import record
from fieldeval.files import REPO_ROOT
from tests.commands.streams import outcome, streams
from tests.servers.bedrock import BedrockServer, bedrock_environment, event, exception, text_stream, tool_use_stream

BUNDLED = REPO_ROOT / "data" / "exchanges" / "offline_invoice.json"
CASES = REPO_ROOT / "data" / "invoices" / "offline_invoice.jsonl"
FAST = Config(connect_timeout=0.5, read_timeout=0.5, retries={"mode": "standard", "total_max_attempts": 1})


@pytest.fixture
def bedrock(monkeypatch, no_aws_credentials, local_servers):
    with BedrockServer() as server:
        for name, value in bedrock_environment(server.url).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr("fieldeval.services.bedrock.CLIENT_CONFIG", FAST)
        yield server


@pytest.fixture
def cassettes(tmp_path) -> Path:
    """A cassette folder holding the bundled exchange and a file of the user's own."""
    folder = tmp_path / "cassettes"
    folder.mkdir()
    shutil.copy(BUNDLED, folder / BUNDLED.name)
    (folder / "notes.txt").write_text("not a cassette\n")
    return folder


def contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def run_record(cassettes: Path, task: str = "walkthroughs.offline_invoice:task") -> tuple[int, str]:
    """The exit code and what it printed about the outcome (`tests.commands.streams.outcome`)."""
    argv = ["--schema", "walkthroughs.invoices:Invoice", "--cases", str(CASES), "--task", task]
    return outcome(record.main, [*argv, "--cassettes", str(cassettes)])


def bundled_chunks() -> list[str]:
    return json.loads(BUNDLED.read_text())["turns"][0]["toolUse"]["inputChunks"]


def test_a_good_stream_is_captured_through_the_real_client(bedrock, cassettes):
    bedrock.script = [("stream", tool_use_stream("Invoice", bundled_chunks(), tool_use_id="tooluse_live_1"))]
    code, printed = run_record(cassettes)
    assert code == 0, printed
    written = json.loads((cassettes / BUNDLED.name).read_text())
    assert written["provenance"]["hand_authored"] is False
    assert written["provenance"]["provider"] == "strands.models.bedrock.BedrockModel"
    assert written["provenance"]["endpoint"] == bedrock.url.removeprefix("http://")  # not Bedrock's own service
    (call,) = written["calls"]
    deltas = [e["contentBlockDelta"]["delta"]["toolUse"]["input"] for e in call["events"] if "contentBlockDelta" in e]
    assert deltas == bundled_chunks()  # exactly as streamed, split mid-token
    assert call["response"]["message"]["content"][0]["toolUse"]["toolUseId"] == "tooluse_live_1"
    assert [spec["name"] for spec in call["request"]["tools"]] == ["Invoice"]
    assert [r["path"].split("/")[-1] for r in bedrock.requests] == ["converse-stream"]
    assert (cassettes / "notes.txt").read_text() == "not a cassette\n"


THROTTLED = ("stream", [event("messageStart", {"role": "assistant"}), exception("throttlingException", "Slow down")])
FAILURES = {
    "access denied": (("error", 403, "AccessDeniedException", "You don't have access to the model."), 2),
    "broken mid-message": (("broken", tool_use_stream("Invoice", bundled_chunks())[:3], 20), 2),
    "stops answering": (("stall", 10), 2),
    "stops mid-stream": (("hang", tool_use_stream("Invoice", bundled_chunks())[:3], 10), 2),
    "answers in text": (("stream", text_stream("I cannot help with that.")), 3),
}


@pytest.mark.parametrize("name", FAILURES)
def test_each_failure_ends_with_its_exit_code_and_leaves_the_cassettes_byte_for_byte(bedrock, cassettes, name):
    step, exit_code = FAILURES[name]
    bedrock.default = step  # every attempt the agent makes meets the same failure
    before = contents(cassettes)
    code, printed = run_record(cassettes)
    assert code == exit_code, printed
    assert contents(cassettes) == before
    assert "was left unchanged" in printed
    assert len(bedrock.requests) <= 3


@pytest.fixture
def heard(monkeypatch) -> list[float | None]:
    """The Retry-After of each throttle the run's back-off heard; its first pause shortened (Bedrock sends none)."""
    from fieldeval.exchanges import throttle

    times: list[float | None] = []

    class Quick(throttle.SharedBackoff):
        def __init__(self, **options) -> None:
            super().__init__(**options, first_delay=0.2)

        def throttled(self, sent_at: float, retry_after: float | None) -> None:
            times.append(retry_after)
            super().throttled(sent_at, retry_after)

    monkeypatch.setattr("fieldeval.exchanges.recorder.SharedBackoff", Quick)
    return times


def test_a_throttle_after_the_stream_began_is_sent_again_and_the_half_call_leaves_no_trace(bedrock, cassettes, heard):
    # The bundled task keeps Strands' default retry strategy; the recorder holds each call's events until its
    # stream ends, so the throttle is its own to retry, and Strands' strategy never sees it.
    good = ("stream", tool_use_stream("Invoice", bundled_chunks(), tool_use_id="tooluse_live_1"))
    bedrock.script = [THROTTLED, good]
    code, printed = run_record(cassettes)
    assert code == 0, printed
    assert heard == [None] and len(bedrock.requests) == 2
    assert "The provider throttled 1 request(s); the run paused 0.2 s in all and sent them again." in printed
    (call,) = json.loads((cassettes / BUNDLED.name).read_text())["calls"]
    assert call["response"]["message"]["content"][0]["toolUse"]["toolUseId"] == "tooluse_live_1"


def test_a_bedrock_that_throttles_every_call_stops_the_run_after_give_up_after_naming_its_class(bedrock, cassettes):
    bedrock.default = ("error", 429, "ThrottlingException", "Too many requests, please wait.")
    before = contents(cassettes)
    argv = [
        "--schema",
        "walkthroughs.invoices:Invoice",
        "--cases",
        str(CASES),
        "--task",
        "walkthroughs.offline_invoice:task",
    ]
    code, out, err = streams(record.main, [*argv, "--cassettes", str(cassettes), "--give-up-after", "1.5"])
    assert code == 2, (out, err)
    assert contents(cassettes) == before
    assert "Gave up: no model call succeeded for 1.5 s while strands.models.bedrock.BedrockModel throttled (" in err
    throttled = len(bedrock.requests)  # every request the server answered was a 429, and the run counted each
    assert f"The provider throttled {throttled} request(s); the run paused" in out and "before it gave up" in out
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["broken mid-message", "stops answering", "stops mid-stream"])
def test_each_failure_message_names_bedrock_and_the_fix(bedrock, cassettes, name):
    bedrock.default = FAILURES[name][0]
    _, printed = run_record(cassettes)
    assert "Amazon Bedrock failed" in printed and ("try again" in printed or "check the network" in printed)


def test_a_credential_process_printing_non_json_is_a_clear_credentials_error(
    monkeypatch, no_aws_credentials, cassettes
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    (no_aws_credentials / "config").write_text("[profile tool]\ncredential_process = /bin/echo Please log in\n")
    monkeypatch.setenv("AWS_PROFILE", "tool")
    before = contents(cassettes)
    code, printed = run_record(cassettes)
    assert code == 2, printed
    assert "CredentialsError: AWS profile 'tool': credential_process failed" in printed
    assert "Nothing was written." in printed and contents(cassettes) == before


def test_native_structured_output_is_recorded_and_replays_as_faithfully_as_a_tool_call(bedrock, cassettes):
    """A model that rejects forced tool choice: Strands falls back to native output, answered as JSON text."""
    from fieldeval.exchanges.fixtures import load_exchange
    from fieldeval.exchanges.replay import ReplayModel
    from walkthroughs import offline_invoice

    truth = offline_invoice.GROUND_TRUTH.model_dump(mode="json")
    refusal = ("error", 400, "ValidationException", "This model doesn't support the toolConfig.toolChoice field.")
    bedrock.script = [
        ("stream", text_stream("Here is the invoice.")),
        refusal,
        ("stream", text_stream(json.dumps(truth))),
    ]
    model_id = "test.native-output-only-v1"  # Strands remembers per model id which mechanisms it rejects
    out = io.StringIO()
    argv = ["--schema", "walkthroughs.invoices:Invoice", "--cases", str(CASES)]
    argv += ["--task", "walkthroughs.offline_invoice:task", "--cassettes", str(cassettes), "--model-id", model_id]
    assert record.main(argv, out=out) == 0, out.getvalue()
    assert "outputConfig" in bedrock.requests[2]["body"]  # the native request, after the forced one was refused
    exchange = load_exchange(cassettes / BUNDLED.name, tool_name="Invoice", output_model=offline_invoice.OUTPUT_MODEL)
    assert exchange.structured_output_by_provider is True and len(exchange.calls) == 2
    retry = exchange.calls[1].request
    assert retry["tool_choice"] == {"tool": {"name": "Invoice"}} and retry["output_schema"]["title"] == "Invoice"
    assert exchange.tool_uses() == [] and exchange.final_output("Invoice") == truth
    replay = ReplayModel(exchange, output_tool="Invoice")
    case = SimpleNamespace(input=offline_invoice.document())
    assert offline_invoice.task(case, replay) == offline_invoice.GROUND_TRUTH
    assert replay.unused_turns == 0


def test_an_http_429_throttling_exception_pauses_the_run_and_is_sent_again(bedrock, cassettes, heard):
    good = ("stream", tool_use_stream("Invoice", bundled_chunks(), tool_use_id="tooluse_live_1"))
    bedrock.script = [("error", 429, "ThrottlingException", "Too many requests, please wait."), good]
    code, printed = run_record(cassettes)
    assert code == 0, printed
    assert heard == [None] and len(bedrock.requests) == 2  # heard by the run's back-off, not Strands' own retries
    assert "The provider throttled 1 request(s); the run paused 0.2 s in all and sent them again." in printed
    (call,) = json.loads((cassettes / BUNDLED.name).read_text())["calls"]  # the throttled attempt left no trace
    assert call["response"]["message"]["content"][0]["toolUse"]["toolUseId"] == "tooluse_live_1"


USER_FACTORY = """
from strands.models import BedrockModel


def bedrock():  # as Strands' documentation shows it: botocore keeps its own retries (legacy mode, five attempts)
    return BedrockModel(model_id="us.anthropic.claude-haiku-4-5-20251001-v1:0", temperature=0.0)
"""


def test_a_users_bedrock_model_sends_each_call_once_and_every_429_is_counted(
    bedrock, cassettes, heard, tmp_path, monkeypatch
):
    for name in ("AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "user_bedrock.py").write_text(USER_FACTORY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    throttle = ("error", 429, "ThrottlingException", "Too many requests, please wait.")
    good = ("stream", tool_use_stream("Invoice", bundled_chunks(), tool_use_id="tooluse_live_1"))
    bedrock.script = [throttle, throttle, throttle, good]
    argv = ["--schema", "walkthroughs.invoices:Invoice", "--cases", str(CASES)]
    argv += [
        "--task",
        "walkthroughs.offline_invoice:task",
        "--cassettes",
        str(cassettes),
        "--model",
        "user_bedrock:bedrock",
    ]
    code, out, err = streams(record.main, argv)
    assert code == 0, err
    assert len(bedrock.requests) == 4 and heard == [None, None, None]  # each 429 reached the run's back-off
    assert "The provider throttled 3 request(s); the run paused" in out
