"""A results file read whole as columns holds exactly what the model reads of each row.

`read_columns` takes the writer's lines apart by their shape and parses the counts of many lines at
once; every other line goes through the model. Whatever the names hold (digits, colons, braces,
quotes, the separators the shape is cut at), the columns must equal the rows `iter_records`
reads, and a bad line must be refused as `iter_records` refuses it, the first one first.
"""

import json
import random

import numpy as np
import pytest

from fieldeval.compare.reading import _distinct_rows, read_results_file
from fieldeval.formats import COUNTS
from fieldeval.formats.results import (
    STATUSES,
    Counts,
    ResultRow,
    ResultsError,
    ResultsHeader,
    ResultsWriter,
    iter_records,
    read_columns,
)

# Path keys a plain split or a careless pattern would cut wrongly: each stays one path.
AWKWARD = [
    "a1",
    "a2",
    "x:{y",
    ':{"tp":',
    'q},"r',
    "},",
    "",
    "ünï cødé",
    "tab\there",
    'quote"inside',
    "back\\slash",
    "line_items.sku",
    "{}",
]
PRINTABLE = [name for name in AWKWARD if name.isprintable()]  # compare refuses other case names


def rows(seed: int, count: int = 400) -> list[ResultRow]:
    generator = random.Random(seed)
    found = []
    for index in range(count):
        status = generator.choices(STATUSES, [85, 5, 5, 5])[0]
        paths = generator.sample(AWKWARD, generator.randrange(len(AWKWARD) + 1))
        counts = {path: Counts(**{key: generator.randrange(300) for key in COUNTS}) for path in paths}
        if generator.random() < 0.02:  # either side of the largest count the writer's shape holds
            counts = {path: Counts(tp=999_999_999 + generator.randrange(2)) for path in paths}
        found.append(
            ResultRow(
                name=f"doc {index} {generator.choice(PRINTABLE)}",
                score=generator.choice([0.0, 1.0, generator.random(), 1e-7]),
                test_pass=True,
                status=status,
                field_scores={generator.choice(AWKWARD): generator.random() for _ in range(generator.randrange(4))},
                counts=counts,
                failures={generator.choice(AWKWARD): {"fd": 1}} if generator.random() < 0.2 else {},
            )
        )
    return found


def write(path, found):
    with ResultsWriter(path, ResultsHeader(schema="m:Model")) as out:
        for row in found:
            out.write(row)
    return path


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_columns_equal_the_records(tmp_path, seed):
    path = write(tmp_path / "run.jsonl", rows(seed))
    records = list(iter_records(path))
    columns = read_columns(path)
    assert list(columns.names) == [record["name"] for record in records]
    assert list(columns.names.values()) == list(range(len(records)))
    assert columns.scores.tolist() == [record["score"] for record in records]
    assert [STATUSES[code] for code in columns.status.tolist()] == [record["status"] for record in records]
    taken = {layout: 0 for layout in range(len(columns.layouts))}
    for row, record in enumerate(records):
        layout = int(columns.layout[row])
        if record["status"] != "scored":
            assert layout == -1
            continue
        fields, paths = columns.layouts[layout]
        assert fields == tuple(record["field_scores"]) and paths == tuple(record["counts"])
        expected = [record["counts"][path][key] for path in paths for key in COUNTS]
        assert columns.counts[layout][taken[layout]].tolist() == expected
        taken[layout] += 1
    assert taken == {layout: len(counts) for layout, counts in enumerate(columns.counts)}


def test_a_run_read_as_columns_holds_each_documents_own_counts(tmp_path):
    path = write(tmp_path / "run.jsonl", rows(4))
    run = read_results_file(path)
    for record in iter_records(path):
        if record["status"] in ("failed", "not_applicable"):
            assert record["name"] in run.unscored and record["name"] not in run.documents
            continue
        document = run.documents[record["name"]]
        assert document.score == record["score"] and document.unreadable == (record["status"] == "unreadable")
        expected = {} if document.unreadable else {p: tuple(v[k] for k in COUNTS) for p, v in record["counts"].items()}
        assert dict(document.counts) == expected
    shapes = run.columns.shapes
    assert len(set(shapes)) == len(shapes)  # each distinct shape held once
    assert list(shapes) == [shapes[number] for number in range(len(shapes))]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"name": "b", "score": 2}', "line 3 (case 'b'), field 'score'"),
        ('{"name": "a", "score": 0.5, "test_pass": true}', "case 'a' repeats line 2"),
        ('{"name": "b", "score": 0.5, "test_pass": true, "counts": {"x": {"tp": -1}}}', "field 'counts.x.tp'"),
        ('{"name": "b", "score": 0.5, "test_pass": true, "counts": {"x": {"tp": 1e400}}}', "line 3"),
        ("[1]", "line 3"),
    ],
)
def test_the_first_bad_line_is_named_as_the_model_names_it(tmp_path, line, message):
    path = write(tmp_path / "run.jsonl", rows(5, count=1))
    good = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(good[1])
    first["name"] = "a"
    later = json.loads(good[1])
    later["name"] = "c"
    later["score"] = -1
    text = [good[0], json.dumps(first, separators=(",", ":")), line, json.dumps(later, separators=(",", ":"))]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(ResultsError) as model:
        list(iter_records(path))
    with pytest.raises(ResultsError) as columns:
        read_columns(path)
    assert str(columns.value) == str(model.value) and message in str(columns.value)


def test_a_count_beyond_64_bits_is_refused_naming_line_case_and_field(tmp_path):
    path = write(tmp_path / "run.jsonl", rows(6, count=1))
    header, line = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    record.update(status="scored", counts={"x": {"tp": 2**64}})
    path.write_text(f"{header}\n{json.dumps(record)}\n", encoding="utf-8")
    with pytest.raises(ResultsError, match=r"line 2 \(case .*\), field 'counts.x'"):
        read_columns(path)


def test_rows_that_share_a_hash_are_still_told_apart():
    """Two different rows whose weighted sums meet modulo 2**64 are two shapes, not one."""
    width = 3
    weights = np.random.default_rng(0).integers(1, 1 << 63, size=width, dtype=np.uint64) | np.uint64(1)
    inverse = pow(int(weights[1]), -1, 1 << 64)
    colliding = (int(weights[0]) * inverse) % (1 << 64)  # colliding * w1 == 1 * w0, modulo 2**64
    counts = np.array([[1, 0, 0], [0, colliding, 0], [1, 0, 0]], dtype=np.uint64)
    keys = (counts * weights).sum(axis=1, dtype=np.uint64)
    assert keys[0] == keys[1]  # the hash alone would merge them
    distinct, of = _distinct_rows(counts)
    assert len(distinct) == 2 and (distinct[of] == counts).all() and of[0] == of[2] != of[1]


@pytest.mark.parametrize("seed", range(3))
def test_distinct_rows_are_numpys(seed):
    counts = np.random.default_rng(seed).integers(0, 3, size=(500, 4)).astype(np.uint8)
    distinct, of = _distinct_rows(counts)
    assert (distinct[of] == counts).all()
    assert sorted(map(tuple, distinct.tolist())) == sorted(map(tuple, np.unique(counts, axis=0).tolist()))


def test_batches_of_any_size_read_the_same(tmp_path, monkeypatch):
    """Counts parsed a batch at a time, in types as small as each batch allows, join up the same."""
    from fieldeval.formats import results

    path = write(tmp_path / "run.jsonl", rows(7))
    whole = read_columns(path)
    monkeypatch.setattr(results, "BATCH", 7)
    batched = read_columns(path)
    assert batched.names == whole.names and batched.layouts == whole.layouts
    for a, b in zip(
        (batched.scores, batched.status, batched.layout, *batched.counts),
        (whole.scores, whole.status, whole.layout, *whole.counts),
        strict=True,
    ):
        assert a.tolist() == b.tolist()
    assert any(counts.dtype != np.uint8 for counts in batched.counts)  # some batch needed a wider type


def test_a_file_with_the_same_names_in_order_holds_the_lookup_it_was_given(tmp_path):
    found = rows(4, 60)
    first = read_columns(write(tmp_path / "a.jsonl", found))
    second = read_columns(write(tmp_path / "b.jsonl", found), names_like=first.names)
    assert second.names is first.names
    assert second.scores.tolist() == first.scores.tolist()


@pytest.mark.parametrize(
    "change",
    ["reordered", "shorter", "longer", "renamed", "not counting up"],
)
def test_names_that_stop_following_the_lookup_are_read_as_the_files_own(tmp_path, change):
    """Whatever the other file's names, the lookup is this file's own: equal to the one read alone."""
    found = rows(5, 60)
    like = {row.name: index for index, row in enumerate(found)}
    if change == "reordered":
        found[10], found[11] = found[11], found[10]
    elif change == "shorter":
        found = found[:40]
    elif change == "longer":
        like = dict(list(like.items())[:40])
    elif change == "renamed":
        found[30] = found[30].model_copy(update={"name": "someone else"})
    else:
        like = {name: index + 1 for name, index in like.items()}
    path = write(tmp_path / "run.jsonl", found)
    alone = read_columns(path)
    followed = read_columns(path, names_like=like)
    assert followed.names == alone.names and list(followed.names) == list(alone.names)
    assert followed.names is not like


def test_a_repeated_name_is_refused_after_the_names_stop_following_the_lookup(tmp_path):
    found = [row.model_copy(update={"name": f"case {index}"}) for index, row in enumerate(rows(6, 30))]
    like = {row.name: index for index, row in enumerate(found)}
    path = write(tmp_path / "run.jsonl", found)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[21] = lines[21].replace('"case 20"', '"case 3"', 1)  # line 22 repeats line 5, where the lookup agreed
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ResultsError) as alone:
        read_columns(path)
    with pytest.raises(ResultsError) as followed:
        read_columns(path, names_like=like)
    assert str(followed.value) == str(alone.value) and "repeats line 5" in str(alone.value)
