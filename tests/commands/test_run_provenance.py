"""The model's settings in each cassette, every stale case listed at once, and a saved run that describes itself.

Run from a user's project folder (`tests.commands.test_score_command.project`), with the model
built by a `--model` factory of the project's own, as a user with another provider would.
"""

import json
from pathlib import Path

import pytest
from strands_evals.evaluators import StructuredOutputReport

from fieldeval.commands import record, report
from fieldeval.commands.compare import main as compare_main
from tests.commands.streams import outcome
from tests.commands.test_score_command import (
    DOCUMENTS,
    TASK_MODULE,
    TASK_RUN,
    TRUTH,
    StandInProvider,
    make_project,
    replay_args,
    run_score,
)

MODELS_MODULE = """
from tests.commands.test_run_provenance import Configured

TEMPERATURE = {temperature}


def model():
    return Configured(TEMPERATURE)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    return make_project(tmp_path, monkeypatch)


class Configured(StandInProvider):
    """The stand-in provider with settings as a real one has them: parameters, and a key that must stay out."""

    def __init__(self, temperature):
        super().__init__({DOCUMENTS[name]: payload for name, payload in TRUTH.items()})
        self.temperature = temperature

    def get_config(self):
        return {"model_id": "stand-in", "params": {"temperature": self.temperature, "api_key": "sk-not-for-files"}}


def factory(project, temperature):
    """The project's `--model` factory, with this temperature (its old bytecode removed: same size, same second)."""
    import shutil
    import sys

    (project / "po_models.py").write_text(MODELS_MODULE.format(temperature=temperature), encoding="utf-8")
    shutil.rmtree(project / "__pycache__", ignore_errors=True)
    sys.modules.pop("po_models", None)


def record_with_factory(*argv):
    return outcome(record.main, [*TASK_RUN, "--model", "po_models:model", *argv])


def test_record_keeps_the_settings_without_secrets_and_the_options_to_repeat(project):
    factory(project, 0.0)
    code, printed = record_with_factory("--match-on", "system,tools,messages")
    assert code == 0, printed
    provenance = json.loads((project / "cassettes" / "po-1.json").read_text())["provenance"]
    assert provenance["settings"] == {"params": {"temperature": 0.0}}
    assert "sk-not-for-files" not in (project / "cassettes" / "po-1.json").read_text()
    assert provenance["record_options"] == {"model": "po_models:model", "max_calls": 12}


def test_a_changed_setting_is_refused_on_replay_for_every_case_at_once_with_the_one_fix(project):
    factory(project, 0.0)
    assert record_with_factory("--match-on", "system,tools,messages")[0] == 0
    factory(project, 0.9)
    code, printed = run_score(*replay_args("run.json", "--model", "po_models:model"))
    assert code == 2 and not (project / "run.json").exists()
    assert (
        "3 of 3 case(s) would be refused by their cassettes:\n"
        "  3 cases (po-1, po-2, po-3): the model differs: params.temperature: recorded 0.0, given 0.9.\n"
    ) in printed
    fix = (
        "python -m fieldeval.commands.record --schema po_schema:PurchaseOrder --cases cases.jsonl --task po_task:task "
        "--cassettes cassettes --model po_models:model --match-on system,tools,messages --record-mode stale"
    )
    assert f"Re-record exactly those with:\n  {fix}\nNothing was written." in printed
    assert printed.count("params.temperature") == 1


def test_without_the_model_replay_says_the_settings_were_not_checked(project):
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    factory(project, 0.9)
    code, printed = run_score(*replay_args("run.json"))
    assert code == 0, printed
    assert "model settings not checked (pass --model to check them)" in printed


def test_one_edit_of_the_agent_is_one_reason_naming_every_case(project):
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    edited = TASK_MODULE.replace("callback_handler=None)", "callback_handler=None, system_prompt='Be exact.')")
    (project / "po_task.py").write_text(edited, encoding="utf-8")
    import sys

    sys.modules.pop("po_task", None)
    code, printed = run_score(*replay_args("run.json"))
    assert code == 2
    lines = [line for line in printed.splitlines() if "was recorded for another request" in line]
    assert len(lines) == 1 and lines[0].startswith("  3 cases (po-1, po-2, po-3): model call 1"), printed
    assert "--model po_models:model --record-mode stale" in printed


def test_stale_mode_rerecords_what_a_changed_setting_made_stale_and_missing_mode_only_the_missing(project):
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    before = {path.name: path.read_bytes() for path in (project / "cassettes").iterdir()}
    (project / "cassettes" / "po-2.json").unlink()
    code, printed = record_with_factory("--record-mode", "missing")
    assert code == 0 and "Recorded 1 of 1 case(s)" in printed, printed
    assert (project / "cassettes" / "po-1.json").read_bytes() == before["po-1.json"]
    code, printed = record_with_factory("--record-mode", "stale")
    assert code == 0 and "Nothing to record" in printed and "3 up to date, 0 stale" in printed, printed
    factory(project, 0.9)
    code, printed = record_with_factory("--record-mode", "stale")
    assert code == 0 and "0 up to date, 3 stale" in printed and "Recorded 3 of 3 case(s)" in printed, printed
    assert "provenance.settings.params.temperature: recorded 0.0, given 0.9" in printed


def test_the_saved_run_says_where_its_outputs_came_from_and_what_they_cost(project, capsys):
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    code, printed = run_score(*replay_args("replayed.json"))
    assert code == 0, printed
    said = "Model use: 3 model call(s), 150 input and 60 output tokens, model latency not reported by the provider."
    assert said in printed
    saved = json.loads((project / "replayed.json").read_text())
    run = saved["run"]
    assert run["schema"] == "po_schema:PurchaseOrder" and run["match_threshold"] == 0.7
    assert run["comparators"]["lines"].startswith("Hungarian")
    assert run["cases"]["po-1"]["origin"] == "model" and run["cases"]["po-1"]["model_id"] == "stand-in"
    assert run["cases"]["po-1"]["usage"] == {"calls": 1, "input_tokens": 50, "output_tokens": 20}
    assert StructuredOutputReport.from_file(str(project / "replayed.json")).overall_score == 1.0  # still Strands'
    code, printed = run_score(
        "--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl",
        "--out", "predicted.json",
    )  # fmt: skip
    assert code == 0, printed
    capsys.readouterr()
    assert compare_main(["replayed.json", "predicted.json"]) == 0
    printed = capsys.readouterr().out
    assert "old outputs: 3 of 3 cases answered by stand-in" in printed
    assert "new outputs: 3 of 3 cases read from a predictions file" in printed


def test_report_shows_the_leaf_diffs_the_run_stored_and_imports_no_schema_for_them(project, capsys):
    assert run_score(
        "--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl",
        "--out", "predicted.json",
    )[0] == 0  # fmt: skip
    capsys.readouterr()
    import re
    import sys

    def leaf_diffs(page):
        html = (project / page).read_text(encoding="utf-8")
        found = re.search(r'<script id="document-data" type="application/json">(.*?)</script>', html, re.S)[1]
        return json.loads(found)["documents"]

    sys.modules.pop("po_schema", None)
    assert report.main(["predicted.json", "--out", "page.html"]) == 0  # the saved report, nothing repeated
    assert "po_schema" not in sys.modules  # the diffs came from the run, not from the module it names
    printed = capsys.readouterr().out
    assert "### Failures by kind" in printed and "--schema" not in printed
    [(name, _, _, leaves)] = leaf_diffs("page.html")  # the one document with a leaf that cost points
    assert name == "po-2" and "Betamax" in json.dumps(leaves) and "25.0" in json.dumps(leaves)
    # --schema computes them afresh from the module named on the command line: the same diffs
    assert report.main(["predicted.json", "--schema", "po_schema:PurchaseOrder", "--out", "fresh.html"]) == 0
    assert leaf_diffs("fresh.html") == leaf_diffs("page.html")
    # the schema changed since: the page still shows the run as it was scored, and the module is not read
    (project / "po_schema.py").write_text("raise SystemExit('imported')\n", encoding="utf-8")
    sys.modules.pop("po_schema", None)
    assert report.main(["predicted.json", "--out", "page2.html"]) == 0
    assert leaf_diffs("page2.html") == leaf_diffs("page.html")


def test_a_price_table_turns_the_recorded_tokens_into_money_and_names_what_it_cannot_price(project, capsys):
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    (project / "prices.json").write_text('{"stand-in": {"input_per_million": 2.0, "output_per_million": 10.0}}')
    code, printed = run_score(*replay_args("replayed.json", "--prices", "prices.json"))
    assert code == 0, printed
    assert "Model cost 0.0009 at --prices." in printed  # 150 x 2 / 1e6 + 60 x 10 / 1e6
    (project / "other.json").write_text('{"another-model": {"input_per_million": 2.0, "output_per_million": 10.0}}')
    capsys.readouterr()
    assert compare_main(["replayed.json", "replayed.json", "--prices", "other.json"]) == 0
    assert "old cost not priced (not in the table: stand-in)" in capsys.readouterr().out


def test_a_bad_price_table_is_refused_naming_the_model_and_the_field(project):
    (project / "prices.json").write_text('{"stand-in": {"input_per_million": -1, "output_per_million": 10.0}}')
    code, printed = run_score(
        "--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl",
        "--out", "predicted.json", "--prices", "prices.json",
    )  # fmt: skip
    assert code == 2 and not (project / "predicted.json").exists()
    assert "prices.json: field 'input_per_million': model 'stand-in':" in printed, printed


def test_score_live_keeps_cases_in_flight_and_prints_the_wall_time_beside_the_tokens(project, monkeypatch):
    factory(project, 0.0)
    monkeypatch.delenv("EVAL_NOTEBOOKS_MODE")
    code, printed = run_score(
        "--schema", "po_schema:PurchaseOrder", "--cases", "cases.jsonl", "--task", "po_task:task",
        "--mode", "live", "--model", "po_models:model", "--concurrency", "2", "--out", "live.json",
    )  # fmt: skip
    assert code == 0, printed
    assert "60 output tokens, model latency not reported by the provider, wall time of the calls" in printed
    run = json.loads((project / "live.json").read_text())["run"]
    assert {source["origin"] for source in run["cases"].values()} == {"model"}
    assert all("seconds" in source["usage"] for source in run["cases"].values())


def scored_runs(project):
    """The project's cassettes replayed (a stand-in model, with usage) and its predictions file, both saved."""
    factory(project, 0.0)
    assert record_with_factory()[0] == 0
    assert run_score(*replay_args("replayed.json"))[0] == 0
    predictions = [
        "--schema",
        "po_schema:PurchaseOrder",
        "--cases",
        "cases.jsonl",
        "--predictions",
        "predictions.jsonl",
    ]
    assert run_score(*predictions, "--out", "predicted.json")[0] == 0


def page_and_summary(capsys, *argv):
    capsys.readouterr()
    code = report.main([*argv, "--out", "page.html", "--resamples", "50"])
    summary = capsys.readouterr().out
    return code, Path("page.html").read_text(encoding="utf-8"), summary


def test_report_says_where_the_outputs_came_from_and_what_its_page_holds(project, capsys):
    scored_runs(project)
    code, page, summary = page_and_summary(capsys, "predicted.json")
    assert code == 0
    assert "- outputs: 3 of 3 cases read from a predictions file" in summary
    assert "<li>outputs: 3 of 3 cases read from a predictions file</li>" in page
    assert summary.rstrip().endswith("The leaf diff of each of the 1 document(s) that lost points, every leaf with "
                                     "its cost, is in page.html.")  # fmt: skip
    code, page, summary = page_and_summary(capsys, "replayed.json")
    assert "- outputs: 3 of 3 cases answered by stand-in" in summary
    assert summary.rstrip().endswith("No document lost points, so page.html lists no leaf diffs; it holds the tables "
                                     "above in full.")  # fmt: skip


def test_report_against_a_run_puts_quality_beside_cost(project, capsys):
    scored_runs(project)
    cheaper = json.loads((project / "replayed.json").read_text(encoding="utf-8"))
    for source in cheaper["run"]["cases"].values():  # the same answers from a model that wrote half the tokens
        source["usage"]["output_tokens"] //= 2
        source["model_id"] = "<b>small</b> | model"
    (project / "cheaper.json").write_text(json.dumps(cheaper), encoding="utf-8")
    code, page, summary = page_and_summary(capsys, "cheaper.json", "--against", "replayed.json")
    assert code == 0
    assert "- quality beside cost, new against old: overall +0.000; input tokens +0%, output tokens -50%" in summary
    assert "- new outputs: 3 of 3 cases answered by &lt;b>small&lt;/b> \\| model" in summary  # safe to paste
    assert "<li>new outputs: 3 of 3 cases answered by &lt;b&gt;small&lt;/b&gt; | model</li>" in page
    code, page, summary = page_and_summary(capsys, "predicted.json", "--against", "replayed.json")
    assert "- old outputs: 3 of 3 cases answered by stand-in" in summary
    assert "- new outputs: 3 of 3 cases read from a predictions file" in summary
    assert "quality beside cost" not in summary  # a predictions file records no model use: no cost to set beside


def test_a_run_that_does_not_describe_itself_shows_nothing_new_and_says_why_there_are_no_leaf_diffs(project, capsys):
    scored_runs(project)
    StructuredOutputReport.from_file("predicted.json").to_file("strands.json")  # Strands' own format: no "run"
    code, page, summary = page_and_summary(capsys, "strands.json")
    assert code == 0 and "outputs:" not in summary and 'id="provenance"' not in page
    assert summary.rstrip().endswith(
        "page.html holds the tables above in full, but no leaf diffs: strands.json stores no leaf diffs: it was "
        "saved before `score --out` stored them, or by code of your own. Re-score it with `score --out` to store "
        "them, or pass --schema module:Class to compute them here; the report imports only a module you name."
    )
