"""Scoring at scale: rollups equal to one process on 1, 2 and Dask's workers; failures named; memory bounded."""

from __future__ import annotations

import json
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from helpers.formats.results import COUNTS, Counts, iter_results
from helpers.harness.reports import load_report
from helpers.harness.results import rows_from_report, sum_counts
from helpers.harness.schema import load_schema
from helpers.harness.scoring import score_outputs_sync
from helpers.scale import engine as engine_module
from helpers.scale import pool as pool_module
from helpers.scale.batches import Scorer
from helpers.scale.engine import Engine, EngineError, open_engine
from helpers.scale.progress import FinalLine
from helpers.scale.run import _fan_out, batches, score_at_scale
from tests.commands.streams import outcome
from walkthroughs.invoices import Invoice, reference_cases
from walkthroughs.simulated_large import SCHEMA, simulated_run


def mixed_run() -> list[tuple[Case, object]]:
    """Nested lists of many items, the hand-authored reference cases, an unreadable output, no ground truth."""
    pairs: list[tuple[Case, object]] = list(simulated_run(12, 6))
    for ref in reference_cases():
        pairs.append((Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth), ref.prediction))
    truth = pairs[0][0].expected_output
    pairs.append((Case(name="unreadable", input="x", expected_output=truth), {"unrelated": 1}))
    pairs.append((Case(name="not-json", input="x", expected_output=truth), "not json"))
    pairs.append((Case(name="no-truth", input="x", expected_output=None), truth))
    return pairs


@pytest.fixture(scope="module")
def run_pairs():
    return mixed_run()


@pytest.fixture(scope="module")
def single(run_pairs):
    cases = [case for case, _ in run_pairs]
    outputs = {case.name: output for case, output in run_pairs}
    return score_outputs_sync(cases, outputs, StructuredOutputSimilarity(Invoice))


@pytest.fixture(scope="module")
def local_cluster(network_guard):
    """One local Dask cluster of 2 worker processes for the module, started as `--cluster local` starts it.

    It talks to its workers on 127.0.0.1, so the network guard allows loopback while it runs.
    """
    pytest.importorskip("distributed")
    with network_guard.allowing_loopback(), open_engine(2, "local") as engine:
        yield engine


def assert_same_rollups(report, single):
    assert report.model_dump() == single.model_dump()
    parallel_metrics, single_metrics = report.metrics(), single.metrics()
    assert parallel_metrics.field_metrics.keys() == single_metrics.field_metrics.keys()
    for path, values in single_metrics.field_metrics.items():
        assert parallel_metrics.field_metrics[path] == values, path
    assert parallel_metrics.metrics == single_metrics.metrics
    assert report.per_case() == single.per_case()
    assert report.overall_score == single.overall_score
    assert report.test_passes == single.test_passes


def assert_same_summary(summary, single):
    assert summary.overall_score == single.overall_score
    assert summary.pass_rate == sum(single.test_passes) / len(single.test_passes)
    metrics = single.metrics()
    for path, values in metrics.field_metrics.items():
        assert summary.counts[path].model_dump() == {key: values.get(key, 0) for key in COUNTS}, path
    assert summary.overall.model_dump() == {key: metrics.metrics.get(key, 0) for key in COUNTS}
    assert summary.unreadable == ["unreadable", "not-json"]


@pytest.mark.parametrize("workers", [1, 2])
def test_local_workers_build_the_one_process_report(run_pairs, single, workers, tmp_path):
    run = score_at_scale(run_pairs, Scorer(SCHEMA), workers=workers, batch_size=4, results=tmp_path / "r.jsonl")
    assert_same_rollups(run.report, single)
    assert_same_summary(run.summary, single)
    assert list(iter_results(tmp_path / "r.jsonl")) == list(rows_from_report(single, Scorer(SCHEMA).spec()))


# Forking is used only on Linux; spawning everywhere.
START_METHODS = ["spawn", "fork"] if sys.platform.startswith("linux") else ["spawn"]


@pytest.mark.parametrize("method", START_METHODS)
def test_forked_and_spawned_workers_build_the_one_process_report(run_pairs, single, method, monkeypatch, tmp_path):
    """Whichever way the workers start, the report, the summary and the results file are one process's."""
    monkeypatch.setattr(pool_module, "start_method", lambda: method)
    started = []
    real = pool_module.WorkerPool.__init__

    def remember(self, *args, **kwargs):
        real(self, *args, **kwargs)
        started.append(self.start_method)

    monkeypatch.setattr(pool_module.WorkerPool, "__init__", remember)
    results = tmp_path / "r.jsonl"
    run = score_at_scale(run_pairs, Scorer(SCHEMA), workers=2, batch_size=4, fan_out="always", results=results)
    assert started == [method]
    assert_same_rollups(run.report, single)
    assert_same_summary(run.summary, single)
    assert list(iter_results(results)) == list(rows_from_report(single, Scorer(SCHEMA).spec()))


def test_workers_fork_only_while_the_driver_runs_one_thread():
    """A fork of a threaded process can inherit a held lock; with a second thread running, workers are spawned."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert pool_module.start_method() == "spawn"
    finally:
        stop.set()
        other.join()
    alone = sys.platform.startswith("linux") and threading.active_count() == 1
    assert pool_module.start_method() == ("fork" if alone else "spawn")


def test_a_run_without_a_results_file_skips_failures_by_kind_but_keeps_every_count(run_pairs, single):
    """The workers' rows then carry no failures (the costly re-diff), and the summary's counts are the same."""
    engine = Engine(engine_module.InlineExecutor(), 1, "1 process")
    merged = []
    _fan_out(engine, batches(run_pairs, Scorer(SCHEMA), 4), Scorer(SCHEMA), True, merged.append, 60.0, failures=False)
    rows = [row for result in merged for row in result.rows]
    assert all(row.failures == {} for row in rows)
    with_failures = list(rows_from_report(single, Scorer(SCHEMA).spec()))
    assert any(row.failures for row in with_failures)
    strip = {"failures"}
    assert [row.model_dump(exclude=strip) for row in rows] == [row.model_dump(exclude=strip) for row in with_failures]


def test_local_dask_cluster_builds_the_one_process_report(run_pairs, single, local_cluster):
    run = score_at_scale(run_pairs, Scorer(SCHEMA), engine=local_cluster, batch_size=3)
    assert run.engine == "a local Dask cluster of 2 workers"
    assert_same_rollups(run.report, single)
    assert_same_summary(run.summary, single)


def test_compact_run_keeps_no_report_and_streams_the_same_rollups(run_pairs, single, local_cluster, tmp_path):
    run = score_at_scale(
        iter(run_pairs), Scorer(SCHEMA), engine=local_cluster, batch_size=5, keep_report=False, results=tmp_path / "r"
    )
    assert run.report is None
    assert_same_summary(run.summary, single)
    assert [row.name for row in iter_results(tmp_path / "r")] == [case.name for case, _ in run_pairs]


def test_a_running_scheduler_is_reached_by_its_address(run_pairs, local_cluster):
    pairs = run_pairs[-6:]
    cases = [case for case, _ in pairs]
    alone = score_outputs_sync(cases, dict((c.name, o) for c, o in pairs), StructuredOutputSimilarity(Invoice))
    run = score_at_scale(pairs, Scorer(SCHEMA), cluster=local_cluster.address, batch_size=2)
    assert run.engine == f"the Dask cluster at {local_cluster.address} (2 workers)"
    assert_same_rollups(run.report, alone)


FRAGILE = """
from pydantic import BaseModel, field_validator

class Part(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def no_question_marks(cls, value):
        if "?" in value:
            raise ValueError("illegible code")
        return value

class Order(BaseModel):
    order_id: str
    parts: list[Part]
"""


@pytest.mark.parametrize("where", ["this process", "dask"])
def test_a_batch_that_fails_in_its_worker_is_named_case_by_case(tmp_path, monkeypatch, where, request):
    (tmp_path / "fragile_schema.py").write_text(textwrap.dedent(FRAGILE))
    monkeypatch.delitem(sys.modules, "fragile_schema", raising=False)
    order = load_schema("fragile_schema:Order", directory=tmp_path)
    part = order.model_fields["parts"].annotation.__args__[0]
    good = order(order_id="A", parts=[part(code="X1")])
    # Built without validation, so it cannot be rebuilt from its JSON in the worker.
    broken = order.model_construct(order_id="B", parts=[part.model_construct(code="X?")])
    pairs = [(Case(name=f"o{i}", input="", expected_output=good), good) for i in range(4)]
    pairs[2] = (Case(name="o2", input="", expected_output=broken), good)
    lines = FinalLine()
    engine = request.getfixturevalue("local_cluster") if where == "dask" else None
    scorer = Scorer("fragile_schema:Order", directory=str(tmp_path))
    run = score_at_scale(pairs, scorer, engine=engine, batch_size=2, progress=lines)
    assert run.summary.failed == ["o2", "o3"]
    assert run.report.scores == [1.0, 1.0, 0.0, 0.0]
    assert run.report.test_passes == [True, True, False, False]
    reason = run.summary.reasons["o2"]
    assert "batch 1 (o2 .. o3, 2 cases) failed in its worker: ValidationError" in reason
    assert "Traceback" not in reason
    assert [case["name"] for case in run.report.cases] == ["o0", "o1", "o2", "o3"]
    assert lines.line() == f"scored 4 documents on {run.engine}; 2 could not be scored"


def test_batches_in_memory_are_bounded_by_the_window(monkeypatch):
    """However long the run, at most two batches per slot are read ahead of the merge."""
    import helpers.scale.run as run_module

    pulled, merged, ahead = [], [], []

    def work():
        for index in range(40):
            pulled.append(index)
            ahead.append(len(pulled) - len(merged))
            yield type("B", (), {"index": index, "names": [str(index)]})()

    monkeypatch.setattr(run_module, "score_batch", lambda scorer, batch, keep, failures: batch)
    with ThreadPoolExecutor(2) as executor:
        engine = Engine(executor, 2, "2 threads")
        _fan_out(engine, work(), None, False, lambda result: merged.append(result.index), 60.0)
    assert merged == list(range(40))
    assert max(ahead) <= 4


def test_batches_split_in_order_and_refuse_a_bad_size():
    pairs = list(simulated_run(5, 1))
    made = list(batches(pairs, Scorer(SCHEMA), 2))
    assert [batch.names for batch in made] == [[f"sim-00000{i}" for i in pair] for pair in ((0, 1), (2, 3), (4,))]
    with pytest.raises(ValueError, match="batch size 0"):
        list(batches(pairs, Scorer(SCHEMA), 0))


def test_missing_dask_names_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(EngineError, match=r"--cluster needs Dask.*pip install '\.\[cluster\]'"):
        with open_engine(2, "local"):
            pass


@pytest.mark.local_servers
def test_unreachable_scheduler_says_how_to_start_one(monkeypatch):
    pytest.importorskip("distributed")
    monkeypatch.setattr(engine_module, "CONNECT_SECONDS", 1.0)
    with pytest.raises(EngineError, match=r"--cluster tcp://127.0.0.1:9: no Dask scheduler answered.*dask scheduler"):
        with open_engine(2, "tcp://127.0.0.1:9"):
            pass


# --- the score command's --workers, --cluster and --results -----------------------------------

ORDER_SCHEMA = """
from pydantic import BaseModel

class Line(BaseModel):
    sku: str
    quantity: int | None = None

class PurchaseOrder(BaseModel):
    po_number: str
    buyer: str
    lines: list[Line]
"""


@pytest.fixture(scope="module")
def order_project(tmp_path_factory):
    """A user's folder outside the repository: a schema module, a case file and a predictions file."""
    folder = tmp_path_factory.mktemp("orders")
    (folder / "order_schema.py").write_text(textwrap.dedent(ORDER_SCHEMA))
    cases, predictions = [], []
    for index in range(30):
        lines = [{"sku": f"S{index}-{line}", "quantity": line + 1} for line in range(index % 5 + 1)]
        truth = {"po_number": f"PO-{index:03d}", "buyer": "Northwind", "lines": lines}
        guess = {**truth, "lines": lines[:-1] if index % 4 == 0 else lines[::-1]}
        if index % 7 == 0:
            guess["buyer"] = "Southwind"
        cases.append({"name": f"po-{index:03d}", "input": f"order {index}", "expected_output": truth})
        predictions.append({"name": f"po-{index:03d}", "output": guess})
    (folder / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    (folder / "predictions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in predictions))
    return folder


def score_command(folder, *extra):
    from helpers.commands.score import main

    argv = ["--schema", "order_schema:PurchaseOrder", "--cases", "cases.jsonl", "--predictions", "predictions.jsonl"]
    return outcome(main, [*argv, *extra])


@pytest.mark.local_servers
def test_score_with_workers_and_a_local_cluster_writes_the_one_process_report(order_project, monkeypatch):
    monkeypatch.chdir(order_project)
    monkeypatch.delitem(sys.modules, "order_schema", raising=False)
    assert score_command(order_project, "--out", "one.json")[0] == 0
    code, printed = score_command(
        order_project, "--out", "two.json", "--workers", "2", "--results", "two.jsonl", "--fan-out", "always"
    )
    assert code == 0, printed
    assert "scored 30 documents on 2 local processes; none failed" in printed
    assert "Wrote 30 document row(s) to two.jsonl." in printed
    code, printed = score_command(
        order_project, "--out", "dask.json", "--cluster", "local", "--workers", "2", "--fan-out", "always"
    )
    assert code == 0, printed
    assert "on a local Dask cluster of 2 workers" in printed
    one = (order_project / "one.json").read_text()
    assert (order_project / "two.json").read_text() == one
    assert (order_project / "dask.json").read_text() == one
    report = load_report(order_project / "one.json")
    fields = report.metrics().field_metrics
    expected = {path: Counts(**{key: values.get(key, 0) for key in COUNTS}) for path, values in fields.items()}
    assert sum_counts(iter_results(order_project / "two.jsonl")) == dict(sorted(expected.items()))


def test_score_to_the_compact_file_only_prints_the_same_rollups(order_project, monkeypatch):
    monkeypatch.chdir(order_project)
    monkeypatch.delitem(sys.modules, "order_schema", raising=False)
    code, full = score_command(order_project, "--out", "full.json")
    code, compact = score_command(order_project, "--results", "only.jsonl", "--workers", "1")
    assert code == 0, compact
    assert not (order_project / "only.json").exists()
    field_table = full[full.index("Per field:") : full.index("Per case:")].strip()
    assert field_table in compact
    assert full.strip().splitlines()[-2] in compact  # "Overall score ...; N of M case(s) pass."


@pytest.mark.parametrize(
    "extra, message",
    [
        ((), "Name where the run goes: --out RUN.json"),
        (("--out", "x.json", "--workers", "0"), "--workers 0: give a whole number of processes, at least 1."),
        (("--out", "x.json", "--batch-size", "0"), "--batch-size 0: give a whole number"),
        (("--results", "cases.jsonl"), "--results cases.jsonl is the same file as --cases cases.jsonl"),
    ],
)
def test_bad_scale_options_exit_2_with_the_fix(order_project, monkeypatch, extra, message):
    monkeypatch.chdir(order_project)
    code, printed = score_command(order_project, *extra)
    assert code == 2
    assert message in printed
    assert "Nothing was written." in printed


def test_cluster_without_dask_exits_1_naming_the_extra(order_project, monkeypatch):
    monkeypatch.chdir(order_project)
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, printed = score_command(order_project, "--out", "x.json", "--cluster", "local")
    assert code == 1
    assert "pip install '.[cluster]'" in printed
    assert not (order_project / "x.json").exists()
