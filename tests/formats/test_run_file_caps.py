"""Results files of any length are told apart from saved reports, and each part of a run file that is
read whole is bounded: the results header, a results row and a saved report, each refused before
it is parsed, naming the file and the cap."""

import json

import pytest

from fieldeval.commands import compare, report
from fieldeval.compare.reading import is_results_file, read_run_file
from fieldeval.formats import limits
from fieldeval.formats.results import ResultRow, ResultsError, ResultsHeader, iter_results, read_header
from fieldeval.harness.reports import load_report, load_run_info
from tests.size_caps import no_parsing, small_cap

HEADER = ResultsHeader(schema="receipts:Receipt").model_dump(by_alias=True)
ROW = ResultRow(name="r-1", score=0.5, test_pass=False).model_dump(mode="json")


def results_file(path, header=None, rows=(ROW,), *, sort_keys=False):
    lines = [json.dumps(header or HEADER, sort_keys=sort_keys)] + [json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def with_cases(count):
    """A header whose run lists `count` cases, as score writes it: it grows with the run."""
    source = {"origin": "predictions", "provider": None, "model_id": None, "endpoint": None, "file": "p.jsonl"}
    cases = {f"case-{index:06d}": source for index in range(count)}
    return {**HEADER, "run": {"schema": "receipts:Receipt", "cases": cases}}


# --- telling a results file from a saved report ---------------------------------------------------


@pytest.mark.parametrize("cases", [0, 1_200, 20_000])
def test_a_results_file_is_told_by_its_header_whatever_its_length(tmp_path, cases):
    path = results_file(tmp_path / "run.jsonl", with_cases(cases))
    assert is_results_file(path)
    assert [row.name for row in iter_results(path)] == ["r-1"]


def test_a_header_with_sorted_keys_is_still_a_results_header(tmp_path):
    path = results_file(tmp_path / "run.jsonl", with_cases(2_000), sort_keys=True)  # `format` after `evaluator`
    assert is_results_file(path)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "{\n",
        '{\n  "format": "structured-output-results"\n}\n',  # a saved report is indented: its first line is `{`
        '{"overall_score": 0.5, "cases": []}',  # one line, no `format`
        '{"format": "another-format", "version": 1}\n',
        '{"run": {"format": "structured-output-results"}}\n',  # not a top-level member
        '["format", "structured-output-results"]\n',
        '{"format" "structured-output-results"}\n',
        '{"format": "structured-output-results"',  # cut short
        '"structured-output-results"\n',
        "\xff\xfe not text",
    ],
)
def test_anything_else_is_not_a_results_file(tmp_path, text):
    path = tmp_path / "run.json"
    path.write_bytes(text.encode("latin-1") if text.startswith("\xff") else text.encode("utf-8"))
    assert not is_results_file(path)


def test_a_one_line_report_is_told_apart_without_reading_past_the_header_cap(tmp_path, monkeypatch):
    small_cap(monkeypatch, "HEADER", 1 << 16)
    path = tmp_path / "run.json"
    path.write_text('{"overall_score": 0.5, "scores": [' + "0.5, " * 100_000 + '0.5], "cases": []}')
    reads = []
    real_open = type(path).open

    def counting_open(self, *args, **kwargs):
        file = real_open(self, *args, **kwargs)
        read = file.read
        file.read = lambda size=-1: reads.append(len(chunk := read(size))) or chunk
        return file

    monkeypatch.setattr(type(path), "open", counting_open)
    assert not is_results_file(path)
    assert 0 < sum(reads) <= 1 << 16


# --- the results header and rows ------------------------------------------------------------------


def test_a_header_line_over_its_cap_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    path = results_file(tmp_path / "run.jsonl", with_cases(100))
    small_cap(monkeypatch, "HEADER", 4 << 10)
    no_parsing(monkeypatch, over=0)
    with pytest.raises(ResultsError) as caught:
        read_header(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: line 1: larger than the 4 KiB cap on a results file's header line")
    assert "re-score the run in parts of fewer cases" in message and "REFERENCE.md" in message


def test_a_header_line_at_its_cap_is_read(tmp_path, monkeypatch):
    path = results_file(tmp_path / "run.jsonl", with_cases(100))
    first = path.read_bytes().split(b"\n")[0] + b"\n"
    small_cap(monkeypatch, "HEADER", len(first))
    assert len(read_header(path).run["cases"]) == 100


def test_a_1_gib_results_header_is_refused_by_the_command_at_the_cap_without_reading_it_all(
    tmp_path, monkeypatch, capsys
):
    small_cap(monkeypatch, "HEADER", 1 << 20)  # the default's behaviour, at a size a test reads quickly
    good = results_file(tmp_path / "old.jsonl")
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps(HEADER)[:-1] + ', "pad": "', encoding="utf-8")
    with path.open("r+b") as file:
        file.truncate(1 << 30)  # no data written: the header never ends
    no_parsing(monkeypatch)
    assert compare.main([str(good), str(path)]) == 2
    err = capsys.readouterr().err
    assert "new.jsonl: line 1: larger than the 1 MiB cap on a results file's header line, so it was not read" in err
    assert "re-score the run in parts of fewer cases" in err


def test_a_row_line_over_its_cap_is_refused_naming_the_line(tmp_path, monkeypatch):
    long_reason = dict(ROW, name="r-2", reason="x" * 5_000)
    path = results_file(tmp_path / "run.jsonl", rows=(ROW, long_reason))
    small_cap(monkeypatch, "ROW", 4 << 10)
    no_parsing(monkeypatch, over=4 << 10)
    with pytest.raises(
        ResultsError, match=r"run.jsonl: line 3: larger than the 4 KiB cap on one row of a results file"
    ):
        list(iter_results(path))


# --- a saved report -------------------------------------------------------------------------------


@pytest.fixture
def huge_report(tmp_path):
    """A saved report's opening, made 1 GiB long without writing the data (a sparse file)."""
    path = tmp_path / "huge.json"
    path.write_text('{\n  "overall_score": 0.5,\n  "cases": [', encoding="utf-8")
    with path.open("r+b") as file:
        file.truncate(1 << 30)
    return path


def test_compare_refuses_a_saved_report_over_the_cap_before_reading_it(huge_report, tmp_path, monkeypatch, capsys):
    good = results_file(tmp_path / "old.jsonl")
    no_parsing(monkeypatch)
    assert compare.main([str(good), str(huge_report)]) == 2
    err = capsys.readouterr().err
    assert f"{huge_report}: 1 GiB, over the 512 MiB cap on a saved report, so it was not read" in err
    with pytest.raises(ValueError, match="over the 512 MiB cap on a saved report"):
        read_run_file(huge_report)


def test_report_refuses_a_saved_report_over_the_cap_before_reading_it(huge_report, monkeypatch, capsys):
    no_parsing(monkeypatch)
    assert report.main([str(huge_report), "--schema", "walkthroughs.invoices:Invoice"]) == 2
    assert "over the 512 MiB cap on a saved report, so it was not read" in capsys.readouterr().err
    for read in (load_report, load_run_info):
        with pytest.raises(ValueError, match="over the 512 MiB cap on a saved report"):
            read(huge_report)


def test_a_saved_report_at_its_cap_is_read_and_one_byte_past_it_is_not(tmp_path, monkeypatch):
    from strands_evals.evaluators import StructuredOutputSimilarity

    from fieldeval.harness.reports import save_report
    from fieldeval.harness.scoring import score_outputs_sync
    from walkthroughs import simulated_runs as sim
    from walkthroughs.invoices import Invoice

    invoices = sim.simulated_invoices()[:3]
    cases = sim.simulated_cases(invoices)
    scored = score_outputs_sync(cases, sim.extract(sim.BASELINE, invoices), StructuredOutputSimilarity(Invoice))
    path = save_report(scored, tmp_path / "run.json")
    small_cap(monkeypatch, "RUN", path.stat().st_size)
    assert len(read_run_file(path).documents) == 3 and len(load_report(path).cases) == 3
    with path.open("a", encoding="utf-8") as file:
        file.write(" ")  # still the same JSON
    with pytest.raises(ValueError, match="over the .* cap on a saved report"):
        read_run_file(path)
    with pytest.raises(ValueError, match="over the .* cap on a saved report"):
        load_report(path)


# --- the one table --------------------------------------------------------------------------------


def test_the_reference_lists_every_cap_as_the_code_has_it():
    from fieldeval.files import REPO_ROOT

    text = (REPO_ROOT / "examples" / "your_own_agent" / "REFERENCE.md").read_text(encoding="utf-8")
    table = text[text.index("### Size caps") :]
    rows = [line.split("|")[1:3] for line in table.splitlines() if line.startswith("| ") and "MiB" in line]
    listed = {" ".join(what.split()): cap.strip() for what, cap in rows}
    caps = {name: getattr(limits, name) for name in ("EXCHANGE", "STREAM", "HEADER", "ROW", "RUN")}
    assert sorted(set(listed.values())) == sorted({limits.size_text(cap.bytes) for cap in caps.values()})
    for words, cap in (
        ("a cassette (one exchange file)", caps["EXCHANGE"]),
        ("a cassette `record` is about to write", caps["EXCHANGE"]),
        ("what a model streams for one case, as compact JSON of its events", caps["STREAM"]),
        ("a results file's header line (it lists every case)", caps["HEADER"]),
        ("one row line of a results file", caps["ROW"]),
        ("a saved report (`score --out`), read whole", caps["RUN"]),
    ):
        assert listed[words] == limits.size_text(cap.bytes), words
