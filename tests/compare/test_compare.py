"""Comparing two runs: pairing, the paired bootstrap, verdicts, gates and the command line.

The gates live in `fieldeval.compare.gates` and the command line in `fieldeval.commands.compare`; they are
tested here, in process, because every test of them needs the same two scored simulated runs. Two
tests start a process: one proves `python -m fieldeval.commands.compare` runs, one that `--help` and argument
errors import nothing heavy. Malformed input is `test_compare_validation.py`; compact results files
are `test_compare_results.py`.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from strands_evals import Case
from strands_evals.evaluators import Equals, StructuredOutputReport, StructuredOutputSimilarity

from fieldeval.commands.compare import main
from fieldeval.compare import bootstrap
from fieldeval.compare.gates import GateError, evaluate_gates, parse_gate
from fieldeval.compare.runs import (
    COUNTS,
    IMPROVED,
    NO_CLEAR_CHANGE,
    REGRESSED,
    SCORE_ONLY,
    CompareError,
    Interval,
    bootstrap_indices,
    case_scores,
    compare,
    compare_scores,
    field_counts,
    paired_bootstrap,
    read_run,
    verdict,
)
from fieldeval.flows.compare import text as report_text
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from fieldeval.render.compare_charts import field_delta_chart
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice, SparseInvoice

ROOT = Path(__file__).resolve().parents[2]
RESAMPLES = 300  # enough to exercise the bootstrap; the notebook uses the default


def score(cases, outputs, model=Invoice, evaluator=None):
    """Score `outputs` (by case name) against `cases` in one experiment, as the notebook does."""
    return score_outputs_sync(cases, outputs, evaluator or StructuredOutputSimilarity(model))


@pytest.fixture(scope="module")
def invoices():
    return sim.simulated_invoices()


@pytest.fixture(scope="module")
def cases(invoices):
    return sim.simulated_cases(invoices)


@pytest.fixture(scope="module")
def baseline(invoices, cases):
    return score(cases, sim.extract(sim.BASELINE, invoices))


@pytest.fixture(scope="module")
def candidate(invoices, cases):
    return score(cases, sim.extract(sim.CANDIDATE, invoices))


@pytest.fixture(scope="module")
def comparison(baseline, candidate):
    return compare(baseline, candidate, resamples=RESAMPLES)


# --- per-document counts ------------------------------------------------------------------------


def test_document_counts_sum_to_the_report_rollup(baseline):
    totals: dict[str, dict[str, int]] = {}
    for rows in baseline.detailed_results:
        for path, counts in field_counts(rows[0].metadata["comparison"]).items():
            for key, value in counts.items():
                totals.setdefault(path, dict.fromkeys(COUNTS, 0))[key] += value
    rollup = baseline.metrics().field_metrics
    assert set(totals) == set(rollup)
    assert "line_items.description" in totals
    for path, counts in totals.items():
        assert counts == {key: rollup[path].get(key, 0) for key in COUNTS}, path


def test_point_estimates_equal_the_report_metrics(comparison, baseline, candidate):
    for sample, report in ((comparison.old, baseline), (comparison.new, candidate)):
        rollup = report.metrics().field_metrics
        for path in comparison.paths:
            for metric in ("precision", "recall", "f1"):
                assert sample.value(f"{path}.{metric}") == pytest.approx(rollup[path][f"cm_{metric}"]), path
        assert sample.value("overall") == pytest.approx(report.overall_score)


def test_field_counts_reads_missing_keys_as_nothing():
    assert field_counts({}) == {}
    assert field_counts({"confusion_matrix": {"fields": {"a": {"overall": {"tp": 2}}, "b": {}}}}) == {
        "a": {"tp": 2, "fp": 0, "tn": 0, "fn": 0, "fd": 0, "fa": 0},
        "b": {"tp": 0, "fp": 0, "tn": 0, "fn": 0, "fd": 0, "fa": 0},
    }


# --- pairing ------------------------------------------------------------------------------------


def test_cases_in_one_run_only_are_reported_and_left_out(invoices, cases, baseline):
    outputs = sim.extract(sim.CANDIDATE, invoices)
    subset = [case for case in cases if case.name not in {"sim-01", "sim-02"}]
    extra = Case(name="extra", input="x", expected_output=invoices[0].truth)
    new = score([*subset, extra], outputs | {"extra": invoices[0].truth})
    result = compare(baseline, new, resamples=RESAMPLES)
    assert len(result.pairing.cases) == len(cases) - 2
    excluded = dict(result.pairing.excluded)
    assert set(excluded) == {"sim-01", "sim-02", "extra"}
    assert excluded["sim-01"] == "old: scored against Invoice; new: absent"
    assert excluded["extra"] == "old: absent; new: scored against Invoice"
    assert list(result.pairing.table()["case"]) == ["sim-01", "sim-02", "extra"]


def test_a_case_scored_against_another_schema_is_left_out(invoices, cases, baseline):
    sparse_case = Case(
        name="sim-03",
        input="x",
        expected_output=SparseInvoice(invoice_id="INV-1", vendor_name="Acme Corporation"),
    )
    sparse = score([sparse_case], {"sim-03": sparse_case.expected_output}, model=SparseInvoice)
    new = StructuredOutputReport.flatten([score(cases[:2], sim.extract(sim.CANDIDATE, invoices)), sparse])
    result = compare(baseline, new, resamples=RESAMPLES)
    assert dict(result.pairing.excluded)["sim-03"] == ("old: scored against Invoice; new: scored against SparseInvoice")
    assert result.pairing.cases == ("sim-01", "sim-02")


def test_a_case_without_ground_truth_is_reported_not_paired(invoices, cases):
    outputs = sim.extract(sim.BASELINE, invoices)
    no_truth = Case(name="sim-02", input="x")
    old = score(cases[:3], outputs)
    new = score([cases[0], no_truth, cases[2]], outputs)
    result = compare(old, new, resamples=RESAMPLES)
    assert result.pairing.cases == ("sim-01", "sim-03")
    assert "no ground truth" in dict(result.pairing.excluded)["sim-02"]


def test_an_unreadable_output_is_paired_with_score_zero(invoices, cases):
    outputs = sim.extract(sim.BASELINE, invoices)
    old = score(cases[:3], outputs)
    new = score(cases[:3], outputs | {"sim-02": "this is not JSON"})
    run = read_run(new)
    assert run.documents["sim-02"].unreadable and run.documents["sim-02"].score == 0.0
    result = compare(old, new, resamples=RESAMPLES)
    assert result.pairing.cases == ("sim-01", "sim-02", "sim-03")
    assert result.new.scores[1] == 0.0
    assert all(result.new.counts[path][1].sum() == 0 for path in result.paths)
    assert "outputs not readable as the schema (scored 0, no field counts): old 0, new 1" in report_text(result, [])


def test_no_shared_case_is_an_error(invoices, cases):
    outputs = sim.extract(sim.BASELINE, invoices)
    with pytest.raises(CompareError, match="share no case"):
        compare(score(cases[:2], outputs), score(cases[2:4], outputs))


def test_a_repeated_case_name_is_an_error(invoices, cases):
    outputs = sim.extract(sim.BASELINE, invoices)
    twice = StructuredOutputReport.flatten([score(cases[:2], outputs), score(cases[:1], outputs)])
    with pytest.raises(CompareError, match="'sim-01' appears more than once"):
        read_run(twice, "twice.json")


def test_an_unnamed_case_is_an_error(invoices):
    unnamed = Case(input="x", expected_output=invoices[0].truth)
    report = score([unnamed], {None: invoices[0].truth})
    with pytest.raises(CompareError, match="case 0 has no name"):
        read_run(report, "old.json")


def test_a_row_without_its_raw_comparison_is_an_error(invoices, cases):
    report = score(cases[:2], sim.extract(sim.BASELINE, invoices))
    del report.detailed_results[1][0].metadata["comparison"]
    with pytest.raises(CompareError, match="new.json: case 'sim-02' has no raw comparison.*save_report"):
        read_run(report, "new.json")


def test_an_equals_report_with_an_unnamed_case_is_an_error(invoices):
    unnamed = Case(input="x", expected_output=invoices[0].truth)
    report = score([unnamed], {None: invoices[0].truth}, evaluator=Equals())
    with pytest.raises(CompareError, match="old.json: case 0 \\(None\\) has no name"):
        case_scores(report, "old.json")


def test_a_report_with_no_structured_output_rows_is_an_error(invoices, cases):
    outputs = sim.extract(sim.BASELINE, invoices)
    equals = score(cases[:2], outputs, evaluator=Equals())
    with pytest.raises(CompareError, match="old.json: no case was scored by StructuredOutputSimilarity"):
        read_run(equals, "old.json")


# --- the bootstrap and verdicts ----------------------------------------------------------------


def test_bootstrap_is_deterministic_under_a_seed(baseline, candidate):
    first = compare(baseline, candidate, resamples=RESAMPLES, seed=7)
    again = compare(baseline, candidate, resamples=RESAMPLES, seed=7)
    other = compare(baseline, candidate, resamples=RESAMPLES, seed=8)
    assert np.array_equal(first.old_draws.scores, again.old_draws.scores)
    assert first.delta("overall") == again.delta("overall")
    assert first.field_table().equals(again.field_table())
    assert first.delta("overall") != other.delta("overall")
    assert first.delta("overall").estimate == other.delta("overall").estimate  # only the interval resamples


def test_resample_count_is_a_parameter(baseline, candidate):
    result = compare(baseline, candidate, resamples=50)
    assert result.resamples == 50 and result.new_draws.scores.shape == (50,)
    assert result.old_draws.counts["invoice_date"].shape == (50, len(COUNTS))
    assert bootstrap_indices(4, 10, seed=1).shape == (10, 4)


def test_identical_runs_get_an_interval_covering_zero(baseline):
    result = compare(baseline, baseline, resamples=RESAMPLES)
    for target in ["overall", *(f"{path}.f1" for path in result.paths)]:
        change = result.delta(target)
        assert change.low <= 0 <= change.high, target
        assert change.verdict == NO_CLEAR_CHANGE
    assert set(result.field_table()["verdict"]) == {NO_CLEAR_CHANGE}
    assert result.movers().empty  # nothing moved, so no document is listed as a mover


def test_a_constant_shift_gets_a_zero_width_interval_at_the_shift():
    """Every resample of a constant difference has that mean: the interval must be exactly it."""
    old = np.random.default_rng(4).random(25)
    change = paired_bootstrap(old, old + 0.25, resamples=200)
    assert change.estimate == pytest.approx(0.25)
    assert (change.low, change.high) == (pytest.approx(0.25), pytest.approx(0.25))
    assert change.verdict == IMPROVED


def test_identical_noisy_scores_cover_zero():
    scores = np.random.default_rng(3).random(30)
    change = paired_bootstrap(scores, scores, resamples=200)
    assert (change.estimate, change.low, change.high) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(0.01, 0.2, IMPROVED), (-0.2, -0.01, REGRESSED), (-0.1, 0.1, NO_CLEAR_CHANGE), (0.0, 0.1, NO_CLEAR_CHANGE)],
)
def test_verdict_claims_a_change_only_when_zero_is_outside(low, high, expected):
    assert verdict(low, high) == expected
    assert Interval(0.0, low, high).verdict == expected


def test_each_verdict_on_the_simulated_runs(comparison):
    verdicts = dict(zip(comparison.field_table()["field"], comparison.field_table()["verdict"], strict=True))
    assert verdicts["invoice_date"] == REGRESSED
    assert verdicts["total_amount"] == IMPROVED
    assert verdicts["line_items.description"] == NO_CLEAR_CHANGE
    date = comparison.delta("invoice_date.f1")
    assert date.high < 0 < comparison.delta("total_amount.f1").low


def test_default_comparison_reaches_the_simulated_truth(baseline, candidate):
    """The notebook's headline: with the default resamples and seed, every verdict is the true one."""
    result = compare(baseline, candidate)
    assert result.overall_table()["verdict"][0] == IMPROVED
    found = dict(zip(result.field_table()["field"], result.field_table()["verdict"], strict=True))
    assert {field: found[field] for field in sim.EXPECTED_VERDICTS} == sim.EXPECTED_VERDICTS
    assert found["line_items.sku"] == found["line_items.unit_price"] == NO_CLEAR_CHANGE


def test_bad_bootstrap_parameters_are_errors(baseline):
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        compare(baseline, baseline, resamples=0)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        compare(baseline, baseline, confidence=1.5)
    with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
        paired_bootstrap([1.0], [1.0], confidence=0)
    with pytest.raises(CompareError, match="differ in length"):
        paired_bootstrap([1.0, 0.0], [1.0])


def test_compare_scores_pairs_any_evaluator(invoices, cases):
    equals = Equals()
    old = case_scores(score(cases, sim.extract(sim.BASELINE, invoices), evaluator=equals))
    new = case_scores(score(cases, sim.extract(sim.CANDIDATE, invoices), evaluator=equals))
    row = compare_scores("Equals", old, new).iloc[0]
    assert row["old"] == pytest.approx(np.mean(list(old.values())))
    assert row["low"] <= row["delta"] <= row["high"]
    # What the notebook shows: Equals cannot rank the simulated runs, and leans the wrong way.
    assert row["verdict"] == NO_CLEAR_CHANGE and row["delta"] < 0
    with pytest.raises(CompareError, match="only in old: \\['sim-01'\\]"):
        compare_scores("Equals", old, {name: value for name, value in new.items() if name != "sim-01"})


# --- tables and chart ---------------------------------------------------------------------------


def test_field_table_lists_nested_paths_with_both_runs(comparison):
    table = comparison.field_table()
    assert list(table["field"][:5]) == ["invoice_id", "vendor_name", "invoice_date", "total_amount", "line_items"]
    assert {"line_items.sku", "line_items.description", "line_items.unit_price"} <= set(table["field"])
    assert {"old precision", "new recall", "new f1", "delta f1", "low", "high", "verdict"} <= set(table.columns)
    with pytest.raises(ValueError, match="metric must be one of"):
        comparison.field_table("accuracy")


def test_movers_for_a_field_show_the_values_that_changed(comparison, invoices):
    predictions = sim.extract(sim.CANDIDATE, invoices)
    planted = {
        invoice.name: str(invoice.due_date)
        for invoice in invoices
        if predictions[invoice.name].invoice_date == invoice.due_date
    }
    movers = comparison.movers(limit=100, field="invoice_date").set_index("case")
    assert len(planted) >= 10
    assert movers.loc[list(planted), "new value"].to_dict() == planted
    assert (movers.loc[list(planted), "expected"] == movers.loc[list(planted), "old value"]).all()
    assert all("invoice_date:" in moved for moved in movers["fields moved"])
    with pytest.raises(ValueError, match="unknown field path 'date'"):
        comparison.movers(field="date")


def test_movers_are_sorted_by_size_of_move(comparison):
    movers = comparison.movers(limit=5)
    assert len(movers) == 5
    assert list(movers["delta"].abs()) == sorted(movers["delta"].abs(), reverse=True)


def test_movers_leave_out_documents_that_did_not_move(comparison):
    movers = comparison.movers(limit=len(comparison.pairing.cases))
    unmoved = [
        name
        for position, name in enumerate(comparison.pairing.cases)
        if comparison.old.scores[position] == comparison.new.scores[position]
        and all(
            (comparison.old.counts[path][position] == comparison.new.counts[path][position]).all()
            for path in comparison.paths
        )
    ]
    assert unmoved  # clean scans both extractors read perfectly
    assert not set(unmoved) & set(movers["case"])
    assert len(movers) == len(comparison.pairing.cases) - len(unmoved)
    assert (movers["fields moved"] != "").all()
    score_only = movers[movers["fields moved"] == SCORE_ONLY]
    assert len(score_only) >= 1 and (score_only["delta"] != 0).all()  # sim-32: another wrong description


def test_field_delta_chart_has_one_row_per_field(comparison):
    figure = field_delta_chart(comparison)
    labels = [tick.get_text() for tick in figure.axes[0].get_yticklabels()]
    assert labels[::-1] == list(comparison.paths)


# --- gates --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "passing", "failing"),
    [(">=", 8, 8.5), ("<=", 8, 7.5), (">", 7.5, 8), ("<", 8.5, 8), ("==", 8, 7), ("!=", 7, 8)],
)
def test_each_gate_operator(comparison, operator, passing, failing):
    measured = float(comparison.new.value("invoice_id.fd"))
    assert measured == 8  # the simulated candidate drops the INV- prefix on 8 of 60 invoices
    [good, bad] = evaluate_gates(
        [f"invoice_id.fd {operator} {passing}", f"invoice_id.fd {operator} {failing}"], comparison
    )
    assert (good.passed, bad.passed) == (True, False)
    assert good.measured == measured


def test_delta_and_overall_gates_measure_what_the_tables_show(comparison):
    results = evaluate_gates(
        ["overall >= 0.8", "delta(invoice_date.f1) >= -0.02", "total_amount.recall >= 0.98"], comparison
    )
    overall = comparison.overall_table().iloc[0]
    assert results[0].measured == pytest.approx(overall["new"]) and results[0].on == "new"
    assert results[1].measured == pytest.approx(comparison.delta("invoice_date.f1").estimate)
    assert results[1].on == "new - old" and not results[1].passed
    assert results[2].passed


def test_interval_gates_fail_only_beyond_noise(comparison):
    rules = [
        "high(delta(invoice_date.f1)) >= 0",
        "high(delta(line_items.description.f1)) >= 0",
        "low(delta(total_amount.f1)) > 0",
    ]
    for mode in ("joint", "per-field"):
        date, description, total = evaluate_gates(rules, comparison, intervals=mode)
        band = (
            comparison.joint(["invoice_date.f1", "line_items.description.f1", "total_amount.f1"])
            if mode == "joint"
            else {target: comparison.delta(target) for target in ("invoice_date.f1", "total_amount.f1")}
        )
        assert date.measured == band["invoice_date.f1"].high and not date.passed
        assert date.on == f"high of {mode} interval" and date.interval == mode
        assert date.family == (3 if mode == "joint" else 0)
        assert description.passed  # same simulated rate in both runs: noise, not a regression
        assert total.measured == band["total_amount.f1"].low and total.passed


def test_the_joint_band_holds_each_fields_interval_read_at_one_higher_level(comparison):
    targets = [f"{path}.f1" for path in comparison.paths]
    band = comparison.joint(targets)
    level = band[targets[0]].level
    assert level > comparison.confidence  # eight fields: all hold together only at a higher level
    for target in targets:
        alone, joint = comparison.delta(target), band[target]
        assert joint.estimate == alone.estimate and joint.level == level
        assert joint.low <= alone.low and alone.high <= joint.high, target
        at_level = bootstrap.percentile_bounds(comparison.resampled_delta(target), level)
        assert (joint.low, joint.high) == tuple(at_level), target


def test_plain_and_delta_gates_record_no_interval_mode(comparison):
    for result in evaluate_gates(["overall >= 0.8", "delta(invoice_date.f1) >= 0"], comparison):
        assert result.interval == "" and result.family == 0


def test_an_unknown_interval_mode_is_refused(comparison):
    with pytest.raises(ValueError, match="joint, per-field"):
        evaluate_gates(["high(delta(invoice_date.f1)) >= 0"], comparison, intervals="bonferroni")


def test_gates_against_a_single_run(candidate):
    [result] = evaluate_gates(["line_items.f1 >= 0.9"], candidate)
    assert result.on == "run" and result.passed
    for rule in ("delta(line_items.f1) >= 0", "low(delta(line_items.f1)) >= 0"):
        with pytest.raises(GateError, match="compares two runs"):
            evaluate_gates([rule], candidate)


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("", "malformed"),
        ("overall", "malformed"),
        ("overall >= ", "malformed"),
        ("overall => 0.8", "malformed"),
        ("overall >= high", "malformed"),
        ("delta(overall >= 0", "malformed"),
        ("delta(line_items.f1 >= -0.02", "malformed"),
        ("low(invoice_date.f1) >= 0", "malformed"),
        ("high(delta(invoice_date.f1) >= 0", "malformed"),
        ("mean(delta(invoice_date.f1)) >= 0", "malformed"),
        ("total_amount.accuracy >= 0.9", "'accuracy' is not a metric"),
        ("total_amount >= 0.9", "'total_amount' is not a metric"),
    ],
)
def test_malformed_rules_name_the_rule(rule, message):
    with pytest.raises(GateError, match=message) as error:
        parse_gate(rule)
    assert repr(rule) in str(error.value)


def test_unknown_field_path_is_an_error_not_a_pass(comparison):
    with pytest.raises(GateError, match="gate 'totl_amount.recall >= 0.98': unknown field path 'totl_amount'"):
        evaluate_gates(["totl_amount.recall >= 0.98"], comparison)
    with pytest.raises(GateError, match="unknown field path 'line_items.qty'"):
        evaluate_gates(["delta(line_items.qty.f1) >= 0"], comparison)


# --- command line -------------------------------------------------------------------------------


@pytest.fixture()
def saved(tmp_path, baseline, candidate):
    return save_report(baseline, tmp_path / "old.json"), save_report(candidate, tmp_path / "new.json")


def cli(capsys, *args):
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_prints_the_tables_and_exits_0_without_gates(saved, capsys):
    code, out, err = cli(capsys, *saved, "--resamples", RESAMPLES)
    assert code == 0 and err == ""
    for heading in ("Overall", "Per field", "Documents that moved most"):
        assert heading in out
    assert "invoice_date" in out and "regressed" in out


def test_cli_exits_0_when_every_gate_passes(saved, capsys):
    code, out, _ = cli(capsys, *saved, "--resamples", RESAMPLES, "--gate", "overall >= 0.8")
    assert code == 0 and "Gates: 1 passed, 0 failed" in out


def test_cli_exits_1_when_a_gate_fails(saved, capsys):
    code, out, _ = cli(
        capsys,
        *saved,
        "--resamples",
        RESAMPLES,
        "--gate",
        "overall >= 0.8",
        "--gate",
        "delta(invoice_date.f1) >= -0.02",
    )
    assert code == 1 and "Gates: 1 passed, 1 failed" in out and "FAIL" in out


@pytest.mark.parametrize(
    ("gate", "message"),
    [("overall >> 0.8", "malformed"), ("totl_amount.recall >= 0.98", "unknown field path 'totl_amount'")],
)
def test_cli_exits_2_on_a_bad_rule(saved, capsys, gate, message):
    code, out, err = cli(capsys, *saved, "--gate", gate)
    assert code == 2 and out == "" and message in err


def test_cli_exits_2_on_a_missing_or_foreign_file(saved, tmp_path, capsys):
    old, _ = saved
    code, _, err = cli(capsys, old, tmp_path / "absent.json")
    assert code == 2 and "absent.json: no saved report here" in err
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"not": "a report"}', encoding="utf-8")
    code, _, err = cli(capsys, foreign, old)
    assert code == 2 and "foreign.json: not a saved StructuredOutputReport" in err


@pytest.mark.parametrize(
    ("option", "message"),
    [("--resamples=0", "resamples must be at least 1"), ("--confidence=95", "confidence must be between 0 and 1")],
)
def test_cli_exits_2_on_a_bad_bootstrap_option(saved, capsys, option, message):
    code, out, err = cli(capsys, *saved, option)
    assert code == 2 and out == "" and message in err


def test_cli_exits_2_on_a_bad_argument(saved, capsys):
    for args in ([saved[0]], [*saved, "--top=-1"], [*saved, "--resamples=many"]):
        assert main([str(arg) for arg in args]) == 2, args
    assert "--top must be 0 or more" in capsys.readouterr().err


def test_cli_exits_2_when_a_file_holds_no_structured_output_rows(saved, tmp_path, invoices, cases, capsys):
    old, _ = saved
    equals = score(cases[:2], sim.extract(sim.BASELINE, invoices), evaluator=Equals())
    path = save_report(equals, tmp_path / "equals.json")
    code, _, err = cli(capsys, old, path)
    assert code == 2 and "equals.json: no case was scored by StructuredOutputSimilarity" in err


def test_module_entry_point_exit_code(saved):
    old, new = saved
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "fieldeval.commands.compare",
            old.name,
            new.name,
            "--resamples",
            "100",
            "--gate",
            "invoice_id.fd == 0",
        ],
        cwd=old.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert "old: old.json  new: new.json" in completed.stdout


# --- the multiplicity-matrix bootstrap equals the gather it replaced ------------------------------


def test_every_interval_equals_the_gather_over_the_same_indices(comparison):
    """The old algorithm gathered resamples x documents x counts per field; the draws must equal it exactly."""
    indices = comparison.indices
    assert indices.shape == (RESAMPLES, len(comparison.pairing.cases))
    for target in ["overall", *(f"{path}.{metric}" for path in comparison.paths for metric in ("f1", "fd"))]:
        gathered = comparison.new.value(target, indices) - comparison.old.value(target, indices)
        assert np.array_equal(comparison.resampled_delta(target), gathered), target
        change = comparison.delta(target)
        tail = (1 - comparison.confidence) / 2
        low, high = np.quantile(gathered, [tail, 1 - tail])
        assert (change.low, change.high) == (low, high), target


@pytest.mark.parametrize("chunk", [1, 7, 60, 10_000_000])
@pytest.mark.parametrize("largest", [9, 10**6], ids=["float32-exact", "float64"])
def test_chunked_draws_equal_one_draw(monkeypatch, chunk, largest):
    """However the resamples are chunked, and whatever the counts' size, the draws equal one gather."""
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", chunk)
    generator = np.random.default_rng(5)
    scores = generator.random((31, 2))
    counts = generator.integers(0, largest, size=(31, 12))
    counts[:, 3] = counts[:, 5]  # a repeated column is summed once and put back
    counts[:, 7] = 0
    means, sums = bootstrap.resample_sums(scores, counts, resamples=45, seed=11)
    indices = bootstrap_indices(31, 45, seed=11)
    assert np.array_equal(means, np.stack([scores[:, 0][indices].mean(axis=1), scores[:, 1][indices].mean(axis=1)], 1))
    assert np.array_equal(sums, counts[indices].sum(axis=1))


def test_help_and_bad_arguments_answer_before_any_heavy_import(tmp_path):
    """`--help`, a bad argument, a malformed rule and a missing file need neither numpy, pandas nor stickler
    (nor does a missing baseline of `power`, compare's neighbour)."""
    script = (
        "import sys\n"
        "from fieldeval.commands.compare import main\n"
        "from fieldeval.commands.power import main as power\n"
        "codes = [main(['--help']), main(['a.json']), main(['a.json', 'b.json', '--resamples=0']),\n"
        "         main(['a.json', 'b.json', '--gate', 'overall >> 1']), main(['absent.json', 'absent.json']),\n"
        "         power(['absent.json', '--target', 'total.f1'])]\n"
        "heavy = sorted(name for name in ('numpy', 'pandas', 'stickler', 'strands_evals') if name in sys.modules)\n"
        "print(codes, heavy)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert completed.stdout.splitlines()[-1] == "[0, 2, 2, 2, 2, 2] []", completed.stderr
    assert completed.stderr.count("absent.json: no saved report here") == 2, completed.stderr


@pytest.mark.parametrize("bound", [1, 200, 10**9], ids=["a-pass-per-matrix", "some-passes", "one-pass"])
def test_draws_in_several_passes_equal_one_draw(monkeypatch, bound):
    """Matrices summed over several passes of the same seeded draw give the sums and means of one."""
    monkeypatch.setattr(bootstrap, "COLUMN_BYTES", bound)
    generator = np.random.default_rng(8)
    scores = generator.random((40, 3))
    counts = [generator.integers(0, 9, size=(40, 6)) for _ in range(3)]
    counts[2][:, 1] = counts[0][:, 4]  # a column repeated across matrices
    means, sums = bootstrap.resample_sums(scores, counts, resamples=37, seed=3)
    indices = bootstrap_indices(40, 37, seed=3)
    assert np.array_equal(means, np.stack([scores[:, k][indices].mean(axis=1) for k in range(3)], 1))
    assert np.array_equal(sums, np.concatenate([matrix[indices].sum(axis=1) for matrix in counts], axis=1))


def test_rows_of_a_table_are_summed_as_the_gathered_matrix():
    """`Rows` (a table read through a row index, never gathered whole) sums as the matrix it stands for."""
    generator = np.random.default_rng(9)
    table = generator.integers(0, 30, size=(12, 7)).astype(np.uint8)
    index = generator.integers(0, 12, size=50)
    scores = generator.random((50, 1))
    gathered = bootstrap.resample_sums(scores, table[index], resamples=21, seed=4)
    read = bootstrap.resample_sums(scores, bootstrap.Rows(table, index), resamples=21, seed=4)
    assert all(np.array_equal(a, b) for a, b in zip(gathered, read, strict=True))
