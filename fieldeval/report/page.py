"""The HTML page: one file, no network, tables readable with JavaScript off.

Jinja2 renders the tables and the first page of documents as plain HTML; every document's costly
leaves also travel as one JSON block that `page.js` (inlined) pages and filters, so a run of
10,000 documents is a page of HTML and a compact JSON string, not 10,000 tables for the browser
to lay out.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import pandas as pd
from jinja2 import Environment, select_autoescape
from markupsafe import Markup, escape

from fieldeval.attribution.leaves import KINDS
from fieldeval.report.content import Content, overall_line, table_cells

PAGE_SIZE = 50
LEAF_COLUMNS = ("path", "kind", "expected", "got", "comparator", "score", "share", "cost")
_NUMERIC = {
    "tp",
    "fn",
    "fa",
    "fd",
    "precision",
    "recall",
    "f1",
    "total",
    "documents",
    "change",
    "score",
    "share",
    "cost",
}


def table(frame: pd.DataFrame | None, table_id: str, sortable: bool) -> Markup:
    """A table as HTML: header, escaped cells, numbers right-aligned."""
    if frame is None:
        return Markup("")
    columns, rows = table_cells(frame)
    numeric = [pd.api.types.is_numeric_dtype(frame[column]) and frame[column].dtype != bool for column in frame]
    head = "".join(f"<th>{escape(name)}</th>" for name in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(v)}</td>' if n else f"<td>{escape(v)}</td>"
            for v, n in zip(row, numeric, strict=True)
        )
        + "</tr>"
        for row in rows
    )
    kind = ' class="sortable"' if sortable else ""
    return Markup(f'<table id="{table_id}"{kind}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')


def document(doc: list[Any]) -> Markup:
    """One document's leaf diff, the same markup `page.js` builds for the other pages."""
    name, score, passed, leaves = doc
    verdict = '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'
    rows = []
    for path, _field, kind, expected, got, comparator, value, share, cost in leaves:
        css = "k-" + kind.replace(" ", "-") + (" culprit" if share else "")
        rows.append(
            f'<tr class="{css}"><td class="path">{escape(path)}</td><td>{escape(kind)}</td>'
            f'<td class="expected">{escape(expected)}</td><td class="got">{escape(got)}</td>'
            f'<td>{escape(comparator)}</td><td class="num">{escape(value)}</td>'
            f'<td class="num">{escape(share)}</td><td class="num">{escape(cost)}</td></tr>'
        )
    head = "".join(f"<th>{name}</th>" for name in LEAF_COLUMNS)
    return Markup(
        f'<section class="doc"><h3>{escape(name)} <span>score {score:.3f} </span>{verdict}</h3>'
        f'<table class="leaves"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></section>'
    )


def _json(value: Any) -> Markup:
    """JSON safe inside a <script> element: no `<` can close it."""
    return Markup(json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"))


def render(content: Content, page_size: int = PAGE_SIZE) -> str:
    """The whole page as one string."""
    environment = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    template = environment.from_string(files("fieldeval.report").joinpath("template.html.j2").read_text("utf-8"))
    documents = content.documents
    fields = sorted({leaf[1] for doc in documents for leaf in doc[3]})
    note = content.new.note
    return template.render(
        title=content.title,
        run_line=overall_line(content),
        provenance=content.provenance,
        old_name=content.old.path.name if content.old else None,
        table=table,
        document=document,
        fields=content.field_table,
        overall=content.overall_table,
        delta=content.delta_table,
        chart_svg=Markup(content.chart_svg) if content.chart_svg else None,
        gates=content.gates_table,
        gates_passed=0 if content.gates_table is None else len(content.gates_table) - content.gates_failed,
        gates_failed=content.gates_failed,
        gates_note=content.gates_note,
        failures=content.failures_table
        if content.failures_table is not None and not content.failures_table.empty
        else None,
        failures_note=note or "No failures: every leaf matched.",
        failures_delta=content.failures_delta
        if content.failures_delta is not None and not content.failures_delta.empty
        else None,
        repairs=content.repairs if content.repairs is not None and not content.repairs.empty else None,
        old_note=content.old_note,
        documents_note=note,
        total_documents=len(documents),
        perfect=content.perfect,
        field_names=fields,
        kinds=KINDS,
        first_page=documents[:page_size],
        document_json=_json({"page_size": page_size, "columns": LEAF_COLUMNS, "documents": documents}),
        script=Markup(files("fieldeval.report").joinpath("page.js").read_text("utf-8")),
    )
