"""Several candidates share one draw of the resamples and the baseline's arrays: nothing may change by it.

`compare_candidates` builds, for each candidate, what `compare_runs` builds for it alone, and a
results file's arrays are built a layout at a time: both are checked here against the plain
path, to the last bit, on seeded runs whose documents almost all differ, some lacking a path.
"""

import platform
import random
import sys

import numpy as np
import pytest

from fieldeval.compare.reading import Run, read_results_file, read_run_file
from fieldeval.compare.runs import RATIOS, Sample, compare_candidates, compare_runs, paths_in
from fieldeval.formats.results import Counts, ResultRow, ResultsHeader, ResultsWriter

DOCUMENTS = 300
RESAMPLES = 150
SEED = 11
PATHS = ["invoice_id", "vendor_name", "line_items", "line_items.sku", "total_amount"]


def write_run(path, seed: int, extra: str | None = None, lacking: float = 0.1, large: bool = False, few=False):
    """A results file of seeded scored rows over the same case names; some rows lack a path.

    `large`: some true-positive counts near the largest a file may hold, so the held table needs 32 bits.
    `few`: every path of a document one true positive or one false negative, and two scores: few shapes.
    """
    generator = random.Random(seed)
    with ResultsWriter(path, ResultsHeader(schema="walkthroughs.invoices:Invoice")) as out:
        for index in range(DOCUMENTS):
            counts = {}
            for name in PATHS + ([extra] if extra else []):
                if generator.random() < lacking:
                    continue
                if few:
                    tp = generator.choice([0, 1])
                    counts[name] = Counts(tp=tp, fn=1 - tp)
                    continue
                fa, fd = generator.choice([0, 1]), generator.choice([0, 0, 2])
                tp = generator.randrange(9)
                if large and generator.random() < 0.3:
                    tp = 10**9 - generator.randrange(9)
                counts[name] = Counts(tp=tp, fa=fa, fd=fd, fp=fa + fd, fn=generator.randrange(2))
            score = generator.choice([0.5, 1.0]) if few else generator.random()
            fields = {name.split(".")[0]: 1.0 for name in counts}
            out.write(
                ResultRow(
                    name=f"doc-{index:04d}",
                    score=score,
                    test_pass=True,
                    status="scored",
                    field_scores=fields,
                    counts=counts,
                )
            )
    return read_run_file(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    extras = [None, None, "line_items.description", None]
    return [write_run(folder / f"run-{seed}.jsonl", seed, extra) for seed, extra in enumerate(extras)]


def held_one_by_one(run: Run) -> Run:
    """The same documents held one object each, so every array is built shape by shape."""
    return Run(run.source, {name: run.documents[name] for name in run.documents}, run.unscored)


def test_a_results_files_arrays_equal_those_built_shape_by_shape(runs):
    for run in runs:
        plain = held_one_by_one(run)
        cases = list(reversed(list(run.documents)))[: DOCUMENTS - 20]  # another order, not every case
        paths = paths_in(run, cases)
        assert paths == paths_in(plain, cases)
        wider = [*paths, "only.elsewhere"]  # a path these documents never have counts zero
        fast, slow = Sample.of(run, cases, wider), Sample.of(plain, cases, wider)
        assert np.array_equal(fast.table[fast.shapes], slow.table[slow.shapes])
        assert np.array_equal(fast.matrix, slow.matrix)
        assert fast.matrix.dtype == slow.matrix.dtype == np.int64
        assert fast.table.dtype == np.uint8  # counts below 256 held a byte each, not eight
        assert np.array_equal(fast.scores, slow.scores)


def test_counts_held_small_sum_and_subtract_as_int64(tmp_path):
    """A table held in a small unsigned type gives the int64 sums, counts and changes of one held as int64."""
    run = write_run(tmp_path / "large.jsonl", 5, large=True)
    other = write_run(tmp_path / "small.jsonl", 6)
    plain = held_one_by_one(run)
    cases = list(run.documents)
    paths = paths_in(run, cases)
    fast, slow = Sample.of(run, cases, paths), Sample.of(plain, cases, paths)
    assert fast.table.dtype == np.uint32 and slow.table.dtype == np.int64
    for path in paths:
        assert fast.totals[path].dtype == np.int64 and np.array_equal(fast.totals[path], slow.totals[path])
        assert fast.counts[path].dtype == np.int64 and np.array_equal(fast.counts[path], slow.counts[path])
    # a large count moving to a small one: a change an unsigned subtraction would wrap around
    for old, new in ((run, other), (other, run)):
        quick = compare_runs(old, new, resamples=RESAMPLES, seed=SEED)
        sure = compare_runs(held_one_by_one(old), held_one_by_one(new), resamples=RESAMPLES, seed=SEED)
        assert quick.field_table().equals(sure.field_table())
        assert quick.overall_table().equals(sure.overall_table())
        assert quick.movers(limit=20).equals(sure.movers(limit=20))


def test_runs_with_the_same_names_share_one_name_lookup_and_read_the_same(tmp_path):
    baseline = write_run(tmp_path / "a.jsonl", 1)
    alone = write_run(tmp_path / "b.jsonl", 2)
    shared = read_run_file(tmp_path / "b.jsonl", names_like=baseline)
    assert shared.documents.position is baseline.documents.position
    assert alone.documents.position is not baseline.documents.position
    assert list(shared.documents) == list(alone.documents)
    for name in ("doc-0000", "doc-0150", f"doc-{DOCUMENTS - 1:04d}"):
        assert shared.documents[name] == alone.documents[name]
    quick = compare_runs(baseline, shared, resamples=RESAMPLES, seed=SEED)
    sure = compare_runs(baseline, alone, resamples=RESAMPLES, seed=SEED)
    assert quick.field_table().equals(sure.field_table()) and quick.movers().equals(sure.movers())


def test_runs_with_other_names_or_places_keep_their_own_lookup(tmp_path):
    baseline = write_run(tmp_path / "a.jsonl", 1)
    lines = (tmp_path / "a.jsonl").read_text().splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    variants = {
        "reversed.jsonl": [header, *reversed(rows)],  # the same names at other places
        "fewer.jsonl": [header, *rows[:-1]],  # one name short
        "renamed.jsonl": [header, rows[0].replace("doc-0000", "doc-x"), *rows[1:]],  # one name another
    }
    for file, content in variants.items():
        (tmp_path / file).write_text("".join(content))
        run = read_results_file(tmp_path / file, names_like=baseline)
        own = read_results_file(tmp_path / file)
        assert run.documents.position is not baseline.documents.position, file
        assert list(run.documents) == list(own.documents), file
        assert np.array_equal(run.columns.columns(list(own.documents))[0], own.columns.columns(list(own.documents))[0])


def test_each_candidate_draws_what_it_draws_alone(runs):
    baseline, candidates = runs[0], runs[1:]
    together = compare_candidates(baseline, candidates, resamples=RESAMPLES, seed=SEED)
    assert together[0].old is together[2].old  # the same cases and paths: one baseline sample
    assert together[0].old is not together[1].old  # a candidate with another path: its own
    for shared, candidate in zip(together, candidates, strict=True):
        alone = compare_runs(baseline, candidate, resamples=RESAMPLES, seed=SEED)
        assert shared.paths == alone.paths and shared.pairing == alone.pairing
        targets = ["overall", *(f"{path}.{metric}" for path in alone.paths for metric in RATIOS)]
        for target in targets:
            for mine, theirs in ((shared.old_draws, alone.old_draws), (shared.new_draws, alone.new_draws)):
                assert mine.value(target).tobytes() == theirs.value(target).tobytes(), target
            assert shared.delta(target) == alone.delta(target)
        assert shared.field_table().equals(alone.field_table())
        assert shared.movers(5).equals(alone.movers(5))


def test_candidates_over_other_cases_are_each_drawn_alone(runs, tmp_path):
    fewer = write_run(tmp_path / "fewer.jsonl", 7)
    fewer = Run(fewer.source, {name: fewer.documents[name] for name in list(fewer.documents)[5:]}, {})
    together = compare_candidates(runs[0], [runs[1], fewer], resamples=RESAMPLES, seed=SEED)
    for shared, candidate in zip(together, [runs[1], fewer], strict=True):
        alone = compare_runs(runs[0], candidate, resamples=RESAMPLES, seed=SEED)
        assert shared.resampled_delta("overall").tobytes() == alone.resampled_delta("overall").tobytes()
        assert shared.resampled_delta("total_amount.f1").tobytes() == alone.resampled_delta("total_amount.f1").tobytes()


def test_candidates_whose_documents_share_shapes_draw_what_they_draw_alone(tmp_path):
    """Documents repeating a few shapes are drawn as groups (the path a run of all-different documents skips)."""
    found = [write_run(tmp_path / f"{seed}.jsonl", seed, lacking=0, few=True) for seed in range(3)]
    together = compare_candidates(found[0], found[1:], resamples=RESAMPLES, seed=SEED)
    assert len(together[0].groups.sizes) < DOCUMENTS  # groups, not one document each
    for shared, candidate in zip(together, found[1:], strict=True):
        alone = compare_runs(found[0], candidate, resamples=RESAMPLES, seed=SEED)
        for target in ["overall", *(f"{path}.f1" for path in PATHS)]:
            assert shared.resampled_delta(target).tobytes() == alone.resampled_delta(target).tobytes(), target


def test_a_sample_of_every_case_of_a_one_layout_run_reads_the_runs_own_arrays(tmp_path):
    run = write_run(tmp_path / "a.jsonl", 3, lacking=0)  # every row with every path: one layout
    sample, slow = Sample.whole(run), Sample.whole(held_one_by_one(run))
    assert np.shares_memory(sample.table, run.columns.shapes.layouts[0][3])  # read, not copied
    assert np.array_equal(sample.matrix, slow.matrix) and np.array_equal(sample.scores, slow.scores)
    for path in sample.paths:
        assert np.array_equal(sample.totals[path], slow.totals[path])


def test_freed_heap_pages_are_given_back_with_glibc_and_nothing_is_called_elsewhere(monkeypatch):
    from fieldeval.compare import heap

    heap._trim.cache_clear()
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert heap._trim() is not None
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    heap._trim.cache_clear()
    assert heap._trim() is None
    heap.release_freed_memory()  # no call to make: nothing happens
    heap._trim.cache_clear()


def test_documents_still_being_added_to_hand_out_copies_not_views():
    """Every case read in order is read as a view of held columns; of columns still growing, a copy."""
    from fieldeval.compare.reading import Documents, Shape

    documents = Documents()
    shape = documents.number(Shape("Invoice", (("total_amount", (1, 0, 0, 0, 0, 0)),), frozenset(), False))
    documents.add("a", 0.5, shape)
    scores, _ = documents.columns(["a"])
    documents.add("b", 0.25, shape)  # a view would pin the growing array's buffer: this would raise BufferError
    assert scores.tolist() == [0.5] and documents.columns(["a", "b"])[0].tolist() == [0.5, 0.25]
