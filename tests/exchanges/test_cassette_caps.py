"""Cassettes and recorded streams are bounded: a file over its cap is refused before it is parsed,
and a model that streams without end is cut off at the cap, failing its case and writing nothing."""

import json
import shutil

import pytest
from strands.models import Model

from fieldeval.commands import record, score
from fieldeval.exchanges import fixtures, recording
from fieldeval.exchanges.fixtures import FixtureError, load_exchange
from fieldeval.formats import limits
from tests.commands.streams import outcome, streams
from tests.exchanges.test_recording import CORRECT_CHUNKS, ScriptedModel, make_record_argv, tool_events
from tests.size_caps import no_parsing, small_cap
from walkthroughs import offline_invoice

SAMPLE = offline_invoice.FIXTURE_PATH.parents[2] / "examples" / "your_own_agent"
REPLAY = [
    "--schema", "purchase_order:PurchaseOrder", "--cases", "cases.jsonl", "--task", "extract:task",
    "--cassettes", "cassettes", "--out", "run.json",
]  # fmt: skip


@pytest.fixture
def sample(tmp_path, monkeypatch):
    """The "your own agent" sample with its cassettes, as a user's project."""
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(project)
    monkeypatch.setenv("EVAL_NOTEBOOKS_MODE", "replay")
    for name in ("purchase_order", "extract"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return project


# --- reading a cassette ---------------------------------------------------------------------


def test_score_refuses_a_1_gib_cassette_before_reading_it_naming_the_file_the_cap_and_the_command(sample, monkeypatch):
    cassette = sample / "cassettes" / "po-1003.json"
    with cassette.open("r+b") as file:
        file.truncate(1 << 30)  # sparse: a 1 GiB file with no data written
    no_parsing(monkeypatch)
    code, out, err = streams(score.main, REPLAY)
    assert code == score.EXIT_BAD_INPUT, out + err
    assert "cassettes/po-1003.json: 1 GiB, over the 64 MiB cap on a cassette, so it was not read" in err
    assert "re-record it with `python -m fieldeval.commands.record" in err and "--only po-1003" in err
    assert not (sample / "run.json").exists()


@pytest.mark.parametrize("padding", [0, 1])
def test_a_valid_cassette_is_read_up_to_the_cap_and_refused_one_byte_past_it(tmp_path, monkeypatch, padding):
    text = offline_invoice.FIXTURE_PATH.read_text(encoding="utf-8")
    path = tmp_path / "offline_invoice.json"
    path.write_text(text + " " * padding, encoding="utf-8")  # blanks after the object: still valid JSON
    small_cap(monkeypatch, "EXCHANGE", len(text.encode("utf-8")))
    if padding:
        with pytest.raises(FixtureError, match=r"offline_invoice.json: .* over the .* cap on a cassette"):
            load_exchange(path, tool_name="Invoice")
    else:
        assert load_exchange(path, tool_name="Invoice").tool_uses()


def test_the_recorder_reads_no_previous_cassette_over_the_cap(tmp_path, monkeypatch):
    previous = tmp_path / "old.json"
    previous.write_text('{"calls": []}', encoding="utf-8")
    with previous.open("r+b") as file:
        file.truncate(limits.EXCHANGE.bytes + 1)
    no_parsing(monkeypatch, over=0)
    assert recording.read_previous(previous) is None


# --- recording a stream ---------------------------------------------------------------------


class EndlessModel(Model):
    """A provider that streams text for ever, as a model stuck in a loop with no max_tokens does."""

    def __init__(self):
        self.sent = 0

    def update_config(self, **config):
        pass

    def get_config(self):
        return {}

    async def structured_output(self, *args, **kwargs):
        raise NotImplementedError
        yield

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs):
        yield {"messageStart": {"role": "assistant"}}
        while self.sent < 100_000:  # a test must end: far past any cap a test sets, the stream breaks
            self.sent += 1
            yield {"contentBlockDelta": {"delta": {"text": "and again "}, "contentBlockIndex": 0}}
        raise RuntimeError("the recorder never cut the stream off")


@pytest.fixture
def cassette(tmp_path):
    path = tmp_path / "cassettes" / "offline_invoice.json"
    path.parent.mkdir()
    path.write_bytes(offline_invoice.FIXTURE_PATH.read_bytes())
    return path


def test_a_model_that_streams_without_end_is_cut_off_at_the_cap_and_its_case_fails(cassette, monkeypatch):
    small_cap(monkeypatch, "STREAM", 64 << 10)
    before = cassette.read_bytes()
    endless = EndlessModel()
    code, printed = outcome(record.main, make_record_argv(cassette.parent), model_factory=lambda: endless)
    assert code == record.EXIT_BAD_INPUT == 2, printed
    assert "offline_invoice: the case failed: the model streamed more than the 64 KiB cap on what a model " in printed
    assert "lower its max_tokens" in printed and "nothing was written for this case" in printed
    assert f"{cassette} was left unchanged" in printed
    delta = {"contentBlockDelta": {"delta": {"text": "and again "}, "contentBlockIndex": 0}}
    event = len(json.dumps(delta, separators=(",", ":")))
    assert endless.sent <= (64 << 10) // event + 1  # stopped at the cap, not at the end of the stream
    assert cassette.read_bytes() == before


def test_a_stream_under_the_cap_records_whole(cassette, monkeypatch):
    events = tool_events(CORRECT_CHUNKS)
    size = sum(len(json.dumps(event, separators=(",", ":"))) for event in events)
    small_cap(monkeypatch, "STREAM", size)  # exactly what the stream holds: recorded
    code, printed = outcome(record.main, make_record_argv(cassette.parent), model_factory=lambda: ScriptedModel(events))
    assert code == 0, printed
    assert load_exchange(cassette).calls[0].events == events


def test_a_throttled_attempt_counts_nothing_against_the_cap(cassette, monkeypatch):
    """A stream throttled at its end is dropped and sent again: only the attempt that is kept counts."""
    from strands.types.exceptions import ModelThrottledException

    events = tool_events(CORRECT_CHUNKS)
    size = sum(len(json.dumps(event, separators=(",", ":"))) for event in events)
    small_cap(monkeypatch, "STREAM", size)  # room for one whole stream, not for two
    throttled_at_the_end = [*events, ModelThrottledException("Too many requests")]
    model = ScriptedModel(throttled_at_the_end, events)
    code, printed = outcome(record.main, make_record_argv(cassette.parent), model_factory=lambda: model)
    assert code == 0, printed
    assert model.calls == 2
    assert load_exchange(cassette).calls[0].events == events


def test_a_recording_whose_cassette_would_pass_the_cap_is_not_written(cassette, monkeypatch):
    small_cap(monkeypatch, "EXCHANGE", 4 << 10)  # the requests alone (the invoice's text) pass 4 KiB
    before = cassette.read_bytes()
    code, printed = outcome(
        record.main, make_record_argv(cassette.parent), model_factory=lambda: ScriptedModel(tool_events(CORRECT_CHUNKS))
    )
    assert code == 2, printed
    assert "offline_invoice: storing the recording failed" in printed
    assert "over the 4 KiB cap on a cassette, so it was not written" in printed
    assert cassette.read_bytes() == before


def test_save_exchange_writes_no_cassette_a_replay_would_refuse(tmp_path, monkeypatch):
    data = json.loads(offline_invoice.FIXTURE_PATH.read_text(encoding="utf-8"))
    small_cap(monkeypatch, "EXCHANGE", 1 << 10)
    target = tmp_path / "x.json"
    with pytest.raises(FixtureError, match="over the 1 KiB cap on a cassette, so it was not written"):
        fixtures.save_exchange(data, target)
    assert not target.exists()
