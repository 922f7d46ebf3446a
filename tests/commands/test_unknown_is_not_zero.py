"""What the run does not know is said, never printed as a zero: a cost the price table cannot price is
"not priced", a latency the provider never reported is "not reported"."""

import pytest

from fieldeval.commands import record
from fieldeval.commands.compare import main as compare_main
from fieldeval.exchanges.usage import Usage, events_usage, total
from fieldeval.formats.prices import Price, cost_line
from fieldeval.formats.run_info import RunInfo
from tests.commands.streams import outcome
from tests.commands.test_score_command import DOCUMENTS, TASK_RUN, TRUTH, StandInProvider, make_project, run_score
from tests.commands.test_score_command import replay_args as replay

MODELS_MODULE = """
from tests.commands.test_unknown_is_not_zero import Unmeasured


def model():
    return Unmeasured()
"""


class Unmeasured(StandInProvider):
    """The stand-in provider, ending each stream as Strands' OpenAI and Anthropic adapters do: `latencyMs: 0`."""

    def __init__(self):
        super().__init__({DOCUMENTS[name]: payload for name, payload in TRUTH.items()})

    async def stream(self, *args, **kwargs):
        async for event in super().stream(*args, **kwargs):
            if "metadata" in event:
                event = {"metadata": {**event["metadata"], "metrics": {"latencyMs": 0}}}
            yield event


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder = make_project(tmp_path, monkeypatch)
    (folder / "unmeasured_models.py").write_text(MODELS_MODULE, encoding="utf-8")
    return folder


def test_a_latency_the_provider_never_reported_is_not_reported_and_an_unpriced_cost_is_not_priced(project):
    code, printed = outcome(record.main, [*TASK_RUN, "--model", "unmeasured_models:model"])
    assert code == 0, printed
    assert "model latency not reported by the provider" in printed and "latency 0.0 s" not in printed
    (project / "prices.json").write_text('{"another-model": {"input_per_million": 2.0, "output_per_million": 10.0}}')
    code, printed = run_score(*replay("run.json", "--prices", "prices.json"))
    assert code == 0, printed
    assert "output tokens, model latency not reported by the provider." in printed
    assert "Model cost not priced (not in the table: stand-in)." in printed
    assert "0.0000" not in printed and "0.0 s" not in printed


def test_compare_says_a_run_with_no_model_use_is_not_priced(project, capsys):
    predictions = ["--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions"]
    assert run_score(*predictions, "predictions.jsonl", "--out", "predicted.json")[0] == 0
    (project / "prices.json").write_text('{"stand-in": {"input_per_million": 2.0, "output_per_million": 10.0}}')
    capsys.readouterr()
    assert compare_main(["predicted.json", "predicted.json", "--prices", "prices.json"]) == 0
    printed = capsys.readouterr().out
    assert "old cost not priced (the run recorded no model use); new cost not priced" in printed


# --- the two sentences, on their own --------------------------------------------------------------


def metadata(latency=None):
    event = {"metadata": {"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}}}
    if latency is not None:
        event["metadata"]["metrics"] = {"latencyMs": latency}
    return [event]


@pytest.mark.parametrize(
    ("latencies", "said"),
    [
        ([812, 400], "model latency 1.2 s (as the provider reports it)"),
        ([0], "model latency not reported by the provider"),
        ([None], "model latency not reported by the provider"),
        ([812, 0], "model latency not reported by the provider"),  # not a sum over some of the calls
        ([812, None], "model latency not reported by the provider"),
    ],
)
def test_latency_is_the_providers_only_when_every_call_reported_one(latencies, said):
    usage = events_usage(metadata(latency) for latency in latencies)
    assert said in usage.describe()
    cases = total(events_usage([metadata(latency)]) for latency in latencies)  # the same calls, one case each
    assert said in cases.describe() and cases.latency_ms == usage.latency_ms


def test_a_run_of_no_model_call_says_nothing_of_latency_and_wall_time_keeps_a_known_latency():
    assert "latency" not in Usage().describe()
    assert (events_usage([metadata(812)]) + Usage(seconds=2.0)).latency_ms == 812


def info(*cases):
    return RunInfo.model_validate(
        {
            "schema": "m:C",
            "cases": {
                f"doc-{number}": {"origin": "model", "model_id": model, "usage": usage}
                for number, (model, usage) in enumerate(cases)
            },
        }
    )


PRICES = {"priced": Price(input_per_million=1.0, output_per_million=2.0)}
USED = {"calls": 1, "input_tokens": 1_000_000, "output_tokens": 500_000}


@pytest.mark.parametrize(
    ("cases", "line"),
    [
        ([("priced", USED)], "cost 2.0000 at --prices"),
        ([("priced", USED), ("other", USED)], "cost 2.0000 at --prices for 1 of 2 cases"),
        ([("other", USED), ("another", USED)], "cost not priced (not in the table: another, other)"),
        ([("priced", None), ("other", {"calls": 0})], "cost not priced (the run recorded no model use)"),
        ([("priced", {"calls": 1, "input_tokens": 0, "output_tokens": 0})], "cost 0.0000 at --prices"),
    ],
    ids=["all", "some", "none", "no-use", "priced-zero"],
)
def test_the_cost_line_prices_only_what_the_table_prices_and_says_what_it_does_not(cases, line):
    found = cost_line(info(*cases), PRICES)
    assert found.startswith(line), found
    if "for 1 of 2" in line:
        assert found.endswith("(the rest not priced, not in the table: other)")
