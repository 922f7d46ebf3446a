"""Compare on a larger random run equals a straightforward reference, bit for bit.

The comparison holds documents as columns, sums counts per group of documents that share them
and takes results lines apart without parsing all of them. The reference here does none of
that: it reads every row through the `ResultRow` model, pairs cases by name in a loop, keeps a
counts matrix per document and gathers every resample (`scores[indices].mean()`, `counts[indices].sum()`),
as the comparison did before. Every interval, table cell and movers row must be the same float.
"""

import random

import numpy as np
import pytest

from fieldeval.compare import bootstrap
from fieldeval.compare.runs import compare_files
from fieldeval.formats import COUNTS
from fieldeval.formats.results import Counts, ResultRow, ResultsHeader, ResultsWriter, iter_records, iter_results

DOCUMENTS = 1_500
RESAMPLES = 400
SEED = 5
PATHS = ["invoice_id", "vendor_name", "line_items", "line_items.sku", "line_items.unit_price", "total_amount"]


def random_rows(seed: int, extra_path: str | None) -> list[ResultRow]:
    """Seeded rows: most scored with varied counts (some repeating), a few unreadable, failed or without truth."""
    generator = random.Random(seed)
    rows = []
    for index in range(DOCUMENTS):
        name = f"case-{index:05d}" if index % 50 else f'cas\u00e9 "{index}"'  # a name with escapes in the file
        status = generator.choices(["scored", "unreadable", "failed", "not_applicable"], [90, 4, 3, 3])[0]
        counts = {}
        for path in PATHS + ([extra_path] if extra_path else []) if status == "scored" else []:
            if generator.random() < 0.05:
                continue  # a path this document lacks
            fa, fd = generator.choice([0, 0, 1]), generator.choice([0, 0, 0, 1, 2])
            counts[path] = Counts(tp=generator.randrange(7), fa=fa, fd=fd, fp=fa + fd, fn=generator.choice([0, 0, 1]))
        score = round(generator.random(), generator.choice([2, 17])) if status == "scored" else 0.0
        rows.append(
            ResultRow(
                name=name,
                score=score,
                test_pass=score > 0.5,
                status=status,
                field_scores={path.split(".")[0]: generator.random() for path in counts},
                counts=counts,
                failures={"line_items": {"fd": 1}} if generator.random() < 0.05 else {},
            )
        )
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("identity")
    old, new = random_rows(1, None), random_rows(2, "line_items.description")
    random.Random(3).shuffle(new)  # the new run in another order, some cases in one run only
    paths = folder / "old.jsonl", folder / "new.jsonl"
    for path, rows in zip(paths, (old[:-7], new[4:]), strict=True):
        with ResultsWriter(path, ResultsHeader(schema="walkthroughs.invoices:Invoice")) as out:
            for row in rows:
                out.write(row)
    return paths


def reference(old_path, new_path):
    """Scores and counts per paired document, read through the model, and every resample gathered."""
    runs = [
        {row.name: row for row in iter_results(path) if row.status in ("scored", "unreadable")}
        for path in (old_path, new_path)
    ]
    cases = [name for name in runs[0] if name in runs[1]]
    paths: list[str] = []
    for run in runs:
        for name in cases:
            paths += [path for path in run[name].counts if path not in paths]
    scores = [np.array([run[name].score for name in cases]) for run in runs]
    counts = [
        np.array(
            [[getattr(run[name].counts.get(path, Counts()), key) for path in paths for key in COUNTS] for name in cases]
        )
        for run in runs
    ]
    indices = np.random.default_rng(SEED).integers(0, len(cases), size=(RESAMPLES, len(cases)))
    return cases, paths, scores, counts, indices


def reference_metric(sums: np.ndarray, metric: str) -> np.ndarray:
    tp, fp, fn = (sums[..., COUNTS.index(key)].astype(float) for key in ("tp", "fp", "fn"))
    precision = np.divide(tp, tp + fp, out=np.zeros_like(tp), where=(tp + fp) > 0)
    recall = np.divide(tp, tp + fn, out=np.zeros_like(tp), where=(tp + fn) > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros_like(tp), where=(precision + recall) > 0)
    return {"precision": precision, "recall": recall, "f1": f1}[metric]


@pytest.mark.parametrize(("chunk", "piece"), [(bootstrap.CHUNK_ELEMENTS, bootstrap.PRODUCT_PIECE), (3_001, 7)])
def test_every_interval_and_table_equals_the_reference(files, monkeypatch, chunk, piece):
    monkeypatch.setattr(bootstrap, "CHUNK_ELEMENTS", chunk)
    monkeypatch.setattr(bootstrap, "PRODUCT_PIECE", piece)
    comparison = compare_files(*files, resamples=RESAMPLES, seed=SEED)
    cases, paths, scores, counts, indices = reference(*files)
    assert list(comparison.pairing.cases) == cases and list(comparison.paths) == paths
    tail = (1 - comparison.confidence) / 2

    drawn = [values[indices].mean(axis=1) for values in scores]
    change = comparison.delta("overall")
    assert (change.estimate, change.low, change.high) == (
        scores[1].mean() - scores[0].mean(),
        *np.quantile(drawn[1] - drawn[0], [tail, 1 - tail]),
    )
    width = len(COUNTS)
    fields = comparison.field_table().set_index("field")
    for index, path in enumerate(paths):
        columns = slice(index * width, (index + 1) * width)
        per_document = [matrix[:, columns] for matrix in counts]
        for metric in ("precision", "recall", "f1"):
            full = [reference_metric(values.sum(axis=0), metric) for values in per_document]
            resampled = [reference_metric(values[indices].sum(axis=1), metric) for values in per_document]
            change = comparison.delta(f"{path}.{metric}")
            expected = (full[1] - full[0], *np.quantile(resampled[1] - resampled[0], [tail, 1 - tail]))
            assert (change.estimate, change.low, change.high) == expected, (path, metric)
            assert (fields.loc[path, f"old {metric}"], fields.loc[path, f"new {metric}"]) == tuple(full)
        moved = (per_document[0] != per_document[1]).any(axis=1)
        assert fields.loc[path, "documents changed"] == moved.sum(), path

    deltas = scores[1] - scores[0]
    moved = (counts[0] != counts[1]).any(axis=1) | (deltas != 0)
    top = sorted(np.flatnonzero(moved), key=lambda position: -abs(deltas[position]))[:25]  # sorted() is stable
    movers = comparison.movers(limit=25)
    assert list(movers["case"]) == [cases[position] for position in top]
    assert list(movers["delta"]) == [deltas[position] for position in top]


def test_the_results_reader_reads_what_the_model_reads(files):
    """Lines taken apart by the shape's groups and lines read by the parser give the same rows."""
    from fieldeval.formats.results import STATUSES, read_columns

    for path in files:
        expected = [
            (
                record["name"],
                record["score"],
                record["status"],
                tuple(record["field_scores"]) if record["status"] == "scored" else None,
                tuple(values[count] for values in record["counts"].values() for count in COUNTS)
                if record["status"] == "scored"
                else None,
                tuple(record["counts"]) if record["status"] == "scored" else None,
            )
            for record in iter_records(path)
        ]
        columns = read_columns(path)
        taken = [0] * len(columns.layouts)
        found = []
        for name, row in columns.names.items():
            layout = int(columns.layout[row])
            fields = paths = counts = None
            if layout >= 0:
                fields, paths = columns.layouts[layout]
                counts = tuple(columns.counts[layout][taken[layout]].tolist())
                taken[layout] += 1
            status = STATUSES[columns.status[row]]
            found.append((name, float(columns.scores[row]), status, fields, counts, paths))
        assert found == expected
