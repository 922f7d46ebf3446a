"""Scoring at scale on local processes: rollups equal to one process on 1 and 2 workers; failures named; memory bounded.

The same on Dask's workers is `test_scale_with_dask.py`: a Dask client leaves a thread behind in
its process, after which local workers start from the forkserver, not forked from this process
(`fieldeval.scale.pool.start_method`). That file is collected after this one and
`test_scale_hardening.py`, so here workers fork, as a command's do, except where a test asks for
another start.
"""

from __future__ import annotations

import json
import multiprocessing
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from fieldeval.formats.results import COUNTS, Counts, iter_results
from fieldeval.harness.reports import load_report
from fieldeval.harness.results import rows_from_report, sum_counts
from fieldeval.scale import engine as engine_module
from fieldeval.scale import pool as pool_module
from fieldeval.scale.batches import Scorer
from fieldeval.scale.engine import Engine, EngineError, open_engine
from fieldeval.scale.run import _fan_out, batches, score_at_scale
from tests.scale.same_report import assert_same_rollups, assert_same_summary, score_command
from walkthroughs.simulated_large import SCHEMA, simulated_run


@pytest.mark.parametrize("workers", [1, 2])
def test_local_workers_build_the_one_process_report(run_pairs, single, workers, tmp_path):
    run = score_at_scale(run_pairs, Scorer(SCHEMA), workers=workers, batch_size=4, results=tmp_path / "r.jsonl")
    assert_same_rollups(run.report, single)
    assert_same_summary(run.summary, single)
    assert list(iter_results(tmp_path / "r.jsonl")) == list(rows_from_report(single, Scorer(SCHEMA).spec()))


# Forking this process is used only on Linux; the forkserver where the platform has one; spawning anywhere.
START_METHODS = ["spawn"] + ["forkserver"] * ("forkserver" in multiprocessing.get_all_start_methods())
START_METHODS += ["fork"] * sys.platform.startswith("linux")


@pytest.mark.parametrize("method", START_METHODS)
def test_workers_build_the_one_process_report_however_they_start(run_pairs, single, method, monkeypatch, tmp_path):
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
    """A fork of a threaded process can inherit a held lock; with a second thread running, it is not forked."""
    elsewhere = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert pool_module.start_method() == elsewhere
    finally:
        stop.set()
        other.join()
    alone = sys.platform.startswith("linux") and threading.active_count() == 1
    assert pool_module.start_method() == ("fork" if alone else elsewhere)


def test_a_run_without_a_results_file_skips_failures_by_kind_but_keeps_every_count(run_pairs, single):
    """The workers' rows then carry no failures (the costly re-diff) and no counts; each batch's totals sum to them."""
    engine = Engine(engine_module.InlineExecutor(), 1, "1 process")
    merged = []
    _fan_out(engine, batches(run_pairs, Scorer(SCHEMA), 4), Scorer(SCHEMA), True, merged.append, 60.0, failures=False)
    rows = [row for result in merged for row in result.rows]
    assert all(row.failures == {} and row.counts == {} for row in rows)
    with_failures = list(rows_from_report(single, Scorer(SCHEMA).spec()))
    assert any(row.failures for row in with_failures)
    strip = {"failures", "counts", "overall"}
    assert [row.model_dump(exclude=strip) for row in rows] == [row.model_dump(exclude=strip) for row in with_failures]
    overall, counts = Counts(), {}
    for result in merged:
        overall = overall + result.totals[0]
        for path, value in result.totals[1].items():
            counts[path] = counts[path] + value if path in counts else value
    assert dict(sorted(counts.items())) == sum_counts(with_failures)
    assert overall == sum((row.overall for row in with_failures), Counts())


def test_batches_find_leaf_diffs_only_when_the_scorer_asks_and_as_one_process_does(run_pairs, single):
    """`score --out` asks (`Scorer.leaf_diffs`); a notebook's `Scorer(SCHEMA)` pays nothing for them."""
    from fieldeval.attribution.kinds import report_diffs
    from fieldeval.attribution.stored import stored_document

    engine = Engine(engine_module.InlineExecutor(), 1, "1 process")
    for asks in (False, True):
        scorer, merged = Scorer(SCHEMA, leaf_diffs=asks), []
        _fan_out(engine, batches(run_pairs, scorer, 4), scorer, True, merged.append, 60.0, failures=False)
        found = [diff for result in merged for diff in result.leaf_diffs or ()]
        assert all((result.leaf_diffs is not None) == asks for result in merged)
        if asks:
            assert found == [stored_document(diff) for diff in report_diffs(single, Scorer(SCHEMA).spec())]
            assert any(document["leaves"] for document in found)


def test_batches_in_memory_are_bounded_by_the_window(monkeypatch):
    """However long the run, at most two batches per slot are read ahead of the merge."""
    import fieldeval.scale.run as run_module

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


# --- the score command's --workers and --results (its --cluster: test_scale_with_dask.py) ------


def test_score_with_workers_writes_the_one_process_report(order_project, monkeypatch):
    monkeypatch.chdir(order_project)
    monkeypatch.delitem(sys.modules, "order_schema", raising=False)
    assert score_command(order_project, "--out", "one.json")[0] == 0
    code, printed = score_command(
        order_project, "--out", "two.json", "--workers", "2", "--results", "two.jsonl", "--fan-out", "always"
    )
    assert code == 0, printed
    assert "scored 30 documents on 2 local processes; none failed" in printed
    assert "Wrote 30 document row(s) to two.jsonl." in printed
    one = (order_project / "one.json").read_text()
    assert (order_project / "two.json").read_text() == one  # the leaf diffs the workers found included
    assert any(document["leaves"] for document in json.loads(one)["leaf_diffs"]["documents"])
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
