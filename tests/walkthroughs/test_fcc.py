"""The FCC schema, prompt, selection, committed data and the replayed run, all offline."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import time
import typing
from pathlib import Path

import pytest
from strands.tools.structured_output.structured_output_tool import StructuredOutputTool
from strands_evals import Case, eval_task
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.exchanges.cassettes import CassetteError, Cassettes
from fieldeval.exchanges.fixtures import Exchange, FixtureError
from fieldeval.exchanges.replay import PromptMismatchError
from fieldeval.harness.cases import load_cases
from fieldeval.harness.scoring import score_task
from walkthroughs.fcc.cassettes import FCC_EXCHANGES_DIR, exchange_path, load_document_exchange
from walkthroughs.fcc.datasets_server import SERVICE, DatasetsServerClient, DatasetsServerError, SnapshotError
from walkthroughs.fcc.documents import (
    CASES_PATH,
    DOCUMENT_COUNT,
    MAX_LINE_ITEMS,
    SNAPSHOT_PATH,
    LabelError,
    fetch_live,
    from_snapshot,
    read_label,
    schema_differences,
    select_documents,
)
from walkthroughs.fcc.run import exchanges_summary
from walkthroughs.fcc.schema import MAX_TEXT_CHARS, PROMPT, FccInvoice, FccLineItem, build_prompt
from walkthroughs.fcc.task import extract
from walkthroughs.fcc.tuned import FccInvoiceTuned, FccLineItemTuned, date_comparison

# The notebook's general path: the case file, and the cassette folder read through `Cassettes`.
RECORD = "python -m fieldeval.commands.record ... --cassettes data/exchanges/fcc"


def fcc_cassettes(names, directory=FCC_EXCHANGES_DIR) -> Cassettes:
    return Cassettes(directory, names, tool_name="FccInvoice", record_command=RECORD)


def committed_cases():
    return load_cases(CASES_PATH, FccInvoice)


LABEL = {
    "Agency": "A",
    "Advertiser": "B",
    "GrossTotal": 100.0,
    "LineItems": [{"LineItemDescription": "NEWS", "LineItemRate": 100.0}],
}


def entry(row_idx: int, label, items: int = 1, text: str = "INVOICE") -> dict:
    if isinstance(label, dict):
        label = dict(label, LineItems=[{"LineItemRate": 1.0}] * items)
    return {"row_idx": row_idx, "row": {"id": f"doc-{row_idx}", "text": text, "json_response": label}}


# --- schema and prompt ----------------------------------------------------------------------


def test_every_nullable_field_is_optional_and_only_three_are_required():
    for model in (FccInvoice, FccLineItem):
        for name, info in model.model_fields.items():
            if name in ("Agency", "Advertiser", "LineItems"):
                assert info.is_required()
            else:
                assert type(None) in typing.get_args(info.annotation), name
                assert info.default is None
    spec = StructuredOutputTool(FccInvoice).tool_spec["inputSchema"]["json"]
    assert spec["required"] == ["Agency", "Advertiser", "LineItems"]


def test_tuned_model_tool_spec_has_the_plain_shape_and_no_comparison_configuration():
    plain = StructuredOutputTool(FccInvoice).tool_spec["inputSchema"]["json"]
    tuned = StructuredOutputTool(FccInvoiceTuned).tool_spec["inputSchema"]["json"]
    assert tuned["required"] == ["Agency", "Advertiser", "LineItems"]
    text = json.dumps(tuned)
    for word in ("x-comparison", "x-aws-stickler", "threshold", "weight", "Comparator"):
        assert word not in text
    assert {k: v.get("type") for k, v in tuned["properties"].items()} == {
        k: v.get("type") for k, v in plain["properties"].items()
    }
    line = "LineItems"
    assert tuned["properties"][line]["items"]["properties"] == plain["properties"][line]["items"]["properties"]


def test_the_evaluator_default_overrides_the_threshold_the_class_declares():
    assert FccInvoiceTuned.match_threshold == 0.8
    assert StructuredOutputSimilarity(FccInvoiceTuned).match_threshold == 0.7
    assert FccLineItemTuned.match_threshold == 0.75  # quoted by the notebook's section 7


def test_prompt_states_the_three_rules_and_text_is_cut_at_the_limit():
    assert "null" in PROMPT and "as printed" in PROMPT and "every line-item row" in PROMPT
    prompt = build_prompt("7" * (MAX_TEXT_CHARS + 500))
    assert prompt.count("7") == MAX_TEXT_CHARS
    long = select_documents([entry(0, LABEL, text="7" * (MAX_TEXT_CHARS + 1))]).documents[0]
    short = select_documents([entry(0, LABEL, text="7" * MAX_TEXT_CHARS)]).documents[0]
    assert (long.truncated, short.truncated) == (True, False)


def test_the_selection_limits_the_notebook_quotes():
    assert (DOCUMENT_COUNT, MAX_LINE_ITEMS, MAX_TEXT_CHARS) == (5, 12, 40_000)


def test_the_dataset_json_schema_is_compared_with_ours():
    assert schema_differences(json.dumps(FccInvoice.model_json_schema())) == ()
    theirs = FccInvoice.model_json_schema()
    theirs["properties"]["StationCallSign"] = {"type": "string"}
    del theirs["$defs"]["FccLineItem"]["properties"]["LineItemDays"]
    assert schema_differences(theirs) == (
        "StationCallSign only in the dataset",
        "LineItems.LineItemDays not in the dataset",
    )
    assert schema_differences(None) == ("json_schema missing or unreadable",)
    assert schema_differences("{oops") == ("json_schema missing or unreadable",)


# --- labels and selection -------------------------------------------------------------------


def test_label_is_read_from_an_object_or_a_json_string():
    assert read_label(LABEL) == read_label(json.dumps(LABEL))


@pytest.mark.parametrize(
    ("label", "fragment"),
    [
        (None, "label missing"),
        ("", "label missing"),
        ("{not json", "not JSON"),
        ({"Advertiser": "B", "LineItems": []}, "field Agency: Field required"),
        (dict(LABEL, GrossTotal="see attached"), "field GrossTotal"),
    ],
)
def test_a_bad_label_is_refused_with_the_field(label, fragment):
    with pytest.raises(LabelError, match=fragment):
        read_label(label)


def test_selection_takes_the_first_five_small_documents_and_reports_skips_with_ids():
    rows = [
        entry(0, LABEL),
        entry(1, LABEL, items=13),
        entry(2, None),
        entry(3, dict(LABEL, Agency=None)),
        entry(4, LABEL, text="  "),
        *[entry(i, LABEL, items=12) for i in range(5, 12)],
    ]
    selection = select_documents(rows)
    assert [d.id for d in selection.documents] == ["doc-0", "doc-5", "doc-6", "doc-7", "doc-8"]
    assert [(s.id, s.row_idx) for s in selection.skipped] == [("doc-1", 1), ("doc-2", 2), ("doc-3", 3), ("doc-4", 4)]
    assert "13 line items" in selection.skipped[0].reason
    assert "label missing" in selection.skipped[1].reason
    assert "field Agency" in selection.skipped[2].reason


def test_selection_stops_reading_once_it_has_five():
    read = []

    def rows():
        for i in range(100):
            read.append(i)
            yield entry(i, LABEL)

    select_documents(rows())
    assert len(read) == 5


# --- the committed, hand-authored data ------------------------------------------------------


def test_committed_snapshot_selects_five_documents_and_shows_three_skips():
    source = from_snapshot()
    assert [d.schema_differences for d in source.documents] == [()] * 5
    assert source.provenance["hand_authored"] is True
    assert "hand" in source.provenance["note"].lower()
    assert [d.id for d in source.documents] == [f"hand-authored-0{n}" for n in (1, 3, 5, 7, 8)]
    assert [d.line_items for d in source.documents] == [4, 3, 6, 2, 5]
    reasons = {s.id: s.reason for s in source.selection.skipped}
    assert "14 line items" in reasons["hand-authored-02"]
    assert "label missing" in reasons["hand-authored-04"]
    assert "does not validate: field GrossTotal" in reasons["hand-authored-06"]


def test_committed_documents_add_up():
    for document in from_snapshot().documents:
        label = document.label
        commission = label.AgencyCommission or 0.0
        assert round(label.GrossTotal - commission, 2) == label.NetAmountDue
        assert f"{label.GrossTotal:,.2f}" in document.text


def _differences(truth: dict, predicted: dict) -> set[str]:
    """Mistake kinds in one prediction: wrong, missing or invented, top level and in line items."""
    kinds = set()
    for key, value in truth.items():
        if key == "LineItems":
            continue
        got = predicted.get(key)
        if value is not None and got is None:
            kinds.add("missing")
        elif value is None and got is not None:
            kinds.add("invented")
        elif value != got:
            kinds.add("wrong")
    by_description = {item["LineItemDescription"]: item for item in truth["LineItems"]}
    predicted_items = {item["LineItemDescription"]: item for item in predicted["LineItems"]}
    if set(by_description) - set(predicted_items):
        kinds.add("line item missing")
    if set(predicted_items) - set(by_description):
        kinds.add("line item invented")
    for name in set(by_description) & set(predicted_items):
        inner = _differences({**by_description[name], "LineItems": []}, {**predicted_items[name], "LineItems": []})
        kinds |= {f"{kind} in a line item" for kind in inner}
    return kinds


def test_committed_exchanges_are_hand_authored_and_hold_every_kind_of_mistake():
    found = set()
    for document in from_snapshot().documents:
        exchange = load_document_exchange(document.id)
        assert exchange.hand_authored and exchange.provenance["document_id"] == document.id
        assert "hand-authored" in exchange.provenance["note"].lower()
        assert len(exchange.tool_uses()[0]["inputChunks"]) > 5
        found |= _differences(document.label.model_dump(), exchange.tool_uses()[0]["input"])
    assert found >= {
        "wrong",
        "missing",
        "invented",
        "wrong in a line item",
        "missing in a line item",
        "invented in a line item",
        "line item missing",
        "line item invented",
    }


# --- failure modes --------------------------------------------------------------------------


def test_a_missing_snapshot_names_the_record_command(tmp_path):
    with pytest.raises(SnapshotError, match="snapshot.json: no snapshot.*make record-fcc"):
        from_snapshot(tmp_path / "snapshot.json")


def test_replay_with_no_recorded_exchange_names_the_record_command(tmp_path):
    with pytest.raises(FixtureError, match="make record-fcc"):
        load_document_exchange("hand-authored-01", tmp_path)


def test_a_recorded_exchange_for_the_wrong_document_is_refused(tmp_path):
    shutil.copy(exchange_path("hand-authored-01"), exchange_path("hand-authored-03", tmp_path))
    with pytest.raises(FixtureError, match="'hand-authored-01', but this replay is for document 'hand-authored-03'"):
        load_document_exchange("hand-authored-03", tmp_path)


@pytest.mark.local_servers
def test_the_download_with_no_network_ends_fast_naming_the_service():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = DatasetsServerClient(f"http://127.0.0.1:{port}", timeout=0.2, retries=1, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(DatasetsServerError, match=SERVICE):
        fetch_live(client)
    assert time.monotonic() - started < 10.0  # bounded: a refused connection ends, it does not hang


def test_the_case_file_and_cassettes_load_offline_and_say_hand_authored():
    cases = committed_cases()
    assert [case.metadata["hand_authored"] for case in cases] == [True] * 5
    exchanges = fcc_cassettes([case.name for case in cases]).load_all()
    assert exchanges_summary(exchanges.values()) == (
        "5 hand-authored exchanges, replayed (data/exchanges/fcc/); they measure no model"
    )


def test_a_missing_cassette_fails_before_any_agent_runs_naming_the_record_command(tmp_path):
    with pytest.raises(CassetteError, match="hand-authored-01.json: no cassette.*python -m fieldeval.commands.record"):
        fcc_cassettes([case.name for case in committed_cases()], tmp_path).load_all()


def test_provenance_line_for_recorded_exchanges():
    recorded = [
        Exchange("a", {"hand_authored": False, "model_id": "m", "recorded": f"2026-0{n}-01T00:00:00+00:00"}, [])
        for n in (3, 1)
    ]
    assert exchanges_summary(recorded) == (
        "2 exchanges recorded from m (2026-01-01 to 2026-03-01), replayed (data/exchanges/fcc/)"
    )
    local = [Exchange("b", {**recorded[0].provenance, "endpoint": "127.0.0.1:8765", "stand_in": "answers"}, [])]
    assert exchanges_summary(local).endswith(
        "; 1 answered by a stand-in server, not a model; "
        "recorded through 127.0.0.1:8765, a local or overridden endpoint"
    )


# --- the replayed run: the notebook's key numbers -------------------------------------------


def run_experiment(evaluator, task, cases):
    return asyncio.run(score_task(cases, task, evaluator))


@pytest.fixture(scope="module")
def replayed(network_guard):
    """The notebook's run in replay mode, once for the tests that read it, with every connection refused."""
    with network_guard.refusing_all():
        return _replay_the_notebook_run()


def _replay_the_notebook_run():
    cases = committed_cases()
    cassettes = fcc_cassettes([case.name for case in cases])
    exchanges = cassettes.load_all()
    extractions = {}

    @eval_task()
    def replayed_extract(case):
        model = cassettes.replay(case.name, exchanges[case.name])
        extractions[case.name] = extract(case, model)
        model.check_finished()
        return {"output": extractions[case.name]}

    report = run_experiment(StructuredOutputSimilarity(FccInvoice), replayed_extract, cases)
    tuned = StructuredOutputSimilarity(FccInvoiceTuned, match_threshold=FccInvoiceTuned.match_threshold)
    again = eval_task()(lambda case: {"output": extractions[case.name]})
    tuned_report = run_experiment(tuned, again, cases)
    return report, tuned_report, extractions


def test_replayed_run_scores_each_document(replayed):
    report, _, extractions = replayed
    assert [round(s, 3) for s in report.scores] == [0.993, 0.714, 0.967, 0.81, 0.708]
    assert round(report.overall_score, 3) == 0.838
    assert all(report.test_passes)
    assert all(isinstance(value, FccInvoice) for value in extractions.values())


def test_the_worst_field_and_nested_counts(replayed):
    metrics = replayed[0].metrics().field_metrics
    worst = min(metrics, key=lambda path: (metrics[path]["cm_f1"], path))
    assert worst == "PaymentTerms"
    assert (metrics[worst]["tp"], metrics[worst]["fn"], metrics[worst]["fd"]) == (3, 1, 1)
    counted = {path: sum(row[key] for key in ("tp", "fn", "fa", "fd", "tn")) for path, row in metrics.items()}
    assert {counted[path] for path in counted if "." not in path and path != "LineItems"} == {5}
    assert (counted["LineItems"], counted["LineItems.LineItemRate"], counted["LineItems.LineItemDescription"]) == (
        21,
        19,
        19,
    )


def test_tuned_scoring_of_the_same_extractions(replayed):
    report, tuned_report, _ = replayed
    assert round(tuned_report.overall_score, 3) == 0.868
    assert sum(tuned_report.test_passes) == 4
    start, end = "LineItems.LineItemStartDate", "LineItems.LineItemEndDate"
    inferred, tuned = report.metrics().field_metrics, tuned_report.metrics().field_metrics
    assert (inferred[start]["fd"], tuned[start]["fd"]) == (1, 0)  # 2016-10-05 is the printed 10/05/16
    assert (inferred[end]["fd"], tuned[end]["fd"]) == (0, 1)  # 10/08/16 is not 10/07/16


def test_a_failing_case_is_scored_as_a_failure_and_the_run_goes_on():
    first = committed_cases()[0]
    unrecorded = Case(name="not-recorded", input=first.input, expected_output=first.expected_output)
    cassettes = fcc_cassettes([first.name, unrecorded.name])

    @eval_task()
    def replayed_extract(case):
        return {"output": extract(case, cassettes.replay(case.name))}

    report = run_experiment(StructuredOutputSimilarity(FccInvoice), replayed_extract, [first, unrecorded])
    assert report.test_passes == [True, False]
    assert report.scores[1] == 0
    assert "python -m fieldeval.commands.record" in report.reasons[1] and "--only not-recorded" in report.reasons[1]


def test_date_table():
    rows = {r["prediction"]: r for r in date_comparison("10/05/16", ["2016-10-05", "10/5/16", "10/06/16"])}
    assert [rows[p]["levenshtein_match"] for p in rows] == [False, True, True]
    assert [rows[p]["date_match"] for p in rows] == [True, True, False]
    assert rows["2016-10-05"]["levenshtein"] == 0.1


def test_exchanges_live_in_the_fcc_folder():
    assert exchange_path("a/b c") == FCC_EXCHANGES_DIR / "a_b_c.json"
    assert SNAPSHOT_PATH.name == "snapshot.json"


def test_the_two_date_mistakes_the_notebook_describes():
    changed = []
    for document in from_snapshot().documents:
        predicted = load_document_exchange(document.id).tool_uses()[0]["input"]["LineItems"]
        by_description = {item["LineItemDescription"]: item for item in predicted}
        for item in document.label.LineItems:
            got = by_description.get(item.LineItemDescription, {})
            for key in ("LineItemStartDate", "LineItemEndDate"):
                if key in got and got[key] != getattr(item, key):
                    changed.append((document.id, key, getattr(item, key), got[key]))
    assert changed == [
        ("hand-authored-01", "LineItemStartDate", "10/05/16", "2016-10-05"),  # reformatted, same day
        ("hand-authored-08", "LineItemEndDate", "10/07/16", "10/08/16"),  # one day off
    ]


def test_the_notebook_shows_the_task_the_recorder_runs():
    """The notebook writes `extract` in a cell, so the Agent call is visible; it must be this one."""
    import ast
    import inspect

    import nbformat

    from fieldeval.files import REPO_ROOT
    from walkthroughs.fcc import task

    notebook = nbformat.read(REPO_ROOT / "examples" / "notebooks" / "Strands_Evals_FCC_Live_Agent.ipynb", 4)
    shown = [
        node
        for cell in notebook.cells
        if cell.cell_type == "code" and "def extract(" in cell.source
        for node in ast.parse(cell.source.replace("await ", "")).body
        if isinstance(node, ast.FunctionDef) and node.name == "extract"
    ]
    recorded = ast.parse(inspect.getsource(task.extract)).body[0]
    assert len(shown) == 1
    assert [ast.dump(node) for node in shown[0].body] == [ast.dump(node) for node in recorded.body]
    assert [arg.arg for arg in shown[0].args.args] == [arg.arg for arg in recorded.args.args] == ["case", "model"]


# --- the FCC set as an instance of the general path ---------------------------------------------


def _copy_snapshot(tmp_path, edit) -> Path:
    """The committed snapshot with `edit(page)` applied to its first page, written to `tmp_path`."""
    document = json.loads(SNAPSHOT_PATH.read_text(encoding="utf-8"))
    edit(document["pages"][0])
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_cassette_replayed_for_another_prompt_is_refused():
    case = next(case for case in committed_cases() if case.name == "hand-authored-03")
    retyped = Case(name=case.name, input=case.input.replace("KVOR-TV", "KVOR-TX"), expected_output=case.expected_output)
    with pytest.raises(Exception) as raised:
        extract(retyped, fcc_cassettes([case.name]).replay(case.name))
    error = raised.value
    while error is not None and not isinstance(error, PromptMismatchError):
        error = error.__cause__ or error.__context__
    assert error is not None and "hand-authored-03.json: recorded for another prompt" in str(error)


def test_an_exchange_bound_to_no_prompt_is_refused(tmp_path):
    shutil.copytree(FCC_EXCHANGES_DIR, tmp_path / "fcc")
    path = exchange_path("hand-authored-05", tmp_path / "fcc")
    data = json.loads(path.read_text(encoding="utf-8"))
    del data["provenance"]["prompt_sha256"]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(
        CassetteError, match="'provenance.prompt_sha256' is missing.*python -m fieldeval.commands.record"
    ):
        fcc_cassettes([case.name for case in committed_cases()], tmp_path / "fcc").load_all()


def test_a_snapshot_that_selects_fewer_than_five_documents_is_refused(tmp_path):
    def shorten(page):
        page["rows"] = page["rows"][:4]
        page["num_rows_total"] = 4

    with pytest.raises(SnapshotError, match="selects 2 of the 5 documents a run needs.*make record-fcc"):
        from_snapshot(_copy_snapshot(tmp_path, shorten))


def test_the_general_score_command_replays_the_fcc_cassettes_to_the_notebook_numbers(tmp_path):
    import io

    from fieldeval.commands import score
    from walkthroughs.fcc.documents import CASES_PATH

    out = io.StringIO()
    argv = ["--schema", "walkthroughs.fcc.schema:FccInvoice", "--cases", str(CASES_PATH)]
    argv += ["--task", "walkthroughs.fcc.task:extract", "--cassettes", str(FCC_EXCHANGES_DIR)]
    code = score.main([*argv, "--out", str(tmp_path / "run.json")], out=out)
    assert code == score.EXIT_OK, out.getvalue()
    assert "Overall score 0.838; 5 of 5 case(s) pass." in out.getvalue()


def test_two_case_names_that_share_a_cassette_file_are_refused_before_anything_is_read(tmp_path):
    with pytest.raises(CassetteError, match="'doc/1' and 'doc_1' would share the cassette file doc_1.json"):
        fcc_cassettes(["doc/1", "doc_1"], tmp_path)


def test_the_notebooks_live_bedrock_model_is_the_one_the_recorder_builds(no_aws_credentials, monkeypatch):
    """The task cell builds `BedrockModel(...)` in the open; live, it must equal `live_model()` (offline to build).

    But for one setting: the recorder's client sends each call once (its back-off is the only retry
    layer), while the notebook's agent runs with no recorder and keeps botocore's few retries.
    """
    import nbformat

    from fieldeval.files import REPO_ROOT
    from fieldeval.services.bedrock import live_model

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")  # placeholders: building a client calls nothing
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "placeholder")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    notebook = nbformat.read(REPO_ROOT / "examples" / "notebooks" / "Strands_Evals_FCC_Live_Agent.ipynb", 4)
    [cell] = [cell for cell in notebook.cells if cell.cell_type == "code" and "BedrockModel(" in cell.source]
    namespace = {"mode": "live", "FccInvoice": FccInvoice, "print": lambda *args: None}
    exec(compile(cell.source, "task cell", "exec"), namespace)
    shown, recorder = namespace["bedrock"], live_model()
    assert shown.get_config() == recorder.get_config()
    assert shown.client.meta.region_name == recorder.client.meta.region_name == "us-west-2"
    for setting in ("connect_timeout", "read_timeout"):
        assert getattr(shown.client.meta.config, setting) == getattr(recorder.client.meta.config, setting)
    assert shown.client.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert recorder.client.meta.config.retries == {"mode": "standard", "total_max_attempts": 1}
