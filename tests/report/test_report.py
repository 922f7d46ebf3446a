"""The report command: one self-contained HTML file and a Markdown summary, checked in a real browser.

The browser tests drive the distribution's headless Chromium over its DevTools protocol on
127.0.0.1 (`tests/servers/chromium.py`): under CI=true they must run; elsewhere, without the
browser, they skip with the install line.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re

import pytest
from matplotlib import image
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands.report import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, main
from fieldeval.formats.results import ResultsHeader, ResultsWriter
from fieldeval.harness.reports import save_report
from fieldeval.harness.results import rows_from_report
from fieldeval.harness.scoring import score_outputs_sync
from fieldeval.report.page import PAGE_SIZE, render
from tests.servers.chromium import Browser, chromium_or_skip
from walkthroughs.invoices import Invoice, reference_cases
from walkthroughs.simulated_report import synthetic_content

SCHEMA = "walkthroughs.invoices:Invoice"
GATES = ["--gate", "overall >= 0.5", "--gate", "total_amount.precision >= 0.9"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The reference invoices (`new`), and the same cases predicted perfectly (`old`), saved."""
    folder = tmp_path_factory.mktemp("runs")
    refs = reference_cases()
    cases = [Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth) for ref in refs]
    evaluator = StructuredOutputSimilarity(Invoice)
    new = score_outputs_sync(cases, {ref.name: ref.prediction for ref in refs}, evaluator)
    old = score_outputs_sync(cases, {ref.name: ref.ground_truth for ref in refs}, evaluator)
    save_report(new, folder / "new.json")
    save_report(old, folder / "old.json")
    import stickler

    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    with ResultsWriter(folder / "new.jsonl", ResultsHeader(schema=SCHEMA, failures=True)) as writer:
        for row in rows_from_report(new, spec):
            writer.write(row)
    return folder


@pytest.fixture(scope="module")
def compared(runs):
    """The comparison page and its summary, written by the command as a user runs it."""
    out = io.StringIO()
    argv = [str(runs / "new.json"), "--against", str(runs / "old.json"), "--schema", SCHEMA, *GATES]
    argv += ["--out", str(runs / "report.html"), "--summary", str(runs / "summary.md"), "--resamples", "200"]
    import contextlib

    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, runs / "report.html", (runs / "summary.md").read_text(encoding="utf-8"), out.getvalue()


def test_command_writes_the_page_and_a_short_summary_and_exits_1_on_a_failed_gate(compared):
    code, page, summary, printed = compared
    assert code == EXIT_FAILED  # total_amount precision is 0.667 on the reference invoices
    assert printed == summary and len(summary.splitlines()) < 60
    assert (
        "### Gates: 1 passed, 1 failed" in summary
        and "| total_amount.precision >= 0.9 | 0.667 | new | FAIL |" in summary
    )
    html = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|<link|url\((?!#)""", html)  # nothing to fetch
    for table in ("field-table", "overall-table", "gates-table", "failures-table", "failures-delta-table"):
        assert f'<table id="{table}"' in html, table
    assert "<svg" in html and html.count('<section class="doc">') == 4  # perfect and case-only have none


def test_page_and_summary_say_how_gates_read_interval_ends(runs):
    out = io.StringIO()
    argv = [str(runs / "new.json"), "--against", str(runs / "old.json"), "--schema", SCHEMA, "--resamples", "200"]
    argv += ["--gate", "low(delta(overall)) > -1", "--gate", "high(delta(total_amount.f1)) > -1"]
    argv += ["--out", str(runs / "band.html"), "--summary", str(runs / "band.md")]
    import contextlib

    with contextlib.redirect_stdout(out):
        code = main(argv)
    assert code == EXIT_PASSED, out.getvalue()
    line = "interval ends: joint 95% over 2 fields"
    assert f"\n{line} " in (runs / "band.md").read_text(encoding="utf-8")
    html = (runs / "band.html").read_text(encoding="utf-8")
    assert re.search(rf'<p id="gates-intervals">{re.escape(line)} ', html)


def test_the_page_embeds_each_document_diff_as_inert_json(compared):
    html = compared[1].read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script id="document-data" type="application/json">(.*?)</script>', html, re.S)[1])
    wrong = next(doc for doc in data["documents"] if doc[0] == "wrong")
    kinds = {(leaf[0], leaf[2]) for leaf in wrong[3]}
    assert ("line_items[0]", "below threshold") in kinds and ("invoice_id", "wrong value") in kinds
    assert [doc[0] for doc in data["documents"]][0] == "wrong"  # worst first


def test_results_file_failures_equal_the_saved_report_diffs(runs):
    import stickler

    from fieldeval.attribution.kinds import report_diffs, results_failures, run_failures
    from fieldeval.harness.reports import load_report

    spec = stickler.eval_for(Invoice, match_threshold=0.7)
    stored = results_failures(runs / "new.jsonl")
    assert stored == run_failures(report_diffs(load_report(runs / "new.json"), spec))
    assert stored["wrong"]["line_items"] == {"below threshold": 1}  # and its leaves, counted below it
    assert set(stored["wrong"]) > {"line_items", "line_items.sku"}


def test_single_results_file_report_reads_the_schema_from_its_header(runs, capsys):
    assert main([str(runs / "new.jsonl"), "--out", str(runs / "single.html")]) == EXIT_PASSED
    html = (runs / "single.html").read_text(encoding="utf-8")
    assert '<table id="failures-table"' in html and "keeps no outputs" in html
    assert "### Failures by kind" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{runs}/new.json", "--gate", "overall >= 0.9"], "--gate compares two runs: pass the baseline with --against"),
        (["{runs}/missing.json"], "missing.json: no such file"),
        (["{runs}/new.json", "--against", "{runs}/old.json", "--gate", "overall >>= 1"], "overall >>= 1"),
        (["{runs}/new.json", "--schema", "no_such_module:Model", "--out", "{runs}/x.html"], "no_such_module"),
        (["{runs}/new.json", "--out", "{runs}/new.json"], "is the same file as RUN"),
        (["{runs}/new.json", "--out", "{runs}/x.html", "--summary", "{runs}/new.json"], "is the same file as RUN"),
        (["{runs}/new.json", "--out", "{runs}"], "is a folder"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(runs, capsys, argv, message):
    before = sorted(path.name for path in runs.iterdir())
    assert main([word.format(runs=runs) for word in argv]) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err
    assert sorted(path.name for path in runs.iterdir()) == before


def test_a_10000_document_page_is_one_page_of_html_and_compact_json(tmp_path):
    html = render(synthetic_content())
    assert html.count('<section class="doc">') == PAGE_SIZE
    assert len(html.encode("utf-8")) < 4_000_000  # about 330 bytes a document


@pytest.fixture(scope="module")
def browser(network_guard):
    """One headless Chromium for the module; the tests drive it on 127.0.0.1, allowed while it runs."""
    with network_guard.allowing_loopback(), Browser(chromium_or_skip()) as running:
        yield running


def test_page_renders_with_no_console_errors_and_the_first_screen_shows_table_and_chart(browser, compared):
    browser.open(compared[1])
    assert browser.problems() == []
    boxes = browser.evaluate(
        "[...['field-table', 'interval-chart']].map(id => document.getElementById(id).getBoundingClientRect())"
        ".map(r => [r.left, r.top, r.right, r.bottom])"
    )
    pixels = image.imread(io.BytesIO(browser.screenshot()), format="png")
    height, width = pixels.shape[:2]
    for left, top, right, bottom in boxes:
        assert 0 <= top < height and right <= width  # starts on the first screen
        region = pixels[int(top) : int(min(bottom, height)), int(left) : int(right), :3]
        inked = (region.min(axis=2) < 0.5).mean()  # dark pixels: text, lines, the interval bars
        assert 0.01 < inked < 0.5, (left, top, inked)
    chart = pixels[int(boxes[1][1]) : int(min(boxes[1][3], height)), int(boxes[1][0]) : int(boxes[1][2]), :3]
    grey_or_coloured = ((chart.max(axis=2) - chart.min(axis=2) > 0.2) | (abs(chart - 0.5).max(axis=2) < 0.05)).mean()
    assert grey_or_coloured > 0.001  # the interval bars are drawn in their verdict colours


def test_field_and_kind_filters_show_only_matching_leaves(browser, compared):
    browser.open(compared[1])
    pick = (
        "(id, value) => { const s = document.getElementById(id); s.value = value; "
        "s.dispatchEvent(new Event('change')); }"
    )
    shown = (
        "[...document.querySelectorAll('#documents section.doc')].map(s => "
        "[s.querySelector('h3').firstChild.textContent.trim(), "
        "[...s.querySelectorAll('tbody tr')].map(r => [r.cells[0].textContent, r.cells[1].textContent])])"
    )
    browser.evaluate(f"({pick})('kind-filter', 'below threshold')")
    ((name, leaves),) = browser.evaluate(shown)  # the item, then the leaves that pulled it under
    assert name == "wrong" and leaves[0] == ["line_items[0]", "below threshold"] and len(leaves) > 1
    assert all(path.startswith("line_items[0].") and kind == "below threshold" for path, kind in leaves[1:])
    browser.evaluate(f"({pick})('kind-filter', ''); ({pick})('field-filter', 'total_amount')")
    documents = browser.evaluate(shown)
    assert sorted(name for name, _ in documents) == ["amount-off", "wrong"]
    assert all(path == "total_amount" for _, leaves in documents for path, _ in leaves)
    assert browser.problems() == []


def test_tables_are_readable_with_javascript_off(browser, compared):
    browser.call("Emulation.setScriptExecutionDisabled", value=True)
    try:
        browser.open(compared[1])
        rows = browser.evaluate("1")  # evaluation still runs through the protocol; the page's own script did not
        assert rows == 1
        text = browser.call("Runtime.evaluate", expression="document.body.innerText", returnByValue=True)["result"][
            "value"
        ]
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", value=False)
    assert "Failures by kind" in text and "line_items[0]" in text and "page 1 of" not in text


def test_a_10000_document_page_opens_paged(browser, tmp_path):
    page = tmp_path / "large.html"
    page.write_text(render(synthetic_content()), encoding="utf-8")
    seconds = browser.open(page)
    assert browser.problems() == []
    assert browser.evaluate("document.querySelectorAll('#documents section.doc').length") == PAGE_SIZE
    assert browser.evaluate("document.getElementById('page-label').textContent") == "page 1 of 200 (10000 document(s))"
    browser.evaluate("document.getElementById('next').click()")
    assert browser.evaluate("document.querySelector('#documents h3').firstChild.textContent.trim()") == "doc-00050"
    print(f"10,000-document page: {page.stat().st_size:,} bytes, loaded in {seconds:.2f} s")


def test_every_document_on_the_page_lists_leaves_whose_costs_add_up_to_what_it_lost(compared):
    html = compared[1].read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script id="document-data" type="application/json">(.*?)</script>', html, re.S)[1])
    assert data["columns"][-1] == "cost"
    for name, score, _passed, leaves in data["documents"]:
        rows = [leaf for leaf in leaves if not leaf[7]]  # an item's leaves (with a share) are in the item's cost
        assert sum(float(leaf[8]) for leaf in rows) == pytest.approx(1 - score, abs=0.0005 * (len(rows) + 1)), name


HOSTILE = "po-</script><script>alert(1)</script>"


def test_summary_is_safe_to_paste_and_the_page_shows_a_partial_leaf(tmp_path):
    """A case name with markup or a `|` stays text in its cell; a name one letter off is listed."""
    truth = reference_cases()[0].ground_truth.model_copy(update={"vendor_name": "Bruno Keller"})
    names = [HOSTILE, "claim-07 | *draft*"]
    cases = [Case(name=name, input="x", expected_output=truth) for name in names]
    evaluator = StructuredOutputSimilarity(Invoice)
    got = truth.model_copy(update={"vendor_name": "Bruno Kellner"})
    save_report(score_outputs_sync(cases, {name: got for name in names}, evaluator), tmp_path / "new.json")
    save_report(score_outputs_sync(cases, {name: truth for name in names}, evaluator), tmp_path / "old.json")
    argv = [str(tmp_path / "new.json"), "--against", str(tmp_path / "old.json"), "--schema", SCHEMA]
    argv += ["--out", str(tmp_path / "r.html"), "--summary", str(tmp_path / "s.md"), "--resamples", "200"]
    import contextlib

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(argv) == EXIT_PASSED
    summary = (tmp_path / "s.md").read_text(encoding="utf-8")
    assert "<script>" not in summary and "&lt;/script>&lt;script>alert(1)&lt;/script>" in summary
    assert "claim-07 \\| \\*draft\\*" in summary
    table = [
        line
        for line in summary.split("### What got worse where")[1].split("###")[0].splitlines()
        if line.startswith("|")
    ]
    cells = [len(re.findall(r"(?<!\\)\|", line)) for line in table]
    assert len(table) == 3 and len(set(cells)) == 1  # header, rule and the one row: no cell broke out
    assert "| vendor_name | partial | 0 | 2 | 2 |" in summary
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script id="document-data" type="application/json">(.*?)</script>', html, re.S)[1])
    assert HOSTILE not in html  # escaped in the markup and in the JSON block
    for _name, score, _passed, leaves in data["documents"]:
        ((path, _field, kind, expected, shown, _comparator, value, _share, cost),) = leaves
        assert (path, kind, expected, shown) == ("vendor_name", "partial", "Bruno Keller", "Bruno Kellner")
        assert value == f"{12 / 13:.3f}" and cost == f"{1 - score:.3f}" == "0.015"


def test_a_markdown_cell_holds_any_text_on_one_line():
    import pandas as pd

    from fieldeval.report.summary import inline, markdown_table

    assert inline("a|b\nc\r\nd") == "a\\|b c d"
    assert (
        inline("line_items") == "line_items"
        and inline("_draft_ [x](y) `z` a&b") == "\\_draft\\_ \\[x\\](y) \\`z\\` a&amp;b"
    )
    table = markdown_table(pd.DataFrame({"value": ["one | two\nthree", HOSTILE]})).splitlines()
    assert table[2:] == ["| one \\| two three |", "| po-&lt;/script>&lt;script>alert(1)&lt;/script> |"]


def test_when_the_summary_cannot_be_written_the_page_is_not_written_either(runs, monkeypatch, capsys):
    """The page is staged first; a full disk at the summary leaves both old files byte for byte, nothing beside them."""
    folder = runs / "both-or-neither"
    folder.mkdir()
    old = {"page.html": b"<p>the old page</p>", "summary.md": b"the old summary"}
    for name, data in old.items():
        (folder / name).write_bytes(data)
    real_open = os.open

    def disk_full_at_the_summary(path, *args, **kwargs):
        if os.path.basename(path).startswith(".summary.md."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", disk_full_at_the_summary)
    argv = [str(runs / "new.json"), "--against", str(runs / "old.json"), "--schema", SCHEMA, "--resamples", "200"]
    code = main([*argv, "--out", str(folder / "page.html"), "--summary", str(folder / "summary.md")])
    monkeypatch.undo()
    assert code == EXIT_BAD_INPUT
    assert f"cannot write {folder / 'summary.md'}: No space left on device" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == old
