"""The joint band against an independent computation, the interval modes on the command line, and
the refusals and bounds of issue 17's `compare` items: another schema under the same class name, a
report whose rows do not cover its cases, and memory bounded by chunking field paths."""

import json
import math

import numpy as np
import pytest
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands.compare import EXIT_BAD_INPUT, EXIT_FAILED, main
from fieldeval.compare import runs
from fieldeval.compare.bootstrap import joint_band, percentile_bounds
from fieldeval.compare.runs import compare
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from walkthroughs import simulated_runs as sim
from walkthroughs.invoices import Invoice

RESAMPLES = 200


@pytest.fixture(scope="module")
def small():
    """Twelve simulated invoices scored by both simulated extractors."""
    invoices = sim.simulated_invoices()[:12]
    cases = sim.simulated_cases(invoices)
    return tuple(
        score_outputs_sync(cases, sim.extract(extractor, invoices), StructuredOutputSimilarity(Invoice))
        for extractor in (sim.BASELINE, sim.CANDIDATE)
    )


def quantile(values, q):
    """numpy's default (linear) quantile, written out: position q x (n - 1) in the sorted values."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def counts_by_name(report):
    """Each case's raw per-field counts, by stickler's aggregation of its stored comparison."""
    return {
        case["name"]: runs.field_counts(rows[0].metadata["comparison"])
        for case, rows in zip(report.cases, report.detailed_results, strict=True)
    }


def f1_of(counts, names, path):
    """A field's F1 over a list of case names (repeats count again), summed by hand."""
    tp = sum(counts[name][path]["tp"] for name in names)
    fp = sum(counts[name][path]["fp"] for name in names)
    fn = sum(counts[name][path]["fn"] for name in names)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def inside_share(columns, bounds):
    """The share of resamples (rows) whose every value lies within its column's bounds, counted in plain Python."""
    rows = list(zip(*columns, strict=True))
    held = sum(all(low <= value <= high for value, (low, high) in zip(row, bounds, strict=True)) for row in rows)
    return held / len(rows)


def bounds_at(columns, level):
    return [(quantile(column, (1 - level) / 2), quantile(column, (1 + level) / 2)) for column in columns]


def test_the_joint_band_equals_an_independent_computation(small):
    """Resample by index lists, rebuild each F1 from raw counts in plain Python, and check the band's definition:
    each field's percentile interval at the smallest level at which all hold together as often as one field's
    95% interval holds alone."""
    old, new = small
    comparison = compare(old, new, resamples=RESAMPLES, seed=3)
    targets = ["invoice_id", "vendor_name", "invoice_date", "total_amount", "line_items"]
    names = comparison.pairing.cases
    before, after = counts_by_name(old), counts_by_name(new)
    estimates = [f1_of(after, names, path) - f1_of(before, names, path) for path in targets]
    draws = [[names[index] for index in row] for row in comparison.indices.tolist()]
    columns = [[f1_of(after, draw, path) - f1_of(before, draw, path) for draw in draws] for path in targets]
    wanted = min(0.95, *(inside_share([column], bounds_at([column], 0.95)) for column in columns))
    band = comparison.joint([f"{path}.f1" for path in targets])
    level = band["invoice_id.f1"].level
    assert 0.95 < level < 1 and {interval.level for interval in band.values()} == {level}
    assert inside_share(columns, bounds_at(columns, level)) >= wanted
    assert inside_share(columns, bounds_at(columns, level - 1e-6)) < wanted  # the smallest such level
    for k, path in enumerate(targets):
        got, (low, high) = band[f"{path}.f1"], bounds_at([columns[k]], level)[0]
        assert got.estimate == pytest.approx(estimates[k], abs=1e-12), path
        assert (got.low, got.high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9)), path


def test_joint_band_by_hand():
    """Two targets, ten resamples, 50% intervals: worked out on paper.

    Each column is a permutation of 0..9, so both have the same percentile interval at every level,
    and at 50% it is [2.25, 6.75]: it holds 4 of 10 resamples alone, so together the band needs 4.
    """
    first = [0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    mirrored = [9.0, 8, 7, 6, 5, 4, 3, 2, 1, 0]  # inside exactly where `first` is: nothing to widen
    low, high, level = joint_band(np.column_stack([first, mirrored]), 0.5)
    assert level == 0.5 and list(low) == [2.25, 2.25] and list(high) == [6.75, 6.75]
    shuffled = [3.0, 4, 5, 6, 0, 1, 2, 7, 8, 9]  # together inside [2.25, 6.75] only in row 3 (3, 6)
    assert inside_share([first, shuffled], bounds_at([first, shuffled], 0.5)) == 0.1
    # rows by their farther value from 4.5: 1.5 (row 3), 2.5 (rows 2, 6, 7), ...: 4 rows need [2, 7],
    # the interval at tail 2/9 of the 9 gaps between ten values, level 1 - 4/9
    low, high, level = joint_band(np.column_stack([first, shuffled]), 0.5)
    assert level == pytest.approx(5 / 9, abs=1e-9)
    assert list(low) == [pytest.approx(2.0, abs=1e-8)] * 2 and list(high) == [pytest.approx(7.0, abs=1e-8)] * 2
    assert inside_share([first, shuffled], list(zip(low, high, strict=True))) == 0.4


def test_a_target_that_never_varies_is_its_value_and_constrains_nothing():
    varying = np.random.default_rng(1).normal(size=400)
    low, high, level = joint_band(np.column_stack([np.full(400, 0.25), varying]), 0.95)
    assert (low[0], high[0]) == (0.25, 0.25)
    assert level == 0.95 and (low[1], high[1]) == tuple(percentile_bounds(varying, 0.95))
    low, high, level = joint_band(np.zeros((5, 2)), 0.95)
    assert level == 0.95 and list(low) == list(high) == [0.0, 0.0]


@pytest.mark.parametrize("seed", range(40))
def test_one_target_is_its_per_field_interval_bit_for_bit(seed):
    """Continuous, tied and lopsided resamples alike: a joint band over one target is `percentile_bounds`."""
    rng = np.random.default_rng(seed)
    resamples = int(rng.integers(20, 3000))
    shape = seed % 3
    if shape == 0:
        column = rng.normal(size=resamples)
    elif shape == 1:  # a discrete F1 difference: a few values, many ties
        column = rng.choice([-0.25, -0.111, 0.0, 0.053], size=resamples, p=[0.3, 0.4, 0.25, 0.05])
    else:  # mostly zero, a long tail: a rare field's errors
        column = np.where(rng.random(resamples) < 0.9, 0.0, -rng.exponential(0.2, resamples))
    confidence = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
    low, high, level = joint_band(column[:, None], confidence)
    alone = percentile_bounds(column, confidence)
    assert level == confidence and (low[0], high[0]) == (alone[0], alone[1])


def save_both(folder, reports):
    """Both runs saved with save_report, as old.json and new.json."""
    return tuple(
        save_report(report, folder / f"{name}.json") for report, name in zip(reports, ("old", "new"), strict=True)
    )


def test_the_command_says_joint_and_records_the_mode(tmp_path, small, capsys):
    old, new = save_both(tmp_path, small)
    rules = ["high(delta(invoice_date.f1)) >= 0", "high(delta(invoice_id.f1)) >= 0", "overall >= 0"]
    args = [str(old), str(new), "--resamples", str(RESAMPLES), *(f"--gate={rule}" for rule in rules)]
    main([*args, "--json", str(tmp_path / "joint.json")])
    out = capsys.readouterr().out
    assert "interval ends: joint 95% over 2 fields" in out and "high of joint interval" in out
    saved = json.loads((tmp_path / "joint.json").read_text(encoding="utf-8"))
    assert saved["interval_mode"] == "joint"
    assert [gate["interval"] for gate in saved["gates"]] == ["joint", "joint", None]
    assert saved["gates"][0]["joint_over"] == 2
    main([*args, "--intervals", "per-field", "--json", str(tmp_path / "alone.json")])
    out = capsys.readouterr().out
    assert "per-field 95% intervals, each alone" in out and "high of per-field interval" in out
    alone = json.loads((tmp_path / "alone.json").read_text(encoding="utf-8"))
    assert alone["interval_mode"] == "per-field" and alone["gates"][0]["interval"] == "per-field"
    assert alone["gates"][0]["measured"] <= saved["gates"][0]["measured"]  # the joint band is the wider


def test_json_output_naming_a_run_is_refused_before_any_work(tmp_path, small, capsys):
    old, new = save_both(tmp_path, small)
    before = new.read_bytes()
    assert main([str(old), str(new), "--json", str(new)]) == EXIT_BAD_INPUT
    assert "is the same file as the new run" in capsys.readouterr().err and new.read_bytes() == before
    link = tmp_path / "link.json"
    link.symlink_to(old)
    assert main([str(old), str(new), "--json", str(link)]) == EXIT_BAD_INPUT
    assert "symbolic link" in capsys.readouterr().err


# --- issue 17: another schema under the same name, rows that do not cover the cases ---------------


def test_runs_of_different_schemas_under_one_class_name_are_refused(tmp_path, small, capsys):
    old, new = small
    data = json.loads(new.model_dump_json())
    for rows in data["detailed_results"]:  # the same class name, one field renamed: another schema
        metadata = rows[0]["metadata"]
        metadata["field_scores"]["invoice_number"] = metadata["field_scores"].pop("invoice_id")
        fields = metadata["comparison"]["confusion_matrix"]["fields"]
        fields["invoice_number"] = fields.pop("invoice_id")
    other = tmp_path / "other.json"
    other.write_text(json.dumps(data), encoding="utf-8")
    code = main([str(save_report(old, tmp_path / "old.json")), str(other), "--resamples", "20"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    assert "different schemas that are both named 'Invoice'" in err
    assert "only in the old run: ['invoice_id']" in err and "only in the new run: ['invoice_number']" in err


@pytest.mark.parametrize("cut", ["detailed_results", "cases"])
def test_a_report_whose_rows_do_not_cover_its_cases_is_refused(tmp_path, small, capsys, cut):
    old, new = small
    data = json.loads(new.model_dump_json())
    data[cut] = data[cut][:-2]
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data), encoding="utf-8")
    code = main([str(save_report(old, tmp_path / "old.json")), str(short), "--resamples", "20"])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT
    cases, rows = (10, 12) if cut == "cases" else (12, 10)
    assert f"{short}: the report holds {cases} cases but {rows} rows of detailed_results" in err


def test_in_memory_report_with_missing_rows_is_refused(small):
    old, new = small
    cut = new.model_copy(update={"detailed_results": new.detailed_results[:-1]})
    with pytest.raises(runs.CompareError, match="12 cases but 11 rows"):
        compare(old, cut, resamples=20)


# --- memory bounded by chunking field paths ------------------------------------------------------


def test_chunked_paths_give_the_same_tables_as_one_chunk(small, monkeypatch):
    whole = compare(*small, resamples=RESAMPLES)
    monkeypatch.setattr(runs, "DRAW_BYTES", RESAMPLES * 2 * 6 * 8 * 3)  # three paths per chunk
    chunked = compare(*small, resamples=RESAMPLES)
    assert len(chunked.paths) > 3
    assert chunked.field_table().equals(whole.field_table())
    assert chunked.overall_table().equals(whole.overall_table())
    targets = [f"{path}.recall" for path in reversed(chunked.paths)]  # out of order: chunks summed again
    assert chunked.joint(targets) == whole.joint(targets)
    assert len(chunked.old_draws.counts.resampled.held) <= 2


def test_many_field_paths_are_held_a_chunk_at_a_time(tmp_path):
    """A results file with 800 field paths (three chunks at 2,000 resamples): the sums held stay within budget."""
    from fieldeval.formats import results

    paths = [f"items.f{index:04d}" for index in range(800)]
    header = results.ResultsHeader(schema="walkthroughs.invoices:Invoice")
    files = []
    for name, wrong in (("old", 0), ("new", 1)):
        with results.ResultsWriter(tmp_path / f"{name}.jsonl", header) as out:
            for document in range(6):
                missed = int(wrong and document == 0)
                counts = {path: results.Counts(tp=1 - missed, fd=missed, fp=missed) for path in paths}
                out.write(results.ResultRow(name=f"d{document}", score=1.0, test_pass=True, counts=counts))
        files.append(tmp_path / f"{name}.jsonl")
    comparison = runs.compare_files(*files, resamples=2000)
    table = comparison.field_table()
    assert len(table) == 800 and (table["delta f1"] < 0).all()
    held = comparison.old_draws.counts.resampled.held
    assert (
        sum(array.nbytes for chunk in held.values() for side in chunk for array in side.values()) <= 2 * runs.DRAW_BYTES
    )
    assert main(
        [str(files[0]), str(files[1]), "--gate", "high(delta(items.f0001.f1)) >= -1", "--gate=overall < 0"]
    ) == (EXIT_FAILED)


# --- how many documents: the power estimate --------------------------------------------------------

FAST = {"simulations": 40, "resamples": 100}


def test_power_grows_with_the_regression_and_the_run(small):
    from fieldeval.compare.power import Baseline, simulate

    baseline = Baseline.of(small[1], "line_items.description.f1")
    assert len(baseline.counts) == 12 and 0 < baseline.value() <= 1
    weak, strong = (simulate(baseline, 12, rate, **FAST) for rate in (0.05, 0.6))
    assert strong.change < weak.change < 0 and strong.power > weak.power
    assert simulate(baseline, 400, 0.05, **FAST).power > weak.power
    assert simulate(baseline, 12, 0.0, **FAST).power == 0  # nothing planted, nothing caught


def test_documents_needed_catch_the_change_and_fewer_do_not(small):
    from fieldeval.compare.power import Baseline, documents_needed, simulate

    baseline = Baseline.of(small[1], "line_items.description.f1")
    needed = documents_needed(baseline, -0.05, **FAST)
    assert needed is not None and needed.power >= 0.8 and needed.change == pytest.approx(-0.05, abs=0.02)
    assert simulate(baseline, needed.documents // 2, needed.rate, **FAST).power < 0.8


def test_five_documents_are_too_few_and_the_command_says_so(tmp_path, small, capsys):
    from fieldeval.commands import power

    old = save_report(small[0], tmp_path / "old.json")
    fast = ["--simulations", "40", "--resamples", "100"]
    assert power.main([str(old), "--target", "invoice_date.f1", "--seed", "1", *fast]) == 0
    out = capsys.readouterr().out
    assert "12 documents; invoice_date.f1 = " in out and "80% power at 12 documents" in out
    assert power.main([str(old), "--target", "invoice_date.f1", "--simulations", "1"]) == EXIT_BAD_INPUT
    assert "--simulations must be 10 to 10,000" in capsys.readouterr().err
    assert power.main([str(old), "--target", "invoice_date.count"]) == EXIT_BAD_INPUT
    assert "METRIC one of precision, recall, f1" in capsys.readouterr().err
    assert power.main([str(old), "--target", "nope.f1"]) == EXIT_BAD_INPUT
    assert "no field path 'nope'" in capsys.readouterr().err


def test_the_gate_simulation_is_reproducible_from_its_seed_and_plants_its_regression():
    from walkthroughs import simulated_gates

    first, again = (simulated_gates.simulate(30, 20, 0.12, master=5, resamples=50) for _ in range(2))
    assert all(np.array_equal(first[mode], again[mode]) for mode in ("per-field", "joint"))
    assert first["change"] == again["change"] < 0
    other = simulated_gates.simulate(30, 20, 0.12, master=6, resamples=50)
    assert other["change"] != first["change"]
    assert simulated_gates.simulate(30, 20, 0.0, master=5, resamples=50)["change"] != first["change"]


# --- the gate reads the interval the table prints ----------------------------------------------------


def write_results(path, counts_by_document, fields):
    """A compact results file whose documents hold the given counts (documents x fields x COUNTS)."""
    from fieldeval.formats import COUNTS, results

    header = results.ResultsHeader(schema="walkthroughs.invoices:Invoice")
    with results.ResultsWriter(path, header) as out:
        for index, rows in enumerate(counts_by_document):
            counts = {
                field: results.Counts(**dict(zip(COUNTS, map(int, row), strict=True)))
                for field, row in zip(fields, rows, strict=True)
            }
            out.write(results.ResultRow(name=f"d{index:03d}", score=1.0, test_pass=True, counts=counts))
    return path


def assert_gates_and_tables_agree(comparison, targets, mode):
    """Every gated row of the field and overall tables prints the interval its gate read, with its verdict."""
    from fieldeval.compare.gates import evaluate_gates, gated_intervals

    rules = [f"high(delta({target})) >= 0" for target in targets]
    results = evaluate_gates(rules, comparison, intervals=mode)
    gated = gated_intervals(results)
    fields = comparison.field_table(gated=gated).set_index("field")
    overall = comparison.overall_table(gated).iloc[0]
    for result, target in zip(results, targets, strict=True):
        row = overall if target == "overall" else fields.loc[target.rsplit(".", 1)[0]]
        assert (row["low"], row["high"]) == (result.change.low, result.change.high), target
        assert result.measured == row["high"] and row["interval"].endswith("gated"), target
        assert (row["verdict"] == "regressed") == (not result.passed), target
        if len(targets) == 1 or mode == "per-field":
            assert result.change == comparison.delta(target), target  # one field: its own interval, bit for bit


def assert_agree_on_every_field(comparison):
    """Every field and the overall score gated at once, both ways, and each gated alone."""
    every = ["overall", *(f"{path}.f1" for path in comparison.paths)]
    for mode in ("joint", "per-field"):
        assert_gates_and_tables_agree(comparison, every, mode)
    for target in every:
        assert_gates_and_tables_agree(comparison, [target], "joint")


def test_gates_and_tables_agree_on_the_walkthrough_comparison():
    """The Compare_Runs walkthrough's 60 simulated invoices: every field gated at once, and each alone."""
    invoices = sim.simulated_invoices()
    cases = sim.simulated_cases(invoices)
    old, new = (
        score_outputs_sync(cases, sim.extract(extractor, invoices), StructuredOutputSimilarity(Invoice))
        for extractor in (sim.BASELINE, sim.CANDIDATE)
    )
    assert_agree_on_every_field(compare(old, new, resamples=500, seed=0))


def test_gates_and_tables_agree_on_the_own_agent_walkthrough_comparison():
    """The "Your own agent" walkthrough's two hand-authored runs of five purchase orders."""
    from fieldeval.files import REPO_ROOT
    from fieldeval.harness.cases import load_cases, load_predictions
    from fieldeval.harness.schema import load_schema

    folder = REPO_ROOT / "examples" / "your_own_agent"
    order = load_schema("purchase_order:PurchaseOrder", directory=folder)
    cases = load_cases(folder / "cases.jsonl", order)
    old, new = (
        score_outputs_sync(cases, load_predictions(folder / name, order, cases), StructuredOutputSimilarity(order))
        for name in ("baseline_answers.jsonl", "predictions_v2.jsonl")
    )
    assert_agree_on_every_field(compare(old, new, resamples=500, seed=0))


@pytest.mark.parametrize("seed", range(12))
def test_gates_and_tables_agree_on_random_pairs_of_runs(tmp_path, seed):
    from walkthroughs import simulated_gates as gates_sim

    rng = np.random.default_rng(seed)
    size = int(rng.integers(5, 60))
    poor, lines = gates_sim.documents(rng, size)
    extra = float(rng.choice([0.0, 0.1, 0.3]))
    fields = gates_sim.FIELDS
    shape = (size, len(fields), -1)
    old = gates_sim.run_counts(rng, poor, lines).reshape(shape)
    new = gates_sim.run_counts(rng, poor, lines, extra, str(rng.choice(fields[:6]))).reshape(shape)
    comparison = runs.compare_files(
        write_results(tmp_path / "old.jsonl", old, fields),
        write_results(tmp_path / "new.jsonl", new, fields),
        resamples=300,
        seed=seed,
    )
    picked = [f"{path}.f1" for path in rng.choice(fields, size=int(rng.integers(1, len(fields) + 1)), replace=False)]
    for mode in ("joint", "per-field"):
        assert_gates_and_tables_agree(comparison, picked, mode)


def test_a_regression_the_table_calls_is_failed_by_its_gate(tmp_path, capsys):
    """Ten claims, the candidate reads the four euro claims as dollars: the field table says `regressed`.

    The band the gates read before (symmetric, `estimate +- c x se`) reached above zero on these
    skewed resamples and passed the gate on the same screen; the gate now reads the table's interval.
    """
    from walkthroughs.simulated_gates import bands, euro_claims

    old, new = euro_claims()
    fields = ("claim_id", "currency")
    files = [
        write_results(tmp_path / f"{name}.jsonl", np.stack([np.repeat(old[:1], 10, axis=0), run], axis=1), fields)
        for name, run in (("old", old), ("new", new))
    ]
    code = main([*map(str, files), "--gate", "high(delta(currency.f1)) >= 0"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("currency"))
    assert code == EXIT_FAILED and "-0.250" in row and "regressed" in row and "95% gated" in row
    gate = next(line for line in out.splitlines() if line.startswith("high(delta(currency.f1))"))
    assert "FAIL" in gate and "high of joint interval" in gate
    assert "joint 95% over 1 field (its own 95% interval, as the tables print it)" in out
    read, _ = bands(old, new, seed=0, resamples=2000)  # compare's defaults
    (low,), (high,) = read["per-field"]
    assert list(map(tuple, read["joint"])) == [(low,), (high,)] and high < 0
    assert read["studentized"][1][0] > 0  # the two disagreed in sign here
    assert f"{low:.3f} {high:.3f}" in " ".join(row.split())
