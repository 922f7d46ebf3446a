"""Several candidates in one comparison: a leaderboard on constructed runs whose truth is known.

The baseline is the simulated baseline extractor's outputs. The candidates are built from them:
`copy` (the same outputs, the same model), `small` (the same outputs from a cheaper model),
`tiny` (the cheapest, with `invoice_date` left empty on every second invoice) and `huge` (the
ground truth itself, from the dearest model). Each is scored by the real scorer and saved by the
project's own writer with the run's provenance, then compared by the command.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest

from fieldeval.commands.compare import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, main
from fieldeval.compare.bootstrap import IMPROVED, NO_CLEAR_CHANGE, REGRESSED, bonferroni_band
from fieldeval.compare.candidates import build
from fieldeval.compare.reading import read_run_file
from fieldeval.formats.prices import read_prices
from tests.candidate_runs import COST, DOCUMENTS, RUNS, write_runs

RESAMPLES = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The constructed runs saved as reports, and the price table."""
    runs = {stem: model for stem, model in RUNS.items() if stem != "odd"}
    return write_runs(tmp_path_factory.mktemp("candidates"), runs, without_latency=["huge"])


@pytest.fixture()
def project(folder, monkeypatch):
    monkeypatch.chdir(folder)
    return folder


def board_of(folder, *stems, **options):
    runs = [read_run_file(folder / f"{stem}.json") for stem in stems]
    prices = read_prices(folder / "prices.json")
    return build(runs[0], runs[1:], resamples=RESAMPLES, prices=prices, **options)


def test_verdicts_costs_frontier_and_recommendation_follow_the_constructed_truth(folder):
    board = board_of(folder, "big", "copy", "small", "tiny", "huge")
    copy, small, tiny, huge = board.candidates
    for row in (copy, small):  # the baseline's own outputs: every change exactly zero, nothing claimed
        assert {change.verdict for change in row.changes.values()} == {NO_CLEAR_CHANGE}
        assert all(change.estimate == change.low == change.high == 0 for change in row.changes.values())
    assert tiny.verdicts(REGRESSED) == ["invoice_date"] and tiny.worst == "invoice_date"
    assert huge.verdicts(REGRESSED) == [] and {"vendor_name", "total_amount"} <= set(huge.verdicts(IMPROVED))
    assert huge.overall is not None and huge.overall.verdict == IMPROVED
    for row, model in (
        (board.baseline, "big-1"),
        (copy, "big-1"),
        (small, "small-a"),
        (tiny, "tiny-z"),
        (huge, "huge-9"),
    ):
        assert row.model_id == model
        assert row.cost_per_1000 == pytest.approx(COST[model])
        assert row.tokens_per_document == 1100
    assert small.latency_p50_s == pytest.approx((500 + 10 * (DOCUMENTS - 1) / 2) / 1000)
    assert huge.latency_p50_s is None and huge.latency_p95_s is None
    # small costs less than big and copy and is no worse anywhere: both are off the frontier, by small
    assert not board.baseline.frontier and small.run in board.baseline.dominated_by
    assert not copy.frontier and copy.dominated_by == (small.run,)
    # tiny is cheaper than small but worse on invoice_date; huge is dearest but better: all three stay
    assert small.frontier and tiny.frontier and huge.frontier
    assert board.recommended == small.run
    assert board.reason.startswith(f"{small.run}: no field regressed, 92% cheaper than {board.baseline.run}")
    assert board.family.runs == 4 and board.family.targets == 1 + len(board.comparisons[0].paths)
    assert board.family.level > board.family.confidence  # the band is wider than one interval's own


def test_the_family_band_is_wider_with_more_candidates_and_gates_restrict_the_recommendation(folder):
    two = board_of(folder, "big", "tiny", "huge")
    four = board_of(folder, "big", "copy", "small", "tiny", "huge")
    assert four.family.level >= two.family.level
    # on the gates' targets only, tiny's invoice_date regression does not count: tiny is recommended
    gated = board_of(folder, "big", "small", "tiny", gated=["total_amount.f1"])
    assert gated.considered == ("total_amount.f1",)
    assert gated.recommended == gated.candidates[1].run
    assert "no gated target regressed" in gated.reason


def test_equal_cost_and_no_clear_difference_keep_both_on_the_frontier(folder):
    board = board_of(folder, "big", "copy")
    assert board.baseline.frontier and board.candidates[0].frontier
    assert board.recommended == board.baseline.run and "no priced candidate costs less" in board.reason


def test_a_run_that_cannot_be_priced_is_said_to_be_so_and_never_placed(folder):
    runs = [read_run_file(folder / f"{stem}.json") for stem in ("big", "small", "huge")]
    prices = read_prices(folder / "prices.json")
    del prices["huge-9"]
    board = build(runs[0], runs[1:], resamples=RESAMPLES, prices=prices)
    huge = board.candidates[1]
    assert huge.cost_per_1000 is None and not huge.frontier and "huge-9" in huge.cost_note
    assert board.to_json()["candidates"][1]["cost_per_1000"] is None
    unpriced = build(runs[0], runs[1:], resamples=RESAMPLES)
    assert unpriced.recommended is None and "--prices" in unpriced.reason
    assert not any(row.frontier for row in unpriced.rows)


def test_the_command_prints_one_leaderboard_and_writes_the_json_verdicts(project, capsys):
    args = ["big.json", "copy.json", "small.json", "tiny.json", "huge.json", "--prices", "prices.json"]
    assert main([*args, "--resamples", str(RESAMPLES), "--json", "verdicts.json"]) == EXIT_PASSED
    printed = capsys.readouterr().out
    assert "Leaderboard" in printed and "Recommended: small.json: no field regressed" in printed
    assert "not recorded" in printed  # huge's latency
    record = json.loads((project / "verdicts.json").read_text())
    assert record["recommended"] == "small.json"
    assert [entry["run"] for entry in record["candidates"]] == ["copy.json", "small.json", "tiny.json", "huge.json"]
    tiny = record["candidates"][2]
    assert tiny["model_id"] == "tiny-z" and tiny["cost_per_1000"] == pytest.approx(COST["tiny-z"])
    assert tiny["fields"]["invoice_date"]["verdict"] == REGRESSED
    assert set(tiny["fields"]["invoice_date"]) == {"delta", "low", "high", "verdict"}
    assert tiny["fields"]["invoice_date"]["high"] < 0
    assert tiny["frontier"] is True and tiny["dominated_by"] == []
    assert record["candidates"][0]["dominated_by"] == ["small.json"]
    assert record["candidates"][3]["latency_p50_s"] is None
    assert record["family"]["confidence"] == 0.95 and record["family"]["runs"] == 4
    assert record["family"]["fields"] == len(record["candidates"][0]["fields"]) + 1  # and overall
    family = record["family"]
    assert family["band"] == "bonferroni" and 0 < family["varying"] <= family["intervals"]
    assert family["level"] == pytest.approx(1 - 0.05 / family["varying"])
    assert f"{family['varying']} of them vary" in printed and "Bonferroni" in printed


def test_the_exit_code_says_whether_the_recommended_run_passes_the_gates(project, capsys):
    args = ["big.json", "small.json", "tiny.json", "--prices", "prices.json", "--resamples", str(RESAMPLES)]
    # small is recommended, and its invoice_date is the baseline's: the gate passes though tiny's fails
    assert main([*args, "--gate", "high(delta(invoice_date.f1)) >= 0"]) == EXIT_PASSED
    printed = capsys.readouterr().out
    assert "the recommended run passes every gate; runs failing a gate: tiny.json" in printed
    assert main([*args, "--gate", "delta(overall) >= 0.01"]) == EXIT_FAILED  # no run improves by 0.01
    assert main([*args[:3], "--gate", "overall >= 0"]) == EXIT_FAILED  # no prices: nothing recommended
    assert "no recommendation" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["small.json", "small.json"], "small.json is named twice"),
        (["small.json", "tiny.json", "--intervals", "per-field"], "--intervals per-field"),
        (["small.json", "tiny.json", "--json", "tiny.json"], "--json tiny.json"),
    ],
)
def test_refusals_before_any_work(project, capsys, extra, message):
    assert main(["big.json", *extra]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def test_candidates_over_other_cases_are_refused_naming_the_file_and_the_fix(project, folder, capsys):
    data = json.loads((folder / "tiny.json").read_text())
    dropped = data["cases"][0]["name"]
    data["cases"], data["detailed_results"], data["scores"] = (
        data["cases"][1:],
        data["detailed_results"][1:],
        data["scores"][1:],
    )
    data["run"]["cases"].pop(dropped)
    (project / "fewer.json").write_text(json.dumps(data))
    assert main(["big.json", "small.json", "fewer.json"]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "fewer.json pairs" in error and dropped in error and "score every run over the same case file" in error
    (project / "fewer.json").unlink()


def test_a_candidate_of_another_schema_is_refused_naming_it(project, folder, capsys):
    data = json.loads((folder / "small.json").read_text())
    data["run"]["schema_sha256"] = "a" * 64
    base = json.loads((folder / "big.json").read_text())
    base["run"]["schema_sha256"] = "b" * 64
    (project / "other-schema.json").write_text(json.dumps(data))
    (project / "base-schema.json").write_text(json.dumps(base))
    shutil.copy(folder / "tiny.json", project / "tiny-copy.json")
    assert main(["base-schema.json", "tiny-copy.json", "other-schema.json"]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "other-schema.json were not scored by the same rules" in error and "--allow-scoring-change" in error


ONE = Path(__file__).parent / "one_candidate"  # written by the code before several candidates, on these runs
ONE_ARGS = [
    *("big.json", "tiny.json", "--prices", "prices.json", "--resamples", "300"),
    *("--gate", "high(delta(invoice_date.f1)) >= 0", "--gate", "overall >= 0.5"),
    *("--gate", "high(delta(total_amount.recall)) >= -0.5", "--json", "one.json"),
]


def test_one_candidate_prints_and_saves_what_it_did_before_byte_for_byte(project, capsys):
    """The files under one_candidate/ are what `compare` printed and wrote, with these arguments on these runs,
    before it took several candidates."""
    assert main(ONE_ARGS) == EXIT_FAILED  # tiny's invoice_date gate fails
    assert capsys.readouterr().out.encode() == (ONE / "stdout.txt").read_bytes()
    assert (project / "one.json").read_bytes() == (ONE / "verdicts.json").read_bytes()


def test_every_candidate_is_resampled_on_the_same_documents_and_one_band_covers_them_all(folder):
    """The family band, recomputed here from each pair's resampled changes side by side, is what the rows print."""
    board = board_of(folder, "big", "small", "tiny", "huge")
    first = board.comparisons[0]
    for comparison in board.comparisons[1:]:
        assert np.array_equal(comparison.indices, first.indices)
    targets = [list(row.changes) for row in board.candidates]
    resampled = np.column_stack(
        [c.resampled_delta(t) for c, names in zip(board.comparisons, targets, strict=True) for t in names]
    )
    printed = [change for row in board.candidates for change in row.changes.values()]
    # Bonferroni over the intervals whose target varies: each estimate +- z * its bootstrap standard error
    se = resampled.std(axis=0, ddof=1)
    varying = int((se > 0).sum())
    assert 0 < varying < len(printed)  # copies of the baseline's fields never vary: they spend no error rate
    level = 1 - (1 - board.family.confidence) / varying
    z = NormalDist().inv_cdf(1 - (1 - board.family.confidence) / (2 * varying))
    for change, spread in zip(printed, se, strict=True):
        assert change.low == pytest.approx(change.estimate - z * spread, abs=1e-12)
        assert change.high == pytest.approx(change.estimate + z * spread, abs=1e-12)
    assert board.family.varying == varying and board.family.band == "bonferroni"
    assert board.family.level == pytest.approx(level) and all(change.level == board.family.level for change in printed)
    alone = board_of(folder, "big", "tiny").candidates[0].changes["invoice_date.f1"]
    assert alone.high - alone.low <= printed[len(targets[0]) + 3].high - printed[len(targets[0]) + 3].low


def test_a_large_change_is_still_found_among_eight_candidates(folder, tmp_path):
    """The family of 8 candidates is wider than one candidate's, but a field left empty on every second invoice
    (tiny) and the ground truth itself (huge) are still called what they are: the band keeps its power."""
    for stem in ("big", "tiny", "huge", "small"):
        shutil.copy(folder / f"{stem}.json", tmp_path / f"{stem}.json")
    for number in range(5):  # five more runs with the baseline's outputs under other names
        shutil.copy(folder / "copy.json", tmp_path / f"copy-{number}.json")
    stems = ["tiny", *(f"copy-{number}" for number in range(5)), "huge", "small"]
    runs = [read_run_file(tmp_path / f"{stem}.json") for stem in ["big", *stems]]
    board = build(runs[0], runs[1:], resamples=RESAMPLES, prices=read_prices(folder / "prices.json"))
    assert board.family.runs == 8 and board.family.level == pytest.approx(1 - 0.05 / board.family.varying)
    tiny, huge = board.candidates[0], board.candidates[6]
    assert tiny.verdicts(REGRESSED) == ["invoice_date"] and tiny.fields["invoice_date"].high < -0.1  # a third lost
    assert huge.overall is not None and huge.overall.verdict == IMPROVED
    assert {"vendor_name", "total_amount"} <= set(huge.verdicts(IMPROVED)) and huge.verdicts(REGRESSED) == []
    for row in board.candidates[1:6]:
        assert {change.verdict for change in row.changes.values()} == {NO_CLEAR_CHANGE}
    assert board.recommended == board.candidates[7].run  # small: the baseline's outputs, cheaper
    # the frontier reads the rows' own intervals: tiny is cheapest, and not dominated by what regresses less
    assert tiny.frontier and huge.frontier


def test_the_frontier_against_the_baseline_reads_the_interval_the_row_prints(folder):
    """tiny against the baseline: tiny (cheaper) does not dominate the baseline, because the interval the row prints
    for its invoice_date lies below zero, and the --json writes that same interval."""
    board = board_of(folder, "big", "tiny", "huge")
    tiny = board.candidates[0]
    assert tiny.fields["invoice_date"].high < 0
    assert board.baseline.run not in tiny.dominated_by and tiny.run not in board.baseline.dominated_by
    assert board.to_json()["family"]["band"] == "bonferroni"
    printed = board.to_json()["candidates"][0]["fields"]["invoice_date"]
    assert (printed["low"], printed["high"]) == (tiny.fields["invoice_date"].low, tiny.fields["invoice_date"].high)


def test_a_target_that_never_varies_is_its_estimate_and_spends_no_error_rate():
    rng = np.random.default_rng(7)
    moving = rng.normal(0.0, 0.1, (2000, 3))
    resampled = np.column_stack([moving, np.full(2000, -0.25), np.zeros(2000)])
    estimates = np.array([0.01, -0.02, 0.0, -0.25, 0.0])
    low, high, level = bonferroni_band(estimates, resampled, 0.95)
    assert level == pytest.approx(1 - 0.05 / 3)  # three targets vary; the two still ones spend nothing
    assert (low[3], high[3]) == (-0.25, -0.25) and (low[4], high[4]) == (0.0, 0.0)
    z = NormalDist().inv_cdf(1 - 0.05 / 6)
    assert high[:3] - low[:3] == pytest.approx(2 * z * moving.std(axis=0, ddof=1))
    assert np.allclose((low[:3] + high[:3]) / 2, estimates[:3])  # centred on the estimate, not the resamples
    with pytest.raises(ValueError, match="confidence"):
        bonferroni_band(estimates, resampled, 1.0)
