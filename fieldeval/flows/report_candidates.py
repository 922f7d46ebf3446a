"""What `report --against BASELINE RUN RUN ...` does with two or more RUNs: one page of the leaderboard.

    asked, gates = check(request)           # 1. the options one page of several runs takes, every run, the outputs
    chosen = choose(asked, gates)           # 2. the leaderboard, exactly as `compare` builds it for these runs
    content = build(request, chosen)        # 3. quality against cost, the map of changes, the table, the line
    reported = write(request, content)      # 4. the page and the summary, together or neither

The numbers are the leaderboard's (`fieldeval.flows.candidates.choose`, the function `compare` calls
with several candidates), so the page, the summary and what `compare` prints for the same runs,
resamples and seed agree to the last digit. The page shows no document's leaf diff: it is about
choosing among runs, and each run's own page is `report RUN --against BASELINE`. Refusals are
`Refused` (step 1) or the readers' own errors (runs over other cases, scored by other rules), as
in `fieldeval.flows.report`; nothing is written before step 4.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fieldeval.flows import Refused
from fieldeval.flows.report import Reported, ReportRequest
from fieldeval.outputs import OutputError, check_outputs

if TYPE_CHECKING:
    from fieldeval.compare.gates import Gate
    from fieldeval.flows.candidates import Chosen
    from fieldeval.flows.compare import CompareRequest


def report_runs(request: ReportRequest) -> Reported:
    """The recipe: check, choose, build, write."""
    asked, gates = check(request)
    return write(request, build(request, choose(asked, gates)))


# 1. Check ------------------------------------------------------------------------------------------


def check(request: ReportRequest) -> tuple[CompareRequest, list[Gate]]:
    """Refuse what one page of several runs cannot show, then make `compare`'s own checks of the runs and outputs."""
    from fieldeval.flows import candidates
    from fieldeval.flows.compare import CompareRequest

    if request.against is None:
        raise Refused(
            f"{len(request.more) + 1} RUNs are compared against one baseline: pass it with --against BASELINE.json "
            "(or report one run at a time)"
        )
    if request.schema is not None or request.match_threshold is not None:
        raise Refused(
            "--schema and --match-threshold compute one run's leaf diffs, and the page of several runs shows none: "
            "drop them, and report that run on its own (report RUN --against BASELINE --schema module:Class)"
        )
    asked = CompareRequest(
        old=request.against,
        new=request.run,
        more=tuple(request.more),
        gate=tuple(request.gate),
        resamples=request.resamples,
        seed=request.seed,
        prices=request.prices,
        allow_scoring_change=request.allow_scoring_change,
    )
    gates = candidates.check(asked)  # rules, every run found, none named twice
    if request.prices is not None and not request.prices.is_file():
        raise Refused(f"--prices {request.prices}: no such file; pass a JSON price table by model id")
    outputs = {"--out": request.page()} | ({"--summary": request.summary} if request.summary is not None else {})
    inputs: dict[str, Path | None] = {"--against": request.against, "--prices": request.prices}
    inputs.update({f"RUN {path}": path for path in candidates.runs(asked)[1:]})
    try:  # no link, device or folder, and no input overwritten
        check_outputs(outputs, inputs)
    except OutputError as exc:
        raise Refused(str(exc)) from exc
    return asked, gates


# 2. Choose -----------------------------------------------------------------------------------------


def choose(asked: CompareRequest, gates: list[Gate]) -> Chosen:
    """The leaderboard and each run's gate results, built by the code `compare` runs for several candidates."""
    from fieldeval.flows import candidates

    return candidates.choose(asked, gates)


# 3. Build ------------------------------------------------------------------------------------------


def build(request: ReportRequest, chosen: Chosen) -> Any:
    """The page's content (`fieldeval.report.board.Board`)."""
    from fieldeval.render import extra_missing

    try:
        from fieldeval.report.board import build as build_board
    except ImportError as exc:  # the chart and the template are the report extra, as on the one-run page
        raise extra_missing(exc, "report", "the report page's chart and template") from exc
    return build_board(chosen)


# 4. Write ------------------------------------------------------------------------------------------


def write(request: ReportRequest, content: Any) -> Reported:
    """Render the page and the summary, then write both in one step (both appear, or neither does)."""
    from fieldeval.files import one_step, write_text_atomically
    from fieldeval.report.board_page import render
    from fieldeval.report.summary import board_summary

    page = request.page()
    text = board_summary(content, page.name)
    html = render(content)
    with one_step():
        write_text_atomically(page, html)
        if request.summary is not None:
            write_text_atomically(request.summary, text)
    return Reported(page, text, not content.passed)
