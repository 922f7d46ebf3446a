"""`report --against BASELINE RUN RUN ...`: the page and the summary of several candidates, on constructed runs.

The runs are built by `tests/candidate_runs.py`, from the simulated
baseline extractor's outputs: `copy` (the same outputs, the same model), `small` (the same outputs
from a cheaper model), `tiny` (cheapest, `invoice_date` left empty on every second invoice),
`huge` (the ground truth from the dearest model) and `odd` (the baseline's outputs from a model
the price table does not list). Each is scored by the real scorer and saved by the project's own
writer with its provenance, then reported by the command. The browser tests drive headless
Chromium on 127.0.0.1 (`tests/servers/chromium.py`); under CI=true they must run.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from strands_evals import Case
from strands_evals.evaluators import StructuredOutputSimilarity

from fieldeval.commands.report import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, main
from fieldeval.harness.reports import save_report
from fieldeval.harness.scoring import score_outputs_sync
from tests.candidate_runs import COST, DOCUMENTS, LATENCY_MS, RUNS, SCHEMA, write_runs
from tests.servers.chromium import Browser, chromium_or_skip
from walkthroughs.invoices import Invoice, reference_cases

ONE = Path(__file__).parent / "one_run"  # written by the code before the report took several runs, on these runs
ONE_ARGS = [
    *("new.json", "--against", "old.json", "--schema", SCHEMA, "--resamples", "200"),
    *("--gate", "overall >= 0.5", "--gate", "total_amount.precision >= 0.9"),
    *("--out", "page.html", "--summary", "summary.md"),
]


def save_reference_runs(folder: Path) -> None:
    """The reference invoices as predicted (`new.json`) and predicted perfectly (`old.json`), saved."""
    refs = reference_cases()
    cases = [Case(name=ref.name, input=ref.broken, expected_output=ref.ground_truth) for ref in refs]
    evaluator = StructuredOutputSimilarity(Invoice)
    save_report(score_outputs_sync(cases, {ref.name: ref.prediction for ref in refs}, evaluator), folder / "new.json")
    save_report(score_outputs_sync(cases, {ref.name: ref.ground_truth for ref in refs}, evaluator), folder / "old.json")


def run_command(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


def test_one_run_writes_the_page_and_summary_it_wrote_before_byte_for_byte(tmp_path, monkeypatch):
    """The files under one_run/ are what `report` wrote, with these arguments on these runs, before it took
    several runs."""
    save_reference_runs(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, printed = run_command(ONE_ARGS)
    assert code == EXIT_FAILED  # total_amount precision is 0.667 on the reference invoices
    assert (tmp_path / "page.html").read_bytes() == (ONE / "page.html").read_bytes()
    assert (tmp_path / "summary.md").read_bytes() == (ONE / "summary.md").read_bytes()
    assert printed.encode() == (ONE / "summary.md").read_bytes()


# Several runs ---------------------------------------------------------------------------------------

RESAMPLES = 300


@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    """The constructed runs, saved as reports, and the price table."""
    return write_runs(tmp_path_factory.mktemp("candidates"), RUNS)


EVERY = ["copy.json", "small.json", "tiny.json", "huge.json", "odd.json"]
SEVERAL = ["--against", "big.json", *EVERY, "--prices", "prices.json", "--resamples", str(RESAMPLES)]


@pytest.fixture()
def project(candidates, monkeypatch):
    monkeypatch.chdir(candidates)
    return candidates


@pytest.fixture(scope="module")
def written(candidates):
    """The page and the summary of every run against `big`, written by the command as a user runs it."""
    with contextlib.chdir(candidates):
        code, printed = run_command([*SEVERAL, "--out", "several.html", "--summary", "several.md"])
    summary = (candidates / "several.md").read_text(encoding="utf-8")
    return code, candidates / "several.html", summary, printed


def summary_rows(summary: str) -> dict[str, list[str]]:
    """The leaderboard's rows in the summary, by run: each cell as Markdown shows it."""
    table = summary.split("### Leaderboard")[1].split("\n\n")[1].splitlines()
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = [cell.strip().replace("\\", "") for cell in re.split(r"(?<!\\)\|", line.strip("|"))]
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return rows


def test_the_summary_shows_the_leaderboard_the_constructed_truth_implies(written):
    code, _page, summary, printed = written
    assert code == EXIT_PASSED and printed == summary
    rows = summary_rows(summary)
    assert list(rows) == ["big.json (baseline)", *EVERY]
    assert list(rows["tiny.json"]) == [
        "run", "model", "overall change", "regressed", "improved", "worst field",
        "cost/1,000 docs", "latency p50 s", "p95 s", "frontier",
    ]  # fmt: skip
    for run in ("copy.json", "small.json", "odd.json"):  # the baseline's own outputs: nothing moved
        assert rows[run]["overall change"] == "+0.000 [+0.000, +0.000]" and rows[run]["regressed"] == "0"
    tiny, huge = rows["tiny.json"], rows["huge.json"]
    assert (tiny["regressed"], tiny["improved"], tiny["worst field"]) == ("1", "0", "invoice_date")
    assert tiny["overall change"].startswith("-") and huge["overall change"].startswith("+")
    assert huge["regressed"] == "0" and int(huge["improved"]) >= 2
    for run, model in RUNS.items():
        row = rows[f"{run}.json" + (" (baseline)" if run == "big" else "")]
        assert row["model"] == model
        expected = f"{COST[model]:,.4f}" if model in COST else "not priced"
        assert row["cost/1,000 docs"] == expected
        median = (LATENCY_MS[model] + 10 * (DOCUMENTS - 1) / 2) / 1000  # latencies rise by 10 ms a case
        assert float(row["latency p50 s"]) == pytest.approx(median, abs=0.0051)  # printed to two decimals
    frontier = {run: row["frontier"] for run, row in rows.items()}
    assert frontier == {
        "big.json (baseline)": "no", "copy.json": "no", "small.json": "yes", "tiny.json": "yes",
        "huge.json": "yes", "odd.json": "not priced",
    }  # fmt: skip
    assert "**Recommended: small.json: no field regressed, 92% cheaper than big.json per 1,000 documents**" in summary
    assert "Not priced, so not placed: odd.json: not in the price table: odd-0" in summary


def test_page_and_summary_print_the_numbers_compare_prints_for_the_same_runs(written, project, capsys):
    from fieldeval.commands.compare import main as compare

    assert compare(["big.json", *EVERY, "--prices", "prices.json", "--resamples", str(RESAMPLES)]) == EXIT_PASSED
    printed = capsys.readouterr().out
    html = written[1].read_text(encoding="utf-8")
    for run, row in summary_rows(written[2]).items():
        change = row["overall change"]
        if change != "baseline":
            delta, interval = change.split(" ", 1)
            assert re.search(rf"{re.escape(run)} .*{re.escape(delta)} +{re.escape(interval)}", printed), run
            assert f"{run}: {row['cost/1,000 docs']}, {change}" in html or run == "odd.json"
    recommended = re.search(r"^Recommended: (.*)$", printed, re.M)[1]
    assert f"Recommended: {recommended}" in html


def test_the_page_draws_each_priced_run_and_maps_each_field_by_candidate(written):
    html = written[1].read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|<link|url\((?!#)""", html)  # nothing to fetch
    chart = html.split('<div id="cost-chart">')[1].split("</svg>")[0]
    points = sorted(int(n) for n in re.findall(r'<g id="cost-point-(\d+)"', chart))
    assert points == [0, 1, 2, 3, 4]  # the baseline and the four priced candidates; odd (row 5) is not placed
    assert len(re.findall(r'<g id="cost-interval-(\d+)"', chart)) == 4  # the baseline has no interval
    not_priced = html.split('<ul id="not-priced">')[1].split("</ul>")[0]
    assert "odd.json: not in the price table: odd-0" in not_priced and "small.json" not in not_priced
    placed = html.split('<ul id="placed">')[1].split("</ul>")[0]
    assert "odd.json" not in placed and "small.json: 0.3750, +0.000 [+0.000, +0.000], on the frontier" in placed
    assert "<strong>recommended</strong>" in placed.split("small.json")[1].split("</li>")[0]
    grid = html.split('<table id="change-map">')[1].split("</table>")[0]
    header = re.findall(r"<th>([^<]*)</th>", grid.split("</thead>")[0])
    assert header == ["target", *EVERY]
    rows = {
        re.search(r'<th scope="row">([^<]*)</th>', row)[1]: re.findall(r'<td class="cell ([^"]*)"><span class="mark">'
                                                                       r"([^<]*)</span>[^<]*<br>([^<]*)</td>", row)
        for row in grid.split("<tbody>")[1].split("</tr>")[:-1]
    }  # fmt: skip
    assert list(rows)[0] == "overall" and "invoice_date.f1" in rows and len(rows) > 5
    assert rows["invoice_date.f1"][2] == ("v-regressed", "▼", "regressed")  # tiny, its third column
    assert rows["vendor_name.f1"][3] == ("v-improved", "▲", "improved")  # huge
    assert all(cell == ("v-no-clear-change", "=", "no clear change") for cell in rows["invoice_id.f1"][:2])
    assert '<table id="leaderboard-table" class="sortable">' in html


def test_the_page_is_the_same_bytes_each_time(candidates, written):
    with contextlib.chdir(candidates):
        assert run_command([*SEVERAL, "--out", "again.html"])[0] == EXIT_PASSED
    assert (candidates / "again.html").read_bytes() == written[1].read_bytes()


def test_without_prices_no_run_is_placed_and_none_recommended(project):
    code, printed = run_command(["--against", "big.json", "small.json", "tiny.json", "--out", "bare.html"])
    assert code == EXIT_PASSED
    html = (project / "bare.html").read_text(encoding="utf-8")
    assert 'id="cost-chart"' not in html and "No run could be priced" in html
    listed = html.split('<ul id="not-priced">')[1].split("</ul>")[0]
    assert [line.split(":")[0] for line in re.findall(r"<li>([^<]*)</li>", listed)] == [
        "big.json", "small.json", "tiny.json"
    ]  # fmt: skip
    assert "**Recommended: no recommendation: no run could be priced" in printed


def test_gates_apply_to_each_run_and_the_exit_code_follows_the_recommended_run(project):
    args = ["--against", "big.json", "small.json", "tiny.json", "--prices", "prices.json", "--resamples", "300"]
    code, printed = run_command([*args, "--gate", "high(delta(invoice_date.f1)) >= 0", "--out", "g.html"])
    assert code == EXIT_PASSED
    assert "### Gates: the recommended run passes every gate; runs failing a gate: tiny.json" in printed
    html = (project / "g.html").read_text(encoding="utf-8")
    assert '<table id="gates-table">' in html and 'id="gates-verdict" class="pass"' in html
    code, printed = run_command([*args, "--gate", "delta(overall) >= 0.01", "--out", "g.html"])
    assert code == EXIT_FAILED and "the recommended run FAILS a gate" in printed


def _fewer(folder: Path) -> None:
    """tiny.json without its first case: a run over another case set."""
    data = json.loads((folder / "tiny.json").read_text())
    dropped = data["cases"][0]["name"]
    for key in ("cases", "detailed_results", "scores"):
        data[key] = data[key][1:]
    data["run"]["cases"].pop(dropped)
    (folder / "fewer.json").write_text(json.dumps(data))


def _other_schema(folder: Path) -> None:
    """small.json as if scored with another schema than the baseline."""
    data = json.loads((folder / "small.json").read_text())
    data["run"]["schema_sha256"] = "a" * 64
    (folder / "other-schema.json").write_text(json.dumps(data))
    base = json.loads((folder / "big.json").read_text())
    base["run"]["schema_sha256"] = "b" * 64
    (folder / "base-schema.json").write_text(json.dumps(base))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["small.json", "tiny.json"], "2 RUNs are compared against one baseline: pass it with --against"),
        (["--against", "big.json", "small.json", "tiny.json", "--schema", SCHEMA], "--schema and --match-threshold"),
        (["small.json", "--against", "big.json", "--prices", "prices.json"], "--prices places several runs"),
        (["--against", "big.json", "small.json", "small.json"], "small.json is named twice"),
        (["--against", "big.json", "small.json", "missing.json"], "missing.json: no saved report here"),
        (["--against", "big.json", "small.json", "tiny.json", "--prices", "nowhere.json"], "--prices nowhere.json"),
        (["--against", "big.json", "small.json", "tiny.json", "--out", "tiny.json"], "is the same file as RUN tiny"),
        (["--against", "big.json", "small.json", "tiny.json"], "--out small.html"),  # the default page, a folder
        (["--against", "big.json", "small.json", "tiny.json", "--out", "x.html", "--summary", "big.json"], "--against"),
        (
            ["--against", "big.json", "small.json", "tiny.json", "--prices", "prices.json", "--out", "x.html"]
            + ["--summary", "prices.json"],
            "--summary prices.json is the same file as --prices",
        ),
        (
            ["--against", "big.json", "small.json", "fewer.json", "--out", "x.html"],
            "score every run over the same case file",
        ),
        (
            ["--against", "base-schema.json", "tiny.json", "other-schema.json", "--out", "x.html"],
            "other-schema.json were not scored by the same rules",
        ),
    ],
)
def test_bad_input_exits_2_names_the_file_and_the_fix_and_writes_nothing(project, capsys, argv, message):
    _fewer(project)
    _other_schema(project)
    (project / "small.html").mkdir(exist_ok=True)
    before = {path.name: path.stat().st_mtime_ns for path in project.iterdir()}
    try:
        assert main(argv) == EXIT_BAD_INPUT
        error = capsys.readouterr().err
        assert message in error, error
        assert {path.name: path.stat().st_mtime_ns for path in project.iterdir()} == before
    finally:
        for name in ("fewer.json", "other-schema.json", "base-schema.json"):
            (project / name).unlink()
        shutil.rmtree(project / "small.html")


@pytest.fixture(scope="module")
def browser(network_guard):
    """One headless Chromium for the module; the tests drive it on 127.0.0.1, allowed while it runs."""
    with network_guard.allowing_loopback(), Browser(chromium_or_skip()) as running:
        yield running


def test_the_page_renders_the_chart_and_the_map_with_javascript_on(browser, written):
    from matplotlib import image

    browser.open(written[1])
    assert browser.problems() == []
    assert browser.evaluate("document.querySelectorAll('#cost-chart svg g[id^=\"cost-point-\"]').length") == 5
    left, top, right, bottom = browser.evaluate(
        "(r => [r.left, r.top, r.right, r.bottom])(document.querySelector('#cost-chart svg').getBoundingClientRect())"
    )
    pixels = image.imread(io.BytesIO(browser.screenshot()), format="png")
    chart = pixels[int(top) : int(min(bottom, pixels.shape[0])), int(left) : int(right), :3]
    assert chart.size and 0.01 < (chart.min(axis=2) < 0.5).mean() < 0.5  # axes, names, points: drawn, not blank
    assert (chart.max(axis=2) - chart.min(axis=2) > 0.2).mean() > 0.0005  # the points in their verdict colours
    assert browser.evaluate("document.getElementById('recommendation').textContent").startswith(
        "Recommended: small.json:"
    )
    heads = "[...document.querySelectorAll('#change-map thead th')].map(th => th.textContent)"
    assert browser.evaluate(heads) == ["target", *EVERY]
    assert browser.evaluate("document.getElementById('not-priced').textContent").startswith("odd.json:")
    browser.evaluate("document.querySelector('#leaderboard-table th').click()")  # sortable with JavaScript on
    runs = "[...document.querySelectorAll('#leaderboard-table tbody tr')].map(r => r.cells[0].textContent)"
    assert browser.evaluate(runs) == sorted(["big.json (baseline)", *EVERY], reverse=True)
    assert browser.problems() == []


def test_the_page_reads_whole_with_javascript_off(browser, written):
    browser.call("Emulation.setScriptExecutionDisabled", value=True)
    try:
        browser.open(written[1])
        text = browser.call("Runtime.evaluate", expression="document.body.innerText", returnByValue=True)["result"][
            "value"
        ]
        svg = browser.evaluate("document.querySelectorAll('#cost-chart svg g[id^=\"cost-point-\"]').length")
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", value=False)
    assert svg == 5
    assert "Recommended: small.json: no field regressed" in text
    assert "Not priced, so not placed:" in text and "odd.json: not in the price table: odd-0" in text
    assert "▼ -0.333" in text or re.search(r"▼[-+0-9. \[\],]+\s+regressed", text)
    assert "Leaderboard" in text and "huge.json" in text
