"""The HTML page of several runs: one file, no network, everything readable with JavaScript off.

The chart is inline SVG, the map of changes and the leaderboard plain HTML tables; the page's
script (`page.js`, inlined, as on the one-run page) only makes the leaderboard sortable. A verdict
in the map is a colour, a symbol and a word, so a reader who cannot tell the colours apart, or a
printout in grey, reads it all the same.
"""

from __future__ import annotations

from importlib.resources import files

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from fieldeval.report.board import SYMBOLS, Board
from fieldeval.report.page import table


def render(board: Board) -> str:
    """The whole page as one string."""
    environment = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    template = environment.from_string(files("fieldeval.report").joinpath("board.html.j2").read_text("utf-8"))
    return template.render(
        board=board,
        table=table,
        symbols=SYMBOLS,
        chart_svg=Markup(board.chart_svg) if board.chart_svg else None,
        script=Markup(files("fieldeval.report").joinpath("page.js").read_text("utf-8")),
    )
